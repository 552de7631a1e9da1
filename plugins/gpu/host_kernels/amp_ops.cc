// Loss scaling's ops on GPU tensors (kernels/amp.cu): the contiguous gradients of each
// floating dtype unscaled in as few launches as their chunks need (Note [Multi-tensor
// launches]), a non-contiguous one through a contiguous copy; the scale's update in one
// kernel. The op library's checks ran first (one-element float32 state, gradients on its
// device).
#include <map>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

constexpr const char* kUnscale = "_amp_foreach_non_finite_check_and_unscale_";

void amp_unscale_(const DispatchContext& ctx, const std::vector<Tensor>& self,
                  const Tensor& found_inf, const Tensor& inv_scale) {
  prepare(kUnscale, found_inf, {&inv_scale});
  std::map<int32_t, std::vector<void*>> data;
  std::map<int32_t, std::vector<int64_t>> numel;
  std::vector<std::pair<Tensor, Tensor>> staged;  // (gradient, its contiguous copy)
  for (const Tensor& grad : self) {
    prepare(kUnscale, found_inf, {&grad});
    if (grad.numel() == 0) continue;
    Tensor dense = grad;
    if (!grad.is_contiguous()) {
      dense = contiguous(ctx, kUnscale, grad);
      staged.emplace_back(grad, dense);
    }
    data[grad.dtype()].push_back(dense.data());
    numel[grad.dtype()].push_back(dense.numel());
  }
  for (auto& [dtype, pointers] : data) {
    const std::vector<int64_t>& sizes = numel[dtype];
    plan_multi_tensor(pointers.data(), sizes.data(), static_cast<int64_t>(sizes.size()),
                      kMultiTensorChunk, [&](const MultiTensorBatch& batch) {
                        check_launch(
                            launch_amp_unscale(dtype, batch, found_inf.data<float>(),
                                               inv_scale.data<const float>(), stream_of(ctx)),
                            kUnscale);
                      });
  }
  for (const auto& [grad, dense] : staged) copy_into(ctx, kUnscale, grad, dense);
}

Tensor amp_update_scale_(const DispatchContext& ctx, const Tensor& self,
                         const Tensor& growth_tracker, const Tensor& found_inf, double growth,
                         double backoff, int64_t interval) {
  const char* op = "_amp_update_scale_";
  prepare(op, self, {&growth_tracker, &found_inf});
  check_launch(launch_amp_update_scale(self.data<float>(), growth_tracker.data<int32_t>(),
                                       found_inf.data<const float>(), growth, backoff, interval,
                                       stream_of(ctx)),
               op);
  return self;
}

}  // namespace

void register_amp_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&amp_unscale_>("loom::_amp_foreach_non_finite_check_and_unscale_", key);
  r.impl<&amp_update_scale_>("loom::_amp_update_scale_", key);
}

}  // namespace loom::gpu
