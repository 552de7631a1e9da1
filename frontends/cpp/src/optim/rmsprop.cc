// RMSprop, following torch.optim.RMSprop's single-tensor update.
#include "loom/optim/rmsprop.h"

#include "loom/autograd.h"
#include "loom/operators.h"
#include "loom/ops/generated/ops.h"

namespace loom::optim {

RMSprop::RMSprop(std::vector<ParamGroup<RMSpropOptions>> groups)
    : OptimizerWithOptions("optim::RMSprop", std::move(groups)) {
  check_groups();
}

void RMSprop::check_options(const RMSpropOptions& o) const {
  LOOM_CHECK(o.lr() >= 0, name_, "expected lr >= 0, found ", o.lr());
  LOOM_CHECK(o.eps() >= 0, name_, "expected eps >= 0, found ", o.eps());
  LOOM_CHECK(o.alpha() >= 0, name_, "expected alpha >= 0, found ", o.alpha());
  LOOM_CHECK(o.momentum() >= 0, name_, "expected momentum >= 0, found ", o.momentum());
  LOOM_CHECK(o.weight_decay() >= 0, name_, "expected weight_decay >= 0, found ", o.weight_decay());
}

// v = alpha v + (1 - alpha) g^2; centered: a = lerp(a, g, 1 - alpha), v - a^2 in place of
// v; then with momentum b = momentum b + g / (sqrt(.) + eps), p -= lr b; without,
// p -= lr g / (sqrt(.) + eps).
void RMSprop::step() {
  NoGradGuard no_grad;
  state_.resize(groups_.size());
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const RMSpropOptions& o = groups_[gi].options;
    std::vector<Tensor>& params = groups_[gi].params;
    state_[gi].resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor& p = params[i];
      Tensor g = p.grad();
      if (!g.defined()) continue;
      RMSpropParamState& s = state_[gi][i];
      if (!s.square_avg.defined()) s.square_avg = loom::zeros_like(p);
      if (o.momentum() > 0 && !s.momentum_buffer.defined()) s.momentum_buffer = loom::zeros_like(p);
      if (o.centered() && !s.grad_avg.defined()) s.grad_avg = loom::zeros_like(p);
      ++s.step;
      if (o.weight_decay() != 0) g = loom::add(g, p, o.weight_decay());
      s.square_avg *= o.alpha();
      loom::addcmul_(s.square_avg, g, g, 1.0 - o.alpha());
      Tensor avg;
      if (o.centered()) {
        loom::lerp_(s.grad_avg, g, 1.0 - o.alpha());
        avg = loom::sqrt(loom::addcmul(s.square_avg, s.grad_avg, s.grad_avg, -1.0));
      } else {
        avg = loom::sqrt(s.square_avg);
      }
      avg += o.eps();
      if (o.momentum() > 0) {
        s.momentum_buffer *= o.momentum();
        loom::addcdiv_(s.momentum_buffer, g, avg);
        loom::add_(p, s.momentum_buffer, -o.lr());
      } else {
        loom::addcdiv_(p, g, avg, -o.lr());
      }
    }
  }
}

std::vector<Optimizer::StateField> RMSprop::state_fields(size_t group, size_t i) {
  state_.resize(groups_.size());
  state_[group].resize(groups_[group].params.size());
  RMSpropParamState& s = state_[group][i];
  return {{"step", nullptr, &s.step},
          {"square_avg", &s.square_avg},
          {"momentum_buffer", &s.momentum_buffer},
          {"grad_avg", &s.grad_avg}};
}

const RMSpropParamState& RMSprop::state(size_t group, size_t i) const {
  LOOM_CHECK(group < state_.size() && i < state_[group].size(), name_, "no state for parameter ", i,
             " of group ", group, " (before its first step)");
  return state_[group][i];
}

}  // namespace loom::optim
