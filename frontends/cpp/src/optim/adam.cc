// Adam and AdamW, following torch.optim.Adam's single-tensor update.
#include "loom/optim/adam.h"

#include <cmath>

#include "loom/operators.h"
#include "loom/ops/generated/ops.h"

namespace loom::optim {

Adam::Adam(const char* name, std::vector<ParamGroup<AdamOptions>> groups, bool decoupled)
    : OptimizerWithOptions(name, std::move(groups)), decoupled_(decoupled) {
  check_groups();
}

void Adam::check_options(const AdamOptions& o) const {
  check_non_negative("lr", o.lr());
  check_non_negative("eps", o.eps());
  check_non_negative("weight_decay", o.weight_decay());
  LOOM_CHECK(o.beta1() >= 0 && o.beta1() < 1 && o.beta2() >= 0 && o.beta2() < 1, name_,
             "expected betas in [0, 1), found (", o.beta1(), ", ", o.beta2(), ")");
}

// m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2 (v_max = max(v_max, v) with AMSGrad);
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
void Adam::step() {
  step_groups(
      state_, [this](auto&... args) { step_single(args...); },
      [this](auto& group) { step_foreach(group); });
}

void Adam::step_single(const AdamOptions& o, Tensor& p, Tensor g, AdamParamState& s) const {
  if (!s.exp_avg.defined()) s.exp_avg = loom::zeros_like(p);
  if (!s.exp_avg_sq.defined()) s.exp_avg_sq = loom::zeros_like(p);
  if (o.amsgrad() && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = loom::zeros_like(p);
  ++s.step;
  if (o.weight_decay() != 0) {
    if (decoupled_) {
      p *= 1.0 - o.lr() * o.weight_decay();
    } else {
      g = loom::add(g, p, o.weight_decay());
    }
  }
  loom::lerp_(s.exp_avg, g, 1.0 - o.beta1());
  s.exp_avg_sq *= o.beta2();
  loom::addcmul_(s.exp_avg_sq, g, g, 1.0 - o.beta2());
  const double t = static_cast<double>(s.step);
  const double bias_correction1 = 1.0 - std::pow(o.beta1(), t);
  const double bias_correction2 = 1.0 - std::pow(o.beta2(), t);
  Tensor second = s.exp_avg_sq;
  if (o.amsgrad()) {
    loom::copy_(s.max_exp_avg_sq, loom::maximum(s.max_exp_avg_sq, s.exp_avg_sq));
    second = s.max_exp_avg_sq;
  }
  Tensor denom = loom::sqrt(second);
  denom /= std::sqrt(bias_correction2);
  denom += o.eps();
  loom::addcdiv_(p, s.exp_avg, denom, -o.lr() / bias_correction1);
}

// The same update over a group's lists (Note [Foreach ops]: the same bits as above).
void Adam::step_foreach(GroupUpdate<AdamParamState>& group) const {
  const AdamOptions& o = group.options;
  std::vector<Tensor> exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
  std::vector<double> denom_divisors, step_sizes;
  for (size_t i = 0; i < group.params.size(); ++i) {
    AdamParamState& s = *group.states[i];
    const Tensor& p = group.params[i];
    if (!s.exp_avg.defined()) s.exp_avg = loom::zeros_like(p);
    if (!s.exp_avg_sq.defined()) s.exp_avg_sq = loom::zeros_like(p);
    if (o.amsgrad() && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = loom::zeros_like(p);
    ++s.step;
    exp_avgs.push_back(s.exp_avg);
    exp_avg_sqs.push_back(s.exp_avg_sq);
    if (o.amsgrad()) max_exp_avg_sqs.push_back(s.max_exp_avg_sq);
    const double t = static_cast<double>(s.step);
    denom_divisors.push_back(std::sqrt(1.0 - std::pow(o.beta2(), t)));
    step_sizes.push_back(-o.lr() / (1.0 - std::pow(o.beta1(), t)));
  }
  std::vector<Tensor> grads = group.grads;
  if (o.weight_decay() != 0) {
    if (decoupled_) {
      loom::_foreach_mul_(group.params, 1.0 - o.lr() * o.weight_decay());
    } else {
      grads = loom::_foreach_add(grads, group.params, o.weight_decay());
    }
  }
  loom::_foreach_lerp_(exp_avgs, grads, 1.0 - o.beta1());
  loom::_foreach_mul_(exp_avg_sqs, o.beta2());
  loom::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1.0 - o.beta2());
  if (o.amsgrad()) loom::_foreach_maximum_(max_exp_avg_sqs, exp_avg_sqs);
  std::vector<Tensor> denom = loom::_foreach_sqrt(o.amsgrad() ? max_exp_avg_sqs : exp_avg_sqs);
  loom::_foreach_div_(denom, denom_divisors);
  loom::_foreach_add_(denom, o.eps());
  loom::_foreach_addcdiv_(group.params, exp_avgs, denom, step_sizes);
}

std::vector<Optimizer::StateField> Adam::state_fields(size_t group, size_t i) {
  AdamParamState& s = state_slot(state_, group, i);
  return {{"step", nullptr, &s.step},
          {"exp_avg", &s.exp_avg},
          {"exp_avg_sq", &s.exp_avg_sq},
          {"max_exp_avg_sq", &s.max_exp_avg_sq}};
}

}  // namespace loom::optim
