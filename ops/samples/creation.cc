// Samples of the creation family: arange, linspace, eye (their out= forms: the frontend
// computes the length and allocates `out`; Note [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  std::vector<OpSample> samples = {
      {"loom::arange.start_out", {I(0), I(5)}, {{"out", T({5}, kI64, Fill::Zeros)}}},
      {"loom::arange.start_out", {D(0.5), D(3.0), D(0.5)}, {{"out", T({5}, kF32, Fill::Zeros)}}},
      OpSample{"loom::arange.start_out", {I(10), I(0), I(-3)}, {{"out", T({4}, kI64, Fill::Zeros)}}}
          .with_note("negative step"),
      {"loom::arange.start_out", {I(-2), I(2)}, {{"out", T({4}, kF64, Fill::Zeros)}}},
      {"loom::linspace.out", {D(0.0), D(1.0), I(5)}, {{"out", T({5}, kF32, Fill::Zeros)}}},
      {"loom::linspace.out", {I(-1), I(1), I(4)}, {{"out", T({4}, kF64, Fill::Zeros)}}},
      {"loom::linspace.out", {I(0), I(10), I(6)}, {{"out", T({6}, kI64, Fill::Zeros)}}},
      {"loom::linspace.out", {D(2.0), D(2.0), I(1)}, {{"out", T({1}, kF32, Fill::Zeros)}}},
      {"loom::eye.m_out", {I(3), I(4)}, {{"out", T({3, 4}, kF32, Fill::Zeros)}}},
      {"loom::eye.m_out", {I(2), I(2)}, {{"out", T({2, 2}, kI64, Fill::Zeros)}}},
      {"loom::eye.m_out", {I(3), I(1)}, {{"out", T({3, 1}, kBool, Fill::Zeros)}}},
      // Factories as ops: the device argument picks the backend.
      {"loom::full", {L({2, 3}), D(1.5)}, {{"device", SampleDevice{}}}},
      {"loom::full", {L({4}), I(7)}, {{"device", SampleDevice{}}}},
      {"loom::full", {L({2, 2}), B(true)}, {{"dtype", kF64}, {"device", SampleDevice{}}}},
      OpSample{"loom::full", {L({2}), I(1)}, {{"layout", I(1)}}}.raises(
          "expected layout None or torch.strided"),
      {"loom::full_like", {T({2, 3}), D(-2.0)}},
      {"loom::full_like", {T({3}, kI64), I(4)}, {{"dtype", kF32}, {"memory_format", I(1)}}},
      {"loom::scalar_tensor", {D(2.5)}, {{"device", SampleDevice{}}}},
      {"loom::scalar_tensor", {I(3)}, {{"dtype", kI64}, {"device", SampleDevice{}}}},
      // Uninitialised results: empty shapes, so only shape, dtype and device are compared.
      {"loom::empty.memory_format", {L({2, 0})}, {{"dtype", kI64}, {"device", SampleDevice{}}}},
      {"loom::empty_strided", {L({0, 3}), L({1, 2})}, {{"device", SampleDevice{}}}},
      OpSample{"loom::empty_strided", {L({2, 3}), L({1})}}.raises(
          "expected as many strides as sizes"),
      {"loom::arange.start_step", {I(0), I(10), I(3)}, {{"device", SampleDevice{}}}},
      {"loom::arange.start_step", {D(-1.0), D(1.0), D(0.25)}, {{"device", SampleDevice{}}}},
  };
  return samples;
}

}  // namespace

std::span<const OpSample> creation_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
