// RMSprop, following torch.optim.RMSprop's single-tensor update.
#include "loom/optim/rmsprop.h"

#include "loom/operators.h"
#include "loom/ops/generated/ops.h"

namespace loom::optim {

RMSprop::RMSprop(std::vector<ParamGroup<RMSpropOptions>> groups)
    : OptimizerWithOptions("optim::RMSprop", std::move(groups)) {
  check_groups();
}

void RMSprop::check_options(const RMSpropOptions& o) const {
  check_non_negative("lr", o.lr());
  check_non_negative("eps", o.eps());
  check_non_negative("alpha", o.alpha());
  check_non_negative("momentum", o.momentum());
  check_non_negative("weight_decay", o.weight_decay());
}

// v = alpha v + (1 - alpha) g^2; centered: a = lerp(a, g, 1 - alpha), v - a^2 in place of
// v; then with momentum b = momentum b + g / (sqrt(.) + eps), p -= lr b; without,
// p -= lr g / (sqrt(.) + eps).
void RMSprop::step() {
  step_groups(state_, &RMSprop::step_single, &RMSprop::step_foreach);
}

namespace {

void init_state(const RMSpropOptions& o, const Tensor& p, RMSpropParamState& s) {
  if (!s.square_avg.defined()) s.square_avg = loom::zeros_like(p);
  if (o.momentum() > 0 && !s.momentum_buffer.defined()) s.momentum_buffer = loom::zeros_like(p);
  if (o.centered() && !s.grad_avg.defined()) s.grad_avg = loom::zeros_like(p);
  ++s.step;
}

}  // namespace

void RMSprop::step_single(const RMSpropOptions& o, Tensor& p, Tensor g, RMSpropParamState& s) {
  init_state(o, p, s);
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

// The same update over a group's lists (Note [Foreach ops]: the same bits as above).
void RMSprop::step_foreach(GroupUpdate<RMSpropParamState>& group) {
  const RMSpropOptions& o = group.options;
  std::vector<Tensor> square_avgs, grad_avgs, bufs;
  for (size_t i = 0; i < group.params.size(); ++i) {
    RMSpropParamState& s = *group.states[i];
    init_state(o, group.params[i], s);
    square_avgs.push_back(s.square_avg);
    if (o.centered()) grad_avgs.push_back(s.grad_avg);
    if (o.momentum() > 0) bufs.push_back(s.momentum_buffer);
  }
  std::vector<Tensor> g = group.grads;
  if (o.weight_decay() != 0) g = loom::_foreach_add(g, group.params, o.weight_decay());
  loom::_foreach_mul_(square_avgs, o.alpha());
  loom::_foreach_addcmul_(square_avgs, g, g, 1.0 - o.alpha());
  std::vector<Tensor> avg;
  if (o.centered()) {
    loom::_foreach_lerp_(grad_avgs, g, 1.0 - o.alpha());
    avg = loom::_foreach_sqrt(loom::_foreach_addcmul(square_avgs, grad_avgs, grad_avgs, -1.0));
  } else {
    avg = loom::_foreach_sqrt(square_avgs);
  }
  loom::_foreach_add_(avg, o.eps());
  if (o.momentum() > 0) {
    loom::_foreach_mul_(bufs, o.momentum());
    loom::_foreach_addcdiv_(bufs, g, avg);
    loom::_foreach_add_(group.params, bufs, -o.lr());
  } else {
    loom::_foreach_addcdiv_(group.params, g, avg, -o.lr());
  }
}

std::vector<Optimizer::StateField> RMSprop::state_fields(size_t group, size_t i) {
  RMSpropParamState& s = state_slot(state_, group, i);
  return {{"step", nullptr, &s.step},
          {"square_avg", &s.square_avg},
          {"momentum_buffer", &s.momentum_buffer},
          {"grad_avg", &s.grad_avg}};
}

}  // namespace loom::optim
