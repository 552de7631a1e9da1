// Samples of the foreach family (Note [Foreach ops] in ops/decompositions/foreach.cc):
// lists of tensors of different shapes, a 0-dim one among them, float32 and float64, one
// reduced-precision list, per-tensor scalars, and the lists' length errors.
#include <limits>

#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

// Three tensors of different shapes (a 0-dim one among them).
SampleArg list(ScalarType dtype = kF32, Fill fill = Fill::Normal) {
  return TL({T({2, 3}, dtype, fill), T({4}, dtype, fill), T({}, dtype, fill)});
}

std::vector<OpSample> make() {
  std::vector<OpSample> s = {
      {"loom::_foreach_add.List", {list(), list()}},
      {"loom::_foreach_add.List", {list(kF64), list(kF64)}, {{"alpha", D(-0.5)}}},
      OpSample{"loom::_foreach_add.List", {list(), TL({T({2, 3})})}}.raises(
          "expected other to have self's length 3, found 1"),
      {"loom::_foreach_add_.Scalar", {list(), D(1.5)}},
      {"loom::_foreach_add_.Scalar", {list(kF64), I(2)}},
      OpSample{"loom::_foreach_add_.Scalar", {TL({}), D(1.0)}}.raises(
          "expected a non-empty tensor list for self"),
      {"loom::_foreach_add_.List", {list(), list()}, {{"alpha", D(0.25)}}},
      OpSample{"loom::_foreach_add_.List", {list(kBF16), list(kBF16)}}.tol(2e-2),
      {"loom::_foreach_mul.List", {list(), list()}},
      {"loom::_foreach_mul.List", {list(kF64), list(kF64)}},
      OpSample{"loom::_foreach_mul.List", {list(), TL({T({2, 3})})}}.raises(
          "expected other to have self's length 3, found 1"),
      {"loom::_foreach_mul_.Scalar", {list(), D(0.9)}},
      {"loom::_foreach_mul_.ScalarList", {list(), DL({2.0, 0.5, -4.0})}},
      {"loom::_foreach_mul_.ScalarList", {list(kF64), DL({-1e-3, 3.0, 0.0})}},
      OpSample{"loom::_foreach_mul_.ScalarList", {list(), DL({2.0, 1.0})}}.raises(
          "expected scalars to have self's length 3, found 2"),
      {"loom::_foreach_mul_.List", {list(), list()}},
      OpSample{"loom::_foreach_mul_.List", {list(kBF16), list(kBF16)}}.tol(2e-2),
      {"loom::_foreach_mul_.Scalar", {list(kF64), D(-3.0)}},
      {"loom::_foreach_div_.ScalarList", {list(), DL({2.0, 0.5, -4.0})}},
      OpSample{"loom::_foreach_div_.ScalarList", {list(), DL({2.0})}}.raises(
          "expected scalars to have self's length 3, found 1"),
      {"loom::_foreach_maximum_.List", {list(), list()}},
      {"loom::_foreach_maximum_.List", {list(kF32, Fill::Special), list()}},
      {"loom::_foreach_clamp_min.Scalar", {list(), D(0.25)}},
      {"loom::_foreach_clamp_min.Scalar", {list(kF32, Fill::Special), D(-0.5)}},
      {"loom::_foreach_clamp_min.Scalar", {list(kF64), I(0)}},
      {"loom::_foreach_sqrt", {list(kF32, Fill::Positive)}},
      {"loom::_foreach_sqrt", {list(kF64, Fill::Positive)}},
      OpSample{"loom::_foreach_sqrt", {list(kF16, Fill::Positive)}}.tol(1e-2),
      {"loom::_foreach_rsqrt_", {list(kF32, Fill::Positive)}},
      {"loom::_foreach_rsqrt_", {list(kF64, Fill::Positive)}},
      {"loom::_foreach_lerp_.Scalar", {list(), list(), D(0.1)}},
      {"loom::_foreach_lerp_.ScalarList", {list(), list(), DL({0.1, 0.9, 1.0})}},
      {"loom::_foreach_lerp_.ScalarList", {list(kF64), list(kF64), DL({0.0, 0.5, 0.75})}},
      OpSample{"loom::_foreach_lerp_.ScalarList", {list(), list(), DL({0.1})}}.raises(
          "expected weight to have self's length 3, found 1"),
      {"loom::_foreach_lerp_.Scalar", {list(kF64), list(kF64), D(0.75)}},
      {"loom::_foreach_addcmul.Scalar", {list(), list(), list()}, {{"value", D(0.5)}}},
      {"loom::_foreach_addcmul_.Scalar", {list(), list(), list()}},
      {"loom::_foreach_addcmul_.Scalar",
       {list(kF64), list(kF64), list(kF64)},
       {{"value", D(-2.0)}}},
      {"loom::_foreach_addcdiv_.Scalar", {list(), list(), list(kF32, Fill::Positive)}},
      {"loom::_foreach_addcdiv_.Scalar",
       {list(kF64), list(kF64), list(kF64, Fill::Positive)},
       {{"value", D(0.3)}}},
      {"loom::_foreach_addcdiv_.ScalarList",
       {list(), list(), list(kF32, Fill::Positive), DL({-0.1, 0.2, 1.0})}},
      OpSample{"loom::_foreach_addcdiv_.ScalarList",
               {list(), list(), TL({T({2, 3}), T({4})}), DL({1.0, 1.0, 1.0})}}
          .raises("expected tensor2 to have self's length 3, found 2"),
      {"loom::_foreach_norm.Scalar", {list()}},
      {"loom::_foreach_norm.Scalar", {list(kF64)}, {{"ord", D(1.0)}}},
      {"loom::_foreach_norm.Scalar",
       {list()},
       {{"ord", D(std::numeric_limits<double>::infinity())}}},
      OpSample{"loom::_foreach_norm.Scalar", {TL({})}}.raises(
          "expected a non-empty tensor list for self"),
  };
  return s;
}

}  // namespace

std::span<const OpSample> foreach_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
