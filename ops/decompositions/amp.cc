// Decompositions of the amp family: loss scaling's two ops from tensor ops, with no value
// read on the host, which every backend gets; the CPU plugin overrides them with kernels
// that unscale every gradient in one pass (plugins/cpu/kernels/amp.cc).
//
// Note [Loss scaling ops]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Dynamic loss scaling (loom::amp::GradScaler, as torch.amp.GradScaler) multiplies the loss
// by a scale before backward, so that float16 gradients do not underflow, and then:
//   _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale) multiplies
//     every gradient by inv_scale in place and sets found_inf (one float32 element) to 1
//     when any gradient holds an inf or a NaN (it never clears it: several optimizers'
//     gradients may share it);
//   _amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff, interval): after
//     a step with found_inf set, scale *= backoff and the tracker restarts at 0; otherwise
//     the tracker counts the step and, at `interval` steps in a row, scale *= growth (kept
//     only when the result is finite) and the tracker restarts. Returns scale.
// Both keep their state in tensors on the gradients' device, so a step never waits for
// the device; the optimizer step is skipped by the frontend reading found_inf once.
#include "decomposition.h"

namespace loom::ops {
namespace {

void unscale_(const std::vector<Tensor>& self, const Tensor& found_inf, const Tensor& inv_scale) {
  const Tensor factor = loom::reshape(inv_scale, {});
  for (const Tensor& grad : self) {
    const Tensor bad = loom::any(loom::logical_not(loom::isfinite(grad)));
    loom::copy_(found_inf, loom::maximum(found_inf, loom::to(bad, found_inf.dtype())));
    loom::mul_(grad, factor);
  }
}

Tensor update_scale_(const Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf,
                     double growth, double backoff, int64_t interval) {
  const Tensor found = loom::gt(found_inf, 0);
  const Tensor counted =
      loom::where(found, loom::mul(growth_tracker, 0), loom::add(growth_tracker, 1));
  const Tensor grown = loom::mul(self, growth);
  const Tensor at_interval = loom::ge(counted, interval);
  const Tensor grow = loom::logical_and(at_interval, loom::isfinite(grown));
  const Tensor scale = loom::where(found, loom::mul(self, backoff), loom::where(grow, grown, self));
  loom::copy_(growth_tracker, loom::where(at_interval, loom::mul(counted, 0), counted));
  loom::copy_(self, scale);
  return self;
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::_amp_foreach_non_finite_check_and_unscale_", decomposition<&unscale_>()},
    {"loom::_amp_update_scale_", decomposition<&update_scale_>()},
};

}  // namespace

std::span<const DecompositionEntry> amp_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
