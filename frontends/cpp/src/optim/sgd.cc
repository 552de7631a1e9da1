// SGD, following torch.optim.SGD's update.
#include "loom/optim/sgd.h"

#include "loom/autograd.h"
#include "loom/operators.h"
#include "loom/ops/generated/ops.h"

namespace loom::optim {

SGD::SGD(std::vector<ParamGroup<SGDOptions>> groups)
    : OptimizerWithOptions("optim::SGD", std::move(groups)) {
  check_groups();
}

void SGD::check_options(const SGDOptions& o) const {
  LOOM_CHECK(o.lr() >= 0, name_, "expected lr >= 0, found ", o.lr());
  LOOM_CHECK(o.momentum() >= 0, name_, "expected momentum >= 0, found ", o.momentum());
  LOOM_CHECK(o.weight_decay() >= 0, name_, "expected weight_decay >= 0, found ", o.weight_decay());
  LOOM_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0), name_,
             "Nesterov momentum needs momentum > 0 and dampening 0, found momentum ", o.momentum(),
             " and dampening ", o.dampening());
}

// d = g + wd * p; with momentum, buf = momentum * buf + (1 - dampening) * d (buf = d at
// the first step) and d = nesterov ? d + momentum * buf : buf; then p -= lr * d.
void SGD::step() {
  NoGradGuard no_grad;
  momentum_.resize(groups_.size());
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const SGDOptions& o = groups_[gi].options;
    std::vector<Tensor>& params = groups_[gi].params;
    momentum_[gi].resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor& p = params[i];
      Tensor d = p.grad();
      if (!d.defined()) continue;
      if (o.weight_decay() != 0) d = loom::add(d, p, o.weight_decay());
      if (o.momentum() != 0) {
        Tensor& buf = momentum_[gi][i];
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
  }
}

std::vector<Optimizer::StateField> SGD::state_fields(size_t group, size_t i) {
  momentum_.resize(groups_.size());
  momentum_[group].resize(groups_[group].params.size());
  return {{"momentum_buffer", &momentum_[group][i]}};
}

const Tensor& SGD::momentum_buffer(size_t group, size_t i) const {
  static const Tensor kNone;
  if (group >= momentum_.size() || i >= momentum_[group].size()) return kNone;
  return momentum_[group][i];
}

}  // namespace loom::optim
