// Samples of the softmax family: softmax, log_softmax, _softmax, _log_softmax and their
// backward ops (Note [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  std::vector<OpSample> s;
  for (const char* op : {"loom::softmax.int", "loom::log_softmax.int"}) {
    s.push_back({op, {T({2, 3, 4}), I(1)}});
    s.push_back({op, {T({3, 5}, kF64), I(-1)}});
    s.push_back({op, {T({3, 4}), I(0), kF64}});
    s.push_back({op, {T({4, 3}), I(1)}, {{"dtype", kF32}}});
    s.push_back({op, {T({}), I(0)}});
    s.push_back({op, {T({0, 4}), I(1)}});
    s.push_back(OpSample{op, {T({2, 8}, kBF16), I(1)}}.tol(2e-2));
  }
  for (const char* op : {"loom::softmax.int", "loom::log_softmax.int"}) {
    s.push_back({op, {T({64, 515}), I(1)}});  // vectorised rows with a tail, threaded
  }
  s.push_back(OpSample{"loom::softmax.int", {T({2, 3}), I(2)}}.raises("dim 2 is out of range"));
  for (const char* op : {"loom::_softmax", "loom::_log_softmax"}) {
    s.push_back({op, {T({2, 3, 4}), I(1), B(false)}});
    s.push_back({op, {T({3, 5}, kF64), I(-1), B(false)}});
    s.push_back(OpSample{op, {T({2, 8}, kF16), I(1), B(true)}}.tol(2e-3));  // float32 result
    s.push_back(OpSample{op, {T({2, 3}), I(1), B(true)}}.raises("expects a float16 input"));
  }
  for (const char* op : {"loom::_softmax_backward_data", "loom::_log_softmax_backward_data"}) {
    s.push_back({op, {T({2, 3, 4}), T({2, 3, 4}, kF32, Fill::Positive), I(1), kF32}});
    s.push_back({op, {T({3, 5}, kF64), T({3, 5}, kF64, Fill::Positive), I(-1), kF64}});
    s.push_back(OpSample{op, {T({2, 8}), T({2, 8}, kF32, Fill::Positive), I(0), kF16}}.tol(2e-3));
    s.push_back(OpSample{op, {T({2, 3}), T({3, 2}), I(1), kF32}}.raises("of the output's shape"));
  }
  return s;
}

}  // namespace

std::span<const OpSample> softmax_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
