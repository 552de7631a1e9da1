// Decompositions of the losses but nll_loss: cross_entropy_loss, mse_loss, l1_loss,
// smooth_l1_loss, huber_loss, kl_div, binary_cross_entropy_with_logits.
#include <algorithm>
#include <cstdint>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// A 0-dim int64 CPU tensor flagged as a wrapped number.
Tensor wrapped_integer(int64_t value) {
  Tensor t = empty({}, ScalarType::Int64, Device{kCPU, -1});
  *static_cast<int64_t*>(t.data_ptr()) = value;
  t.impl()->set_wrapped_number(true);
  return t;
}

// The losses' reduction (PyTorch's enum: 0 none, 1 mean, 2 sum).
void check_reduction(int64_t reduction, const char* op) {
  if (reduction < 0 || reduction > 2) {
    fail(op, "reduction ", reduction, " is not one of 0 (none), 1 (mean), 2 (sum)");
  }
}

Tensor reduce_loss(const Tensor& loss, int64_t reduction) {
  if (reduction == 1) return loom::mean(loss);
  if (reduction == 2) return loom::sum(loss);
  return loss;
}

// Note [cross_entropy_loss]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// log_softmax over the class dim (1, or 0 for a 1-D input) then nll_loss for class-index
// targets; for class-probability targets (a floating target shaped like the input) the
// loss is -sum_c weight_c * target_c * logp_c, and `mean` averages over the samples.
// Label smoothing mixes (1 - s) * nll with s / C times the smoothing term
// -sum_c weight_c * logp_c (zero at ignored targets); its `mean` divides by the same
// total weight as nll_loss's, computed as nll_loss(-1, target, weight, sum).
Tensor cross_entropy_loss(const Tensor& self, const Tensor& target,
                          const std::optional<Tensor>& weight, int64_t reduction,
                          int64_t ignore_index, double label_smoothing) {
  const char* op = "loom::cross_entropy_loss";
  check_reduction(reduction, op);
  if (self.dim() < 1) fail(op, "expected an input of at least 1 dim, found 0 dims");
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    fail(op, "expected label_smoothing in [0, 1], found ", label_smoothing);
  }
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const int64_t classes = self.size(class_dim);
  if (weight && (weight->dim() != 1 || weight->numel() != classes)) {
    fail(op, "expected a weight of shape [", classes, "] (one per class), found ",
         shape_to_string(weight->sizes()));
  }
  Tensor logp = loom::log_softmax(self, class_dim);
  auto class_weighted = [&](const Tensor& t) {
    if (!weight) return t;
    return loom::mul(t, self.dim() == 1 ? *weight : channel_view(*weight, self.dim()));
  };
  const double smoothing_share = label_smoothing / static_cast<double>(classes);

  if (is_floating_point(target.dtype())) {
    if (!std::ranges::equal(target.sizes(), self.sizes())) {
      fail(op, "expected class probabilities of the input's shape ", shape_to_string(self.sizes()),
           ", found ", shape_to_string(target.sizes()));
    }
    if (ignore_index >= 0) {  // PyTorch's check: only the default (negative) is allowed
      fail(op, "expected no ignore_index with class probabilities, found ", ignore_index);
    }
    Tensor probs = target;
    if (label_smoothing > 0) {
      probs = loom::add(loom::mul(target, wrapped_number(1.0 - label_smoothing)),
                        wrapped_number(smoothing_share));
    }
    Tensor loss = loom::neg(loom::sum(class_weighted(loom::mul(logp, probs)), {class_dim}));
    return reduce_loss(loss, reduction);
  }

  Tensor nll = loom::nll_loss(logp, target, weight, reduction, ignore_index);
  if (label_smoothing == 0) return nll;
  Tensor smooth = loom::neg(loom::sum(class_weighted(logp), {class_dim}));
  Tensor kept = cast(loom::ne(target, wrapped_integer(ignore_index)), smooth.dtype());
  smooth = loom::mul(smooth, kept);
  if (reduction == 1) {
    Tensor minus_one = empty(logp.sizes(), logp.dtype(), logp.device());
    loom::fill_(minus_one, Scalar(-1.0));
    Tensor total_weight = loom::nll_loss(minus_one, target, weight, 2, ignore_index);
    smooth = loom::div(loom::sum(smooth), total_weight);
  } else if (reduction == 2) {
    smooth = loom::sum(smooth);
  }
  return loom::add(loom::mul(nll, wrapped_number(1.0 - label_smoothing)),
                   loom::mul(smooth, wrapped_number(smoothing_share)));
}

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_reduction(reduction, "loom::mse_loss");
  Tensor diff = loom::sub(self, target);
  return reduce_loss(loom::mul(diff, diff), reduction);
}

Tensor l1_loss_decomposition(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_reduction(reduction, "loom::l1_loss");
  return reduce_loss(loom::abs(loom::sub(self, target)), reduction);
}

// |d| < beta: 0.5 d^2 / beta, else |d| - 0.5 beta; beta 0 is the L1 loss.
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  constexpr const char* op = "loom::smooth_l1_loss";
  check_reduction(reduction, op);
  if (beta < 0) fail(op, "expected a non-negative beta, found ", beta);
  if (beta == 0) return l1_loss_decomposition(self, target, reduction);
  Tensor d = loom::abs(loom::sub(self, target));
  Tensor quadratic = loom::mul(loom::mul(d, d), wrapped_number(0.5 / beta));
  Tensor linear = loom::sub(d, wrapped_number(0.5 * beta));
  return reduce_loss(loom::where(loom::lt(d, wrapped_number(beta)), quadratic, linear), reduction);
}

// |d| < delta: 0.5 d^2, else delta (|d| - 0.5 delta).
Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  constexpr const char* op = "loom::huber_loss";
  check_reduction(reduction, op);
  if (!(delta > 0)) fail(op, "expected a positive delta, found ", delta);
  Tensor d = loom::abs(loom::sub(self, target));
  Tensor quadratic = loom::mul(loom::mul(d, d), wrapped_number(0.5));
  Tensor linear = loom::mul(loom::sub(d, wrapped_number(0.5 * delta)), wrapped_number(delta));
  return reduce_loss(loom::where(loom::lt(d, wrapped_number(delta)), quadratic, linear), reduction);
}

// Pointwise target * (log target - self) with 0 where target is 0 (xlogy), or with a log
// target exp(t) * (t - self); 'mean' averages over every element, as PyTorch's does.
Tensor kl_div(const Tensor& self, const Tensor& target, int64_t reduction, bool log_target) {
  check_reduction(reduction, "loom::kl_div");
  Tensor loss;
  if (log_target) {
    loss = loom::mul(loom::exp(target), loom::sub(target, self));
  } else {
    Tensor zero = wrapped_number(0.0);
    Tensor t_log_t =
        loom::where(loom::eq(target, zero), zero, loom::mul(target, loom::log(target)));
    loss = loom::sub(t_log_t, loom::mul(target, self));
  }
  return reduce_loss(loss, reduction);
}

// (1 - t) * x + w_pos * log(1 + exp(-x)), with log(1 + exp(-x)) computed as
// relu(-x) + log1p(exp(-|x|)) (no overflow for large |x|) and w_pos = 1 + (pos_weight - 1) * t.
Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight,
                                        int64_t reduction) {
  const char* op = "loom::binary_cross_entropy_with_logits";
  check_reduction(reduction, op);
  if (!std::ranges::equal(target.sizes(), self.sizes())) {
    fail(op, "expected a target of the input's shape ", shape_to_string(self.sizes()), ", found ",
         shape_to_string(target.sizes()));
  }
  Tensor one = wrapped_number(1.0);
  Tensor log_one_plus_exp_neg =
      loom::add(loom::relu(loom::neg(self)), loom::log1p(loom::exp(loom::neg(loom::abs(self)))));
  if (pos_weight) {
    Tensor log_weight = loom::add(loom::mul(loom::sub(*pos_weight, one), target), one);
    log_one_plus_exp_neg = loom::mul(log_weight, log_one_plus_exp_neg);
  }
  Tensor loss = loom::add(loom::mul(loom::sub(one, target), self), log_one_plus_exp_neg);
  if (weight) loss = loom::mul(loss, *weight);
  return reduce_loss(loss, reduction);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::cross_entropy_loss", decomposition<&cross_entropy_loss>()},
    {"loom::mse_loss", decomposition<&mse_loss>()},
    {"loom::l1_loss", decomposition<&l1_loss_decomposition>()},
    {"loom::smooth_l1_loss", decomposition<&smooth_l1_loss>()},
    {"loom::huber_loss", decomposition<&huber_loss>()},
    {"loom::kl_div", decomposition<&kl_div>()},
    {"loom::binary_cross_entropy_with_logits", decomposition<&binary_cross_entropy_with_logits>()},
};

}  // namespace

std::span<const DecompositionEntry> loss_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
