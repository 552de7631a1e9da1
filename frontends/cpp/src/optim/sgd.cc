// SGD, following torch.optim.SGD's update.
#include "loom/optim/sgd.h"

#include "loom/operators.h"
#include "loom/ops/generated/ops.h"

namespace loom::optim {

SGD::SGD(std::vector<ParamGroup<SGDOptions>> groups)
    : OptimizerWithOptions("optim::SGD", std::move(groups)) {
  check_groups();
}

void SGD::check_options(const SGDOptions& o) const {
  check_non_negative("lr", o.lr());
  check_non_negative("momentum", o.momentum());
  check_non_negative("weight_decay", o.weight_decay());
  LOOM_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0), name_,
             "Nesterov momentum needs momentum > 0 and dampening 0, found momentum ", o.momentum(),
             " and dampening ", o.dampening());
}

// d = g + wd * p; with momentum, buf = momentum * buf + (1 - dampening) * d (buf = d at
// the first step) and d = nesterov ? d + momentum * buf : buf; then p -= lr * d.
void SGD::step() {
  step_groups(state_, &SGD::step_single, &SGD::step_foreach);
}

void SGD::step_single(const SGDOptions& o, Tensor& p, Tensor d, SGDParamState& s) {
  if (o.weight_decay() != 0) d = loom::add(d, p, o.weight_decay());
  if (o.momentum() != 0) {
    Tensor& buf = s.momentum_buffer;
    if (!buf.defined()) {
      buf = loom::clone(d);
    } else {
      buf *= o.momentum();
      loom::add_(buf, d, 1.0 - o.dampening());
    }
    d = o.nesterov() ? loom::add(d, buf, o.momentum()) : buf;
  }
  loom::add_(p, d, -o.lr());
}

// The same update over a group's lists (Note [Foreach ops]: the same bits as above).
void SGD::step_foreach(GroupUpdate<SGDParamState>& group) {
  const SGDOptions& o = group.options;
  std::vector<Tensor> d = group.grads;
  if (o.weight_decay() != 0) d = loom::_foreach_add(d, group.params, o.weight_decay());
  if (o.momentum() != 0) {
    std::vector<Tensor> bufs, updates;  // the buffers that exist already, and their d
    for (size_t i = 0; i < d.size(); ++i) {
      Tensor& buf = group.states[i]->momentum_buffer;
      if (!buf.defined()) {
        buf = loom::clone(d[i]);
      } else {
        bufs.push_back(buf);
        updates.push_back(d[i]);
      }
    }
    if (!bufs.empty()) {
      loom::_foreach_mul_(bufs, o.momentum());
      loom::_foreach_add_(bufs, updates, 1.0 - o.dampening());
    }
    std::vector<Tensor> all_bufs;
    for (SGDParamState* s : group.states) all_bufs.push_back(s->momentum_buffer);
    d = o.nesterov() ? loom::_foreach_add(d, all_bufs, o.momentum()) : all_bufs;
  }
  loom::_foreach_add_(group.params, d, -o.lr());
}

std::vector<Optimizer::StateField> SGD::state_fields(size_t group, size_t i) {
  return {{"momentum_buffer", &state_slot(state_, group, i).momentum_buffer}};
}

}  // namespace loom::optim
