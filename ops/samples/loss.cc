// Samples of the loss family: nll_loss, cross_entropy_loss, mse_loss,
// binary_cross_entropy_with_logits; reduction 0 none, 1 mean, 2 sum (Note [Op samples] in
// loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  std::vector<OpSample> s = {
      {"loom::nll_loss", {T({3, 5}), Idx({3}, 5)}},
      {"loom::nll_loss", {T({3, 5}, kF64), Idx({3}, 5), T({5}, kF64, Fill::Positive), I(0)}},
      {"loom::nll_loss", {T({3, 5}), Idx({3}, 5)}, {{"reduction", I(2)}, {"ignore_index", I(1)}}},
      OpSample{"loom::nll_loss", {T({2, 3, 4}), Idx({2, 4}, 3)}}.with_note("class dim 1, spatial"),
      {"loom::nll_loss", {T({4}), Idx({}, 4)}},
      {"loom::cross_entropy_loss", {T({3, 5}), Idx({3}, 5)}},
      {"loom::cross_entropy_loss",
       {T({3, 5}, kF64), Idx({3}, 5), T({5}, kF64, Fill::Positive), I(2)}},
      {"loom::cross_entropy_loss",
       {T({3, 5}), Idx({3}, 5)},
       {{"reduction", I(0)}, {"ignore_index", I(0)}, {"label_smoothing", D(0.1)}}},
      OpSample{"loom::cross_entropy_loss", {T({3, 4}), T({3, 4}, kF32, Fill::Unit)}}.with_note(
          "class probabilities as target"),
      {"loom::cross_entropy_loss", {T({2, 3, 4}), Idx({2, 4}, 3)}},
      {"loom::mse_loss", {T({2, 3}), T({2, 3})}},
      {"loom::mse_loss", {T({2, 3}, kF64), T({2, 3}, kF64), I(0)}},
      {"loom::mse_loss", {T({4}), T({4})}, {{"reduction", I(2)}}},
      {"loom::mse_loss", {T({}), T({})}},
      {"loom::l1_loss", {T({2, 3}), T({2, 3})}},
      {"loom::l1_loss", {T({2, 3}, kF64), T({3}, kF64), I(0)}},
      {"loom::l1_loss", {T({4}), T({4})}, {{"reduction", I(2)}}},
      {"loom::smooth_l1_loss", {T({2, 3}), T({2, 3})}},
      {"loom::smooth_l1_loss", {T({2, 3}, kF64), T({2, 3}, kF64), I(0), D(0.5)}},
      OpSample{"loom::smooth_l1_loss", {T({4}), T({4})}, {{"beta", D(0.0)}}}.with_note(
          "beta 0: the L1 loss"),
      {"loom::huber_loss", {T({2, 3}), T({2, 3})}},
      {"loom::huber_loss", {T({2, 3}, kF64), T({2, 3}, kF64), I(2), D(0.5)}},
      {"loom::huber_loss", {T({}), T({})}, {{"delta", D(2.0)}}},
      {"loom::kl_div", {T({2, 3}), T({2, 3}, kF32, Fill::Unit)}},
      {"loom::kl_div", {T({2, 3}, kF64), T({2, 3}, kF64), I(0)}, {{"log_target", B(true)}}},
      {"loom::kl_div", {T({4}), T({4}, kF32, Fill::Unit), I(2)}},
      {"loom::binary_cross_entropy_with_logits", {T({2, 3}), T({2, 3}, kF32, Fill::Unit)}},
      {"loom::binary_cross_entropy_with_logits",
       {T({2, 3}, kF64), T({2, 3}, kF64, Fill::Unit), T({3}, kF64, Fill::Positive),
        T({3}, kF64, Fill::Positive), I(0)}},
      {"loom::binary_cross_entropy_with_logits",
       {T({4}), T({4}, kF32, Fill::Unit)},
       {{"pos_weight", T({4}, kF32, Fill::Positive)}, {"reduction", I(2)}}},
      {"loom::binary_cross_entropy_with_logits", {T({}), T({}, kF32, Fill::Unit)}},
  };
  return s;
}

}  // namespace

std::span<const OpSample> loss_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
