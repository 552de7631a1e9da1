// The foreach family on GPU tensors: the fused Adam and AdamW step (kernels/foreach.cu,
// Note [Fused Adam] in ops/decompositions/foreach.cc) over the parameters of each floating
// dtype in as few launches as their chunks need (Note [Multi-tensor launches]); a
// parameter any of whose tensors is not contiguous goes through contiguous copies, written
// back after. Step counts on the cpu travel by value; on the device they are read there.
// The op library's check ran first (lists of one length, tensors like their parameter,
// one-element steps, hyperparameters in range). The _foreach_ ops are the op library's
// decompositions.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

// A cpu step count as a double.
double host_step(const char* op, const Tensor& step) {
  switch (step.dtype()) {
    case LOOM_DTYPE_FLOAT32:
      return *step.data<const float>();
    case LOOM_DTYPE_FLOAT64:
      return *step.data<const double>();
    case LOOM_DTYPE_INT32:
      return *step.data<const int32_t>();
    case LOOM_DTYPE_INT64:
      return static_cast<double>(*step.data<const int64_t>());
    default:
      throw sdk::Error("[" + std::string(op) + "] expected a float32, float64, int32 or int64 " +
                       "step count, found dtype " + std::to_string(step.dtype()));
  }
}

// One parameter's tensors as the kernel sees them (contiguous copies where needed).
struct FusedEntry {
  Tensor param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq;
  const void* step = nullptr;
  double step_value = 0;
  int32_t step_dtype = 0;
};

void fused_adam(const DispatchContext& ctx, bool decoupled, const std::vector<Tensor>& self,
                const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
                const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
                const std::vector<Tensor>& state_steps, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize,
                const std::optional<Tensor>& grad_scale, const std::optional<Tensor>& found_inf) {
  const char* op = decoupled ? "_fused_adamw_" : "_fused_adam_";
  const Tensor& first = self.front();
  if (grad_scale) prepare(op, first, {&*grad_scale});
  if (found_inf) prepare(op, first, {&*found_inf});
  std::map<int32_t, std::vector<FusedEntry>> by_dtype;
  std::vector<std::pair<Tensor, Tensor>> staged;  // (a caller's tensor, its contiguous copy)
  auto dense = [&](const Tensor& t) {
    if (t.is_contiguous()) return t;
    Tensor copy = contiguous(ctx, op, t);
    staged.emplace_back(t, copy);
    return copy;
  };
  for (size_t i = 0; i < self.size(); ++i) {
    prepare(op, first, {&self[i], &grads[i], &exp_avgs[i], &exp_avg_sqs[i]});
    if (amsgrad) prepare(op, first, {&max_exp_avg_sqs[i]});
    if (self[i].numel() == 0) continue;
    FusedEntry e;
    e.param = dense(self[i]);
    e.grad = dense(grads[i]);
    e.exp_avg = dense(exp_avgs[i]);
    e.exp_avg_sq = dense(exp_avg_sqs[i]);
    if (amsgrad) e.max_exp_avg_sq = dense(max_exp_avg_sqs[i]);
    const Tensor& step = state_steps[i];
    if (step.device().type == LOOM_DEVICE_CPU) {
      e.step_value = host_step(op, step);
    } else {
      prepare(op, first, {&step});
      e.step = step.data();
      e.step_dtype = step.dtype();
      if (e.step_dtype != LOOM_DTYPE_FLOAT32 && e.step_dtype != LOOM_DTYPE_FLOAT64 &&
          e.step_dtype != LOOM_DTYPE_INT32 && e.step_dtype != LOOM_DTYPE_INT64) {
        throw sdk::Error("[" + std::string(op) +
                         "] expected a float32, float64, int32 or int64 step count, found dtype " +
                         std::to_string(e.step_dtype));
      }
    }
    by_dtype[self[i].dtype()].push_back(std::move(e));
  }
  FusedAdamOptions options{lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled};
  if (grad_scale) options.grad_scale = grad_scale->data<const float>();
  if (found_inf) options.found_inf = found_inf->data<const float>();
  for (auto& [dtype, entries] : by_dtype) {
    std::vector<int64_t> numel;
    for (const FusedEntry& e : entries) numel.push_back(e.param.numel());
    plan_multi_tensor_tables<FusedAdamTable>(
        numel.data(), static_cast<int64_t>(numel.size()), kMultiTensorChunk,
        [&](FusedAdamTable& table, int64_t i) {
          const FusedEntry& e = entries[static_cast<size_t>(i)];
          const int t = table.num_tensors;
          table.param[t] = e.param.data();
          table.grad[t] = e.grad.data();
          table.exp_avg[t] = e.exp_avg.data();
          table.exp_avg_sq[t] = e.exp_avg_sq.data();
          table.max_exp_avg_sq[t] = amsgrad ? e.max_exp_avg_sq.data() : nullptr;
          table.step[t] = e.step;
          table.step_value[t] = e.step_value;
          table.step_dtype[t] = e.step_dtype;
        },
        [&](const FusedAdamTable& table) {
          check_launch(launch_fused_adam(dtype, table, options, stream_of(ctx)), op);
        });
  }
  for (const auto& [original, copy] : staged) copy_into(ctx, op, original, copy);
}

template <bool Decoupled>
void fused_adam_(const DispatchContext& ctx, const std::vector<Tensor>& self,
                 const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
                 const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
                 const std::vector<Tensor>& state_steps, double lr, double beta1, double beta2,
                 double weight_decay, double eps, bool amsgrad, bool maximize,
                 const std::optional<Tensor>& grad_scale, const std::optional<Tensor>& found_inf) {
  fused_adam(ctx, Decoupled, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
             beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

}  // namespace

void register_foreach_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&fused_adam_<false>>("loom::_fused_adam_", key);
  r.impl<&fused_adam_<true>>("loom::_fused_adamw_", key);
}

}  // namespace loom::gpu
