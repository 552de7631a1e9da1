// Samples of the copy family: copy_, fill_, clone, contiguous, to.dtype, to.device
// (Note [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {

using namespace sample_helpers;

std::span<const OpSample> copy_samples() {
  static const std::vector<OpSample> samples = {
      {"loom::fill_.Scalar", {T({2, 3}, kF32, Fill::Zeros), D(1.5)}},
      {"loom::fill_.Scalar", {T({}, kI64, Fill::Zeros), I(-3)}},
      {"loom::fill_.Scalar", {T({4}, kBool, Fill::Zeros), B(true)}},
      {"loom::fill_.Scalar", {T({2, 2}, kF16, Fill::Zeros), D(0.25)}},
      {"loom::copy_", {T({2, 3}, kF32, Fill::Zeros), T({2, 3}, kF64)}},
      OpSample{"loom::copy_", {T({2, 3}, kF32, Fill::Zeros), T({3}, kI64)}}.with_note(
          "broadcast src, int64 to float32"),
      {"loom::copy_", {T({}, kI32, Fill::Zeros), T({}, kF32, Fill::SmallInt)}},
      {"loom::copy_", {T({3, 2}, kBF16, Fill::Zeros), T({3, 2}, kBool, Fill::Bool)}},
      {"loom::copy_", {T({4}, kF64, Fill::Zeros), T({4}, kF16)}, {{"non_blocking", B(false)}}},
      {"loom::clone", {T({2, 3})}},
      {"loom::clone", {T({}, kI64)}},
      {"loom::clone", {T({3, 1, 2}, kBool, Fill::Bool)}},
      {"loom::contiguous", {T({3, 4})}},
      {"loom::contiguous", {T({}, kI32)}},
      {"loom::to.dtype", {T({2, 3}), kF64}},
      {"loom::to.dtype", {T({2, 3}, kF32, Fill::SmallInt), kI32}, {{"copy", B(true)}}},
      {"loom::to.dtype", {T({}, kI64), kF16}},
      OpSample{"loom::to.dtype", {T({2, 2}, kF32), kF32}}.with_note(
          "same dtype: returns self (a view)"),
      {"loom::to.dtype", {T({5}, kF32, Fill::SmallInt), kBool}},
      {"loom::to.device", {T({2, 3}), SampleDevice{}}},
      {"loom::to.device", {T({2, 3}), SampleDevice{}}, {{"dtype", kF64}, {"copy", B(true)}}},
      {"loom::to.device", {T({}, kI64), SampleDevice{}}, {{"dtype", kF32}}},
      // The functional forms (Core ATen IR).
      {"loom::fill.Scalar", {T({2, 3}), D(1.5)}},
      {"loom::fill.Scalar", {T({4}, kI64), I(-3)}},
      {"loom::copy", {T({2, 3}), T({3}, kF64)}},
      {"loom::copy", {T({2, 2}, kI64), T({2, 2})}, {{"non_blocking", B(false)}}},
      {"loom::_to_copy", {T({2, 3})}, {{"dtype", kF64}}},
      {"loom::_to_copy", {T({3, 2}, kI64)}, {{"dtype", kF32}, {"memory_format", I(1)}}},
      {"loom::_to_copy", {T({2, 2})}, {{"device", SampleDevice{}}, {"layout", I(7)}}},
      OpSample{"loom::_to_copy", {T({2})}, {{"layout", I(1)}}}.raises(
          "expected layout None or torch.strided"),
      OpSample{"loom::_local_scalar_dense", {T({})}}.no_meta("reads the element's value"),
      OpSample{"loom::_local_scalar_dense", {T({1}, kI64)}}.no_meta("reads the element's value"),
      OpSample{"loom::_local_scalar_dense", {T({2})}}.raises("expected a tensor of one element"),
      // Quantized copies (Note [Quantized samples]); the strided check copies views.
      OpSample{"loom::clone", {Q({2, 3})}}.against({}),
      OpSample{"loom::clone", {QC({3, 4}, 0)}}.against({}),
      OpSample{"loom::contiguous", {Q({3, 4}, kQI8)}}.against({}),
  };
  return samples;
}

}  // namespace loom::ops
