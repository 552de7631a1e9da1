// Adam and AdamW, following torch.optim.Adam's single-tensor update.
#include "loom/optim/adam.h"

#include <algorithm>
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
  LOOM_CHECK(!(o.fused() && o.foreach().value_or(false)), name_,
             "expected at most one of fused and foreach, found both true");
}

// m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2 (v_max = max(v_max, v) with AMSGrad);
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
void Adam::step() {
  if (std::any_of(groups_.begin(), groups_.end(),
                  [](const auto& g) { return g.options.fused(); })) {
    for_each_group_update(state_, [this](GroupUpdate<AdamParamState>& group) {
      if (group.options.fused()) {
        step_fused(group);
        return;
      }
      if (use_foreach(group.options.foreach(), group.params) && !group.options.capturable()) {
        step_foreach(group);
        return;
      }
      for (size_t i = 0; i < group.params.size(); ++i) {
        if (group.options.capturable()) {
          step_capturable(group.options, group.params[i], group.grads[i], *group.states[i]);
        } else {
          step_single(group.options, group.params[i], group.grads[i], *group.states[i]);
        }
      }
    });
    return;
  }
  step_groups(
      state_,
      [this](const AdamOptions& o, Tensor& p, Tensor g, AdamParamState& s) {
        if (o.capturable()) {
          step_capturable(o, p, std::move(g), s);
        } else {
          step_single(o, p, std::move(g), s);
        }
      },
      [this](GroupUpdate<AdamParamState>& group) {
        if (!group.options.capturable()) {
          step_foreach(group);
          return;
        }
        for (size_t i = 0; i < group.params.size(); ++i) {
          step_capturable(group.options, group.params[i], group.grads[i], *group.states[i]);
        }
      });
}

bool Adam::capturable() const {
  for (const auto& g : groups_) {
    if (!g.options.capturable()) return false;
  }
  return true;
}

namespace {

// The moment buffers of a parameter, made at its first step.
void make_buffers(const AdamOptions& o, const Tensor& p, AdamParamState& s) {
  if (!s.exp_avg.defined()) s.exp_avg = loom::zeros_like(p);
  if (!s.exp_avg_sq.defined()) s.exp_avg_sq = loom::zeros_like(p);
  if (o.amsgrad() && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = loom::zeros_like(p);
}

}  // namespace

// Weight decay: AdamW's scales the parameter, Adam's adds weight_decay * p to the gradient
// (returned).
Tensor Adam::decay(const AdamOptions& o, Tensor& p, Tensor g) const {
  if (o.weight_decay() == 0) return g;
  if (decoupled_) {
    p *= 1.0 - o.lr() * o.weight_decay();
    return g;
  }
  return loom::add(g, p, o.weight_decay());
}

void Adam::step_single(const AdamOptions& o, Tensor& p, Tensor g, AdamParamState& s) const {
  make_buffers(o, p, s);
  ++s.step;
  g = decay(o, p, std::move(g));
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

// The update of step_single with the step count in a tensor: the scalars first (one
// small kernel when compiled), then the element-wise update (one kernel when compiled:
// Note [In-place ops in fused kernels]). The count is a float64 tensor (PyTorch's is
// float32, whose 1 - 0.999^t is off by 1e-5 relative at the first step), so the bias
// corrections are step_single's; the element-wise ops round the corrections to the
// parameter's dtype, so results differ from step_single's in the last bits.
void Adam::step_capturable(const AdamOptions& o, Tensor& p, Tensor g, AdamParamState& s) const {
  make_buffers(o, p, s);
  if (!s.step_tensor.defined()) {
    s.step_tensor = loom::full({}, static_cast<double>(s.step),
                               TensorOptions().dtype(ScalarType::Float64).device(p.device()));
  }
  Tensor& t = s.step_tensor;
  t += 1;
  // 1 - beta^t, as -beta^t + 1
  Tensor bias_correction1 = loom::pow(o.beta1(), t) * -1.0 + 1.0;
  Tensor bias_correction2 = loom::pow(o.beta2(), t) * -1.0 + 1.0;
  Tensor step_size = loom::reciprocal(bias_correction1) * o.lr();
  Tensor inverse_bias_correction2_sqrt = loom::rsqrt(bias_correction2);
  g = decay(o, p, std::move(g));
  loom::lerp_(s.exp_avg, g, 1.0 - o.beta1());
  s.exp_avg_sq *= o.beta2();
  loom::addcmul_(s.exp_avg_sq, g, g, 1.0 - o.beta2());
  Tensor second = s.exp_avg_sq;
  if (o.amsgrad()) {
    loom::copy_(s.max_exp_avg_sq, loom::maximum(s.max_exp_avg_sq, s.exp_avg_sq));
    second = s.max_exp_avg_sq;
  }
  // one division per element: a multiplication by 1 / sqrt(1 - beta2^t) instead
  Tensor denom = loom::sqrt(second) * inverse_bias_correction2_sqrt + o.eps();
  p -= s.exp_avg * step_size / denom;
}

// The same update over a group's lists (Note [Foreach ops]: the same bits as above).
void Adam::step_foreach(GroupUpdate<AdamParamState>& group) const {
  const AdamOptions& o = group.options;
  std::vector<Tensor> exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
  std::vector<double> denom_divisors, step_sizes;
  for (size_t i = 0; i < group.params.size(); ++i) {
    AdamParamState& s = *group.states[i];
    make_buffers(o, group.params[i], s);
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

// The whole group in one op (Note [Fused Adam]): the step counts go with it, as cpu
// numbers (or, with capturable, the device tensors that hold them).
void Adam::step_fused(GroupUpdate<AdamParamState>& group) const {
  const AdamOptions& o = group.options;
  std::vector<Tensor> exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
  for (size_t i = 0; i < group.params.size(); ++i) {
    AdamParamState& s = *group.states[i];
    const Tensor& p = group.params[i];
    make_buffers(o, p, s);
    exp_avgs.push_back(s.exp_avg);
    exp_avg_sqs.push_back(s.exp_avg_sq);
    if (o.amsgrad()) max_exp_avg_sqs.push_back(s.max_exp_avg_sq);
    if (o.capturable()) {
      if (!s.step_tensor.defined()) {
        s.step_tensor = loom::full({}, static_cast<double>(s.step),
                                   TensorOptions().dtype(ScalarType::Float64).device(p.device()));
      }
      s.step_tensor += 1;
      steps.push_back(s.step_tensor);
    } else {
      ++s.step;
      steps.push_back(loom::scalar_tensor(static_cast<double>(s.step),
                                          TensorOptions().dtype(ScalarType::Float64)));
    }
  }
  auto* update = decoupled_ ? &loom::_fused_adamw_ : &loom::_fused_adam_;
  update(group.params, group.grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, o.lr(),
         o.beta1(), o.beta2(), o.weight_decay(), o.eps(), o.amsgrad(), false, std::nullopt,
         std::nullopt);
}

std::vector<Optimizer::StateField> Adam::state_fields(size_t group, size_t i) {
  AdamParamState& s = state_slot(state_, group, i);
  if (s.step_tensor.defined()) s.step = std::llround(s.step_tensor.item<double>());
  return {{"step", nullptr, &s.step},
          {"exp_avg", &s.exp_avg},
          {"exp_avg_sq", &s.exp_avg_sq},
          {"max_exp_avg_sq", &s.max_exp_avg_sq}};
}

// A loaded count replaces the step tensor (made again from it at the next step).
void Adam::state_loaded() {
  for (auto& group : state_) {
    for (AdamParamState& s : group) s.step_tensor = Tensor();
  }
}

}  // namespace loom::optim
