// Samples of the softmax family: softmax, log_softmax (Note [Op samples] in
// loom/ops/samples.h).
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
  return s;
}

}  // namespace

std::span<const OpSample> softmax_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
