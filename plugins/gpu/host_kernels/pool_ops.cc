// 2-D pooling on GPU tensors ([N, C, H, W] or [C, H, W], the shape rules have checked the
// windows): max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d and
// adaptive_max_pool2d, each one kernel over the outputs (kernels/pool.cu) reading the
// input and writing the outputs through their strides; grid_sampler_2d and its backward
// (Note [Grid sampling] in loom/sdk/reference/grid_sample.hpp).
#include <optional>
#include <span>
#include <string>
#include <tuple>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

// Batch, channel, row and column strides of a [N, C, H, W] or [C, H, W] tensor.
void plane_strides(const Tensor& t, int64_t (&strides)[4]) {
  const bool batched = t.dim() == 4;
  const size_t b = batched ? 1 : 0;
  strides[0] = batched ? t.strides()[0] : 0;
  for (size_t k = 0; k < 3; ++k) strides[k + 1] = t.strides()[b + k];
}

// A [kh, kw] pair from an int[2] argument (one value for both, or empty for `fallback`).
void pair_into(std::span<const int64_t> v, int64_t (&pair)[2], const int64_t (&fallback)[2]) {
  if (v.empty()) {
    pair[0] = fallback[0];
    pair[1] = fallback[1];
  } else {
    pair[0] = v[0];
    pair[1] = v.size() == 1 ? v[0] : v[1];
  }
}

PoolShape pool_shape(const char* op, const Tensor& self, const Tensor& out, const Tensor* indices) {
  if (self.dim() != 3 && self.dim() != 4) {
    throw sdk::Error("[" + std::string(op) + "] expected a 3-d or 4-d input, found " +
                     std::to_string(self.dim()) + " dims");
  }
  const bool batched = self.dim() == 4;
  PoolShape s;
  s.batch = batched ? self.sizes()[0] : 1;
  s.channels = self.sizes()[batched ? 1 : 0];
  s.in_h = self.size(-2);
  s.in_w = self.size(-1);
  s.out_h = out.size(-2);
  s.out_w = out.size(-1);
  plane_strides(self, s.in_strides);
  plane_strides(out, s.out_strides);
  plane_strides(indices ? *indices : out, s.index_strides);
  return s;
}

void fixed_window(PoolShape& s, std::span<const int64_t> kernel_size,
                  std::span<const int64_t> stride, std::span<const int64_t> padding,
                  std::span<const int64_t> dilation) {
  const int64_t zero[2] = {0, 0}, one[2] = {1, 1};
  pair_into(kernel_size, s.kernel, one);
  pair_into(stride, s.stride, s.kernel);  // stride=[] is the kernel size
  pair_into(padding, s.padding, zero);
  pair_into(dilation, s.dilation, one);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_out(
    const DispatchContext& ctx, const Tensor& self, std::span<const int64_t> kernel_size,
    std::span<const int64_t> stride, std::span<const int64_t> padding,
    std::span<const int64_t> dilation, bool, const Tensor& values, const Tensor& indices) {
  const char* op = "max_pool2d_with_indices";
  prepare(op, values, {&self, &indices});
  PoolShape s = pool_shape(op, self, values, &indices);
  fixed_window(s, kernel_size, stride, padding, dilation);
  check_launch(launch_max_pool(false, self.dtype(), s, values.data(),
                               static_cast<int64_t*>(indices.data()), self.data(), stream_of(ctx)),
               op);
  return {values, indices};
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_out(const DispatchContext& ctx, const Tensor& self,
                                                   std::span<const int64_t>, const Tensor& values,
                                                   const Tensor& indices) {
  const char* op = "adaptive_max_pool2d";
  prepare(op, values, {&self, &indices});
  const PoolShape s = pool_shape(op, self, values, &indices);
  check_launch(launch_max_pool(true, self.dtype(), s, values.data(),
                               static_cast<int64_t*>(indices.data()), self.data(), stream_of(ctx)),
               op);
  return {values, indices};
}

Tensor avg_pool2d_out(const DispatchContext& ctx, const Tensor& self,
                      std::span<const int64_t> kernel_size, std::span<const int64_t> stride,
                      std::span<const int64_t> padding, bool, bool count_include_pad,
                      std::optional<int64_t> divisor_override, const Tensor& out) {
  const char* op = "avg_pool2d";
  prepare(op, out, {&self});
  if (divisor_override && *divisor_override == 0) {
    throw sdk::Error("[avg_pool2d] expected a non-zero divisor_override, found 0");
  }
  PoolShape s = pool_shape(op, self, out, nullptr);
  fixed_window(s, kernel_size, stride, padding, {});
  check_launch(
      launch_avg_pool(false, self.dtype(), s, count_include_pad, divisor_override.value_or(0),
                      out.data(), self.data(), stream_of(ctx)),
      op);
  return out;
}

Tensor adaptive_avg_pool2d_out(const DispatchContext& ctx, const Tensor& self,
                               std::span<const int64_t>, const Tensor& out) {
  const char* op = "adaptive_avg_pool2d";
  prepare(op, out, {&self});
  const PoolShape s = pool_shape(op, self, out, nullptr);
  check_launch(
      launch_avg_pool(true, self.dtype(), s, false, 0, out.data(), self.data(), stream_of(ctx)),
      op);
  return out;
}

// grid_sampler_2d's shape: input [N, C, H, W], grid [N, out_h, out_w, 2], `out` the
// output or its gradient [N, C, out_h, out_w].
GridShape grid_shape(const char* op, const Tensor& input, const Tensor& grid, const Tensor& out,
                     int64_t interpolation, int64_t padding, bool align_corners) {
  if (input.dim() != 4 || grid.dim() != 4 || out.dim() != 4) {
    throw sdk::Error("[" + std::string(op) + "] expected a 4-d input, grid and output, found " +
                     std::to_string(input.dim()) + ", " + std::to_string(grid.dim()) + " and " +
                     std::to_string(out.dim()) + " dims");
  }
  if (interpolation < 0 || interpolation > 2 || padding < 0 || padding > 2) {
    throw sdk::Error("[" + std::string(op) +
                     "] expected interpolation and padding modes in [0, 2], found " +
                     std::to_string(interpolation) + " and " + std::to_string(padding));
  }
  GridShape s;
  s.batch = input.sizes()[0];
  s.channels = input.sizes()[1];
  s.in_h = input.sizes()[2];
  s.in_w = input.sizes()[3];
  s.out_h = out.sizes()[2];
  s.out_w = out.sizes()[3];
  for (int k = 0; k < 4; ++k) {
    s.in_strides[k] = input.strides()[k];
    s.grid_strides[k] = grid.strides()[k];
    s.out_strides[k] = out.strides()[k];
  }
  s.interpolation = interpolation;
  s.padding = padding;
  s.align_corners = align_corners;
  return s;
}

Tensor grid_sampler_2d_out(const DispatchContext& ctx, const Tensor& input, const Tensor& grid,
                           int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
                           const Tensor& out) {
  const char* op = "grid_sampler_2d";
  prepare(op, out, {&input, &grid});
  if (out.numel() == 0) return out;
  check_launch(launch_grid_sample(out.dtype(),
                                  grid_shape(op, input, grid, out, interpolation_mode, padding_mode,
                                             align_corners),
                                  input.data(), grid.data(), out.data(), stream_of(ctx)),
               op);
  return out;
}

std::tuple<Tensor, Tensor> grid_sampler_2d_backward_out(
    const DispatchContext& ctx, const Tensor& grad_output, const Tensor& input, const Tensor& grid,
    int64_t interpolation_mode, int64_t padding_mode, bool align_corners, const Tensor& grad_input,
    const Tensor& grad_grid) {
  const char* op = "grid_sampler_2d_backward";
  prepare(op, grad_input, {&grad_output, &input, &grid, &grad_grid});
  const Tensor* operands[1] = {&grad_input};
  check_launch(launch_fill(grad_input.dtype(), false, 0.0, 0, space_of(op, grad_input, operands),
                           grad_input.data(), stream_of(ctx)),
               op);
  if (grad_grid.numel() == 0) return {grad_input, grad_grid};
  GridBackwardStrides strides;
  for (int k = 0; k < 4; ++k) {
    strides.grad_input[k] = grad_input.strides()[k];
    strides.grad_grid[k] = grad_grid.strides()[k];
  }
  check_launch(
      launch_grid_sample_backward(
          input.dtype(),
          grid_shape(op, input, grid, grad_output, interpolation_mode, padding_mode, align_corners),
          strides, grad_output.data(), input.data(), grid.data(), grad_input.data(),
          grad_grid.data(), stream_of(ctx)),
      op);
  return {grad_input, grad_grid};
}

}  // namespace

void register_pool_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&max_pool2d_with_indices_out>("loom::max_pool2d_with_indices.out", key, floating);
  r.impl<&adaptive_max_pool2d_out>("loom::adaptive_max_pool2d.out", key, floating);
  r.impl<&avg_pool2d_out>("loom::avg_pool2d.out", key, floating);
  r.impl<&adaptive_avg_pool2d_out>("loom::adaptive_avg_pool2d.out", key, floating);
  r.impl<&grid_sampler_2d_out>("loom::grid_sampler_2d.out", key, floating);
  r.impl<&grid_sampler_2d_backward_out>("loom::grid_sampler_2d_backward.out", key, floating);
}

}  // namespace loom::gpu
