// Optimizer: zero_grad and set_lr over every group.
#include "loom/optim/optimizer.h"

#include "loom/autograd.h"
#include "loom/ops/generated/ops.h"

namespace loom::optim {

void Optimizer::zero_grad(bool set_to_none) {
  for (const Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      loom::fill_(g, 0);
    }
  }
}

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < num_param_groups(); ++g) set_lr(lr, g);
}

}  // namespace loom::optim
