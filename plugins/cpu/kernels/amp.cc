// Loss scaling's kernels (Note [Loss scaling ops] in ops/decompositions/amp.cc): every
// gradient checked for infs and NaNs and multiplied by the inverse scale in one pass over
// its elements (the decomposition's two passes and a dispatch per tensor become one), with
// mul's element formula so the bits equal the decomposition's; the scale update on the
// three one-element state tensors.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../kernels.h"
#include "../parallel.h"
#include "../scalar_types.h"
#include "loom/sdk/ops.hpp"

namespace loom::cpu {
namespace {

using sdk::Tensor;
namespace op = sdk::op;

constexpr const char* kUnscale = "loom::_amp_foreach_non_finite_check_and_unscale_";

// Unscales a contiguous tensor in place; whether it held an inf or a NaN.
bool unscale_contiguous(const Tensor& grad, float inv_scale) {
  std::atomic<bool> found{false};
  dispatch_floating_types(grad.dtype(), kUnscale, [&]<typename T>(T) {
    using A = acc_type<T>;
    // The factor in the gradient's dtype first, as mul_ casts its 0-dim operand.
    const A factor = static_cast<A>(static_cast<T>(inv_scale));
    T* p = grad.data<T>();
    parallel_for(0, grad.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
      bool bad = false;
      for (int64_t i = begin; i < end; ++i) {
        const A v = static_cast<A>(p[i]);
        bad = bad || !std::isfinite(static_cast<double>(v));
        p[i] = static_cast<T>(v * factor);
      }
      if (bad) found.store(true, std::memory_order_relaxed);
    });
  });
  return found.load();
}

void amp_unscale_(const std::vector<Tensor>& self, const Tensor& found_inf,
                  const Tensor& inv_scale) {
  const float inv = *inv_scale.data<const float>();
  bool found = false;
  for (const Tensor& grad : self) {
    if (grad.numel() == 0) continue;
    if (grad.is_contiguous()) {
      found = unscale_contiguous(grad, inv) || found;
    } else {
      const Tensor dense = op::contiguous(grad);
      found = unscale_contiguous(dense, inv) || found;
      op::copy_(grad, dense);
    }
  }
  if (found) *found_inf.data<float>() = 1.0f;
}

Tensor amp_update_scale_(const Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf,
                         double growth, double backoff, int64_t interval) {
  float& scale = *self.data<float>();
  int32_t& tracker = *growth_tracker.data<int32_t>();
  if (*found_inf.data<const float>() > 0) {
    scale *= static_cast<float>(backoff);  // in float32, as mul with a Scalar computes
    tracker = 0;
    return self;
  }
  const int64_t counted = static_cast<int64_t>(tracker) + 1;
  if (counted >= interval) {
    const float grown = scale * static_cast<float>(growth);
    if (std::isfinite(grown)) scale = grown;
    tracker = 0;
  } else {
    tracker = static_cast<int32_t>(counted);
  }
  return self;
}

}  // namespace

void register_amp_kernels(sdk::Registrar& r) {
  r.impl<&amp_unscale_>(kUnscale, LOOM_KEY_CPU);
  r.impl<&amp_update_scale_>("loom::_amp_update_scale_", LOOM_KEY_CPU);
}

}  // namespace loom::cpu
