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
  for_each_update(state_, [](const SGDOptions& o, Tensor& p, Tensor d, SGDParamState& s) {
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
  });
}

std::vector<Optimizer::StateField> SGD::state_fields(size_t group, size_t i) {
  return {{"momentum_buffer", &state_slot(state_, group, i).momentum_buffer}};
}

}  // namespace loom::optim
