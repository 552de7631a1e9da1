// Samples of the foreach family (Note [Foreach ops] in ops/decompositions/foreach.cc):
// lists of tensors of different shapes, a 0-dim one among them, float32 and float64, one
// reduced-precision list, per-tensor scalars, and the lists' length errors; the fused Adam
// updates.
#include <limits>

#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

// Three tensors of different shapes (a 0-dim one among them).
SampleArg list(ScalarType dtype = kF32, Fill fill = Fill::Normal) {
  return TL({T({2, 3}, dtype, fill), T({4}, dtype, fill), T({}, dtype, fill)});
}

// One step count per tensor of list(): integers in [1, 5].
SampleArg steps(ScalarType dtype = kI64) {
  return TL(
      {T({}, dtype, Fill::Positive), T({}, dtype, Fill::Positive), T({}, dtype, Fill::Positive)});
}

// Adam's hyperparameters as keywords, with `changes` over the defaults.
SampleKwargs adam_options(SampleKwargs changes = {}) {
  SampleKwargs kwargs = {{"lr", D(0.01)},          {"beta1", D(0.9)}, {"beta2", D(0.999)},
                         {"weight_decay", D(0.0)}, {"eps", D(1e-8)},  {"amsgrad", B(false)},
                         {"maximize", B(false)}};
  for (auto& [name, value] : changes) {
    for (auto& [key, old] : kwargs) {
      if (key == name) old = value;
    }
    bool known = false;
    for (const auto& entry : kwargs) known = known || entry.first == name;
    if (!known) kwargs.emplace_back(name, value);
  }
  return kwargs;
}

// Note [Fused Adam]: plain, AdamW with weight decay, AMSGrad, maximize, float64 steps on
// the parameters' dtype, loss scaling, and the refusals of the argument check.
std::vector<OpSample> fused_adam_samples() {
  const SampleArg none = TL({});
  const SampleArg positive = list(kF32, Fill::Positive);
  const SampleArg one_element_zero = T({1}, kF32, Fill::Zeros);
  return {
      {"loom::_fused_adam_", {list(), list(), list(), positive, none, steps()}, adam_options()},
      {"loom::_fused_adam_",
       {list(), list(), list(), positive, positive, steps()},
       adam_options({{"weight_decay", D(0.1)}, {"amsgrad", B(true)}, {"maximize", B(true)}})},
      {"loom::_fused_adamw_",
       {list(kF64), list(kF64), list(kF64), list(kF64, Fill::Positive), none, steps(kF64)},
       adam_options({{"weight_decay", D(0.01)}})},
      OpSample{"loom::_fused_adamw_",
               {list(), list(), list(), positive, none, steps(kF32)},
               adam_options(
                   {{"grad_scale", T({}, kF32, Fill::Positive)}, {"found_inf", one_element_zero}})}
          .with_note("loss scaling: gradients divided by grad_scale, found_inf clear"),
      OpSample{"loom::_fused_adam_",
               {list(), TL({T({2, 3})}), list(), positive, none, steps()},
               adam_options()}
          .raises("expected grads to have self's length 3, found 1"),
      OpSample{"loom::_fused_adam_",
               {list(), list(), list(), positive, none, steps()},
               adam_options({{"amsgrad", B(true)}})}
          .raises("expected max_exp_avg_sqs to have self's length 3, found 0"),
      OpSample{"loom::_fused_adam_",
               {list(), list(), list(), positive, none, steps()},
               adam_options({{"beta1", D(1.0)}})}
          .raises("expected betas in [0, 1), found (1, 0.999)"),
      OpSample{"loom::_fused_adam_",
               {list(), list(kF64), list(), positive, none, steps()},
               adam_options()}
          .raises("expected grads[0] like self[0]"),
  };
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
  for (OpSample& sample : fused_adam_samples()) s.push_back(std::move(sample));
  return s;
}

}  // namespace

std::span<const OpSample> foreach_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
