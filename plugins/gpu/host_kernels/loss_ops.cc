// nll_loss on GPU tensors (kernels/loss.cu): self [C], [N, C] or [N, C, d1, ...] of
// log-probabilities, the target self's shape without the class dim; the output arrives in
// self's dtype, the target's shape for reduction none, else 0-dim. A target outside
// [0, classes) that is not ignore_index is the op's error, as on the CPU (flagged by the
// kernel, raised at the next wait for the device: Note [Input errors found by kernels]).
#include <optional>
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

constexpr int64_t kReductionNone = 0, kReductionMean = 1;

Tensor nll_loss_out(const DispatchContext& ctx, const Tensor& self, const Tensor& target,
                    const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                    const Tensor& out) {
  const char* op = "nll_loss";
  prepare(op, out, {&self, &target});
  if (weight) {
    prepare(op, out, {&*weight});
    if (weight->dtype() != self.dtype()) {
      throw sdk::Error("[nll_loss] expected a weight of self's dtype " +
                       std::to_string(self.dtype()) + ", found dtype " +
                       std::to_string(weight->dtype()));
    }
  }
  const int64_t nd = self.dim();
  const int64_t class_dim = nd == 1 ? 0 : 1;
  NllLossShape shape;
  shape.classes = self.sizes()[class_dim];
  shape.class_stride = self.strides()[class_dim];
  shape.weight_stride = weight && weight->dim() > 0 ? weight->strides()[0] : 0;
  shape.ignore_index = ignore_index;
  std::vector<int64_t> sizes, self_strides, out_strides;
  for (int64_t d = 0; d < nd; ++d) {
    if (d == class_dim) continue;
    sizes.push_back(self.sizes()[d]);
    self_strides.push_back(self.strides()[d]);
  }
  const bool reduce = reduction != kReductionNone;
  for (size_t d = 0; d < sizes.size(); ++d) {
    out_strides.push_back(reduce ? 0 : out.strides()[d]);
  }
  if (static_cast<size_t>(target.dim()) != sizes.size()) {
    throw sdk::Error("[nll_loss] expected a target of " + std::to_string(sizes.size()) +
                     " dims, found " + std::to_string(target.dim()));
  }
  const int64_t* strides[3] = {out_strides.data(), self_strides.data(), target.strides().data()};
  if (!make_strided_space<3>(sizes.data(), static_cast<int>(sizes.size()), strides,
                             &shape.positions)) {
    throw sdk::Error("[nll_loss] too many dims for the " LOOM_GPU_PLATFORM_NAME " loss kernel");
  }
  if (!reduce && out.numel() == 0) return out;
  const InputCheck check = input_check(ctx, out, [classes = shape.classes](int64_t bad) {
    return "[loom::nll_loss] target " + std::to_string(bad) + " is out of bounds for " +
           std::to_string(classes) + " classes";
  });
  check_launch(launch_nll_loss(self.dtype(), target.dtype(), shape, reduce,
                               reduction == kReductionMean, out.data(), self.data(), target.data(),
                               weight ? weight->data() : nullptr, check.slot(), stream_of(ctx)),
               op);
  return out;
}

}  // namespace

void register_loss_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&nll_loss_out>("loom::nll_loss.out", key, sdk::dtypes::floating);
}

}  // namespace loom::gpu
