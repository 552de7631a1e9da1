// native_layer_norm on GPU tensors, by passes of the reduction and pointwise kernels as
// var is (Note [Variance by passes] in reduction_ops.cc): each row's sum, the deviations
// against sum / N, their squares and sum, rstd = rsqrt(sum of squares / N + eps), then
// deviation * rstd (* weight, + bias), in float32 (float64 for float64 inputs). The
// output, mean and rstd arrive allocated by the op's shape rule, which has checked the
// normalized shape, the weight's and bias's shapes and the devices.
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_out(
    const DispatchContext& ctx, const Tensor& input, std::span<const int64_t> normalized_shape,
    const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps,
    const Tensor& out, const Tensor& mean_out, const Tensor& rstd_out) {
  const char* op = "native_layer_norm";
  prepare(op, out, {&input, &mean_out, &rstd_out});
  if (weight) prepare(op, out, {&*weight});
  if (bias) prepare(op, out, {&*bias});
  const int64_t nd = input.dim();
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0 || k > nd) {
    throw sdk::Error("[" + std::string(op) + "] expected 1 to " + std::to_string(nd) +
                     " normalized dims, found " + std::to_string(k));
  }
  if (input.numel() == 0) return {out, mean_out, rstd_out};
  const int32_t acc = input.dtype() == LOOM_DTYPE_FLOAT64 ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_FLOAT32;
  const LoomDType acc_type = static_cast<LoomDType>(acc);
  const LoomDevice device = out.device();
  auto in_acc = [&](const Tensor& t) { return t.dtype() == acc ? t : contiguous(ctx, op, t, acc); };
  const Tensor x = in_acc(input);
  std::vector<int64_t> dims, stat_shape(x.sizes().begin(), x.sizes().end());
  int64_t count = 1;
  for (int64_t d = nd - k; d < nd; ++d) {
    dims.push_back(d);
    count *= stat_shape[static_cast<size_t>(d)];
    stat_shape[static_cast<size_t>(d)] = 1;
  }
  const Tensor n = scalar_tensor(ctx, op, static_cast<double>(count), acc, device);
  // mean: the rows' sums, then divided by N once the deviations are taken
  const Tensor mean = sdk::empty(stat_shape, acc_type, device);
  reduce(ctx, op, ReduceOp::Sum, x, dims, mean);
  const Tensor y = sdk::empty(x.sizes(), acc_type, device);
  broadcast_binary(ctx, op, BinaryOp::Sub, 1.0 / static_cast<double>(count), y, x, mean);
  broadcast_binary(ctx, op, BinaryOp::Div, 1.0, mean, mean, n);
  // rstd = rsqrt(sum of squared deviations / N + eps)
  const Tensor squares = sdk::empty(x.sizes(), acc_type, device);
  broadcast_binary(ctx, op, BinaryOp::Mul, 1.0, squares, y, y);
  const Tensor rstd = sdk::empty(stat_shape, acc_type, device);
  reduce(ctx, op, ReduceOp::Sum, squares, dims, rstd);
  broadcast_binary(ctx, op, BinaryOp::Div, 1.0, rstd, rstd, n);
  broadcast_binary(ctx, op, BinaryOp::Add, 1.0, rstd, rstd,
                   scalar_tensor(ctx, op, eps, acc, device));
  const Tensor* rstd_pair[2] = {&rstd, &rstd};
  check_launch(launch_unary(UnaryOp::Rsqrt, acc, UnaryParams{}, space_of(op, rstd, rstd_pair),
                            rstd.data(), rstd.data(), stream_of(ctx)),
               op);
  // out = deviation * rstd (* weight, + bias)
  broadcast_binary(ctx, op, BinaryOp::Mul, 1.0, y, y, rstd);
  if (weight) broadcast_binary(ctx, op, BinaryOp::Mul, 1.0, y, y, in_acc(*weight));
  if (bias) broadcast_binary(ctx, op, BinaryOp::Add, 1.0, y, y, in_acc(*bias));
  copy_into(ctx, op, out, y);
  copy_into(ctx, op, mean_out, mean);
  copy_into(ctx, op, rstd_out, rstd);
  return {out, mean_out, rstd_out};
}

}  // namespace

void register_normalization_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&native_layer_norm_out>("loom::native_layer_norm.out", key, sdk::dtypes::floating);
}

}  // namespace loom::gpu
