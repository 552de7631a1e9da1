// 2-D convolution on GPU tensors: conv2d, conv2d_backward_input and
// conv2d_backward_weight for the floating dtypes (float16 and bfloat16 accumulating in
// float), any groups, stride, padding and dilation, batched [N, C, H, W] or unbatched
// [C, H, W] inputs. The passes run through cuDNN on CUDA (conv_cudnn.cc) and through
// loom's implicit-GEMM kernels (conv.cu, Note [Implicit-GEMM convolution]) on ROCm,
// whose Debian packages have no MIOpen, and on CUDA with the manifest option conv:
// "loom". Both take packed NCHW operands: a non-contiguous operand goes through a
// contiguous copy, and an output that is not dense through a temporary.
#include <optional>
#include <span>
#include <string>

#include "../kernels/launch.h"
#include "op_support.h"

#if LOOM_GPU_VENDOR_LIBRARIES
#include "conv_cudnn.h"
#endif

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

// True when the passes run on loom's kernels: always on ROCm, on CUDA when the
// manifest's "conv" option is "loom" (how they are checked against cuDNN).
#if !LOOM_GPU_VENDOR_LIBRARIES
constexpr bool g_loom_conv = true;
#else
bool g_loom_conv = false;
#endif

// [N, C, H, W] sizes of a 4-d tensor's shape, or of a 3-d one as a batch of one.
std::array<int64_t, 4> nchw(std::span<const int64_t> sizes) {
  if (sizes.size() == 3) return {1, sizes[0], sizes[1], sizes[2]};
  return {sizes[0], sizes[1], sizes[2], sizes[3]};
}

// One value of an int list for both dims (a single entry is used for both).
void pair_into(std::span<const int64_t> v, int64_t& h, int64_t& w, int64_t fallback) {
  h = v.empty() ? fallback : v[0];
  w = v.empty() ? fallback : (v.size() == 1 ? v[0] : v[1]);
}

ConvGeometry geometry(const char* op, std::span<const int64_t> input,
                      std::span<const int64_t> weight, std::span<const int64_t> output,
                      std::span<const int64_t> stride, std::span<const int64_t> padding,
                      std::span<const int64_t> dilation, int64_t groups) {
  if ((input.size() != 3 && input.size() != 4) || weight.size() != 4 ||
      output.size() != input.size()) {
    throw sdk::Error("[" + std::string(op) +
                     "] expected a 3-d or 4-d input and output and a 4-d weight, found " +
                     std::to_string(input.size()) + ", " + std::to_string(output.size()) + " and " +
                     std::to_string(weight.size()) + " dims");
  }
  const std::array<int64_t, 4> x = nchw(input), w = nchw(weight), y = nchw(output);
  ConvGeometry g;
  g.batch = x[0];
  g.channels = x[1];
  g.height = x[2];
  g.width = x[3];
  g.out_channels = w[0];
  g.kernel_h = w[2];
  g.kernel_w = w[3];
  g.out_h = y[2];
  g.out_w = y[3];
  g.groups = groups;
  pair_into(stride, g.stride_h, g.stride_w, 1);
  pair_into(padding, g.pad_h, g.pad_w, 0);
  pair_into(dilation, g.dilation_h, g.dilation_w, 1);
  const char* wrong = conv_geometry_error(g);
  if (wrong == nullptr && (w[1] != g.group_channels() || y[0] != g.batch || y[1] != w[0])) {
    wrong = "the weight's input channels or the output's batch or channels do not match";
  }
  if (wrong != nullptr) throw sdk::Error("[" + std::string(op) + "] " + wrong);
  return g;
}

// t itself when it is packed in `dtype`, else a packed copy.
Tensor packed(const DispatchContext& ctx, const char* op, const Tensor& t, int32_t dtype) {
  return t.is_contiguous() && t.dtype() == dtype ? t : contiguous(ctx, op, t, dtype);
}

// Runs `compute(target)` into out: out itself when it is dense, else a temporary copied
// into out after.
template <typename F>
void into(const DispatchContext& ctx, const char* op, const Tensor& out, F&& compute) {
  if (out.is_contiguous()) {
    compute(out);
    return;
  }
  Tensor temp = sdk::empty(out.sizes(), out.dtype(), out.device());
  compute(temp);
  copy_into(ctx, op, out, temp);
}

void fill_zero(const DispatchContext& ctx, const char* op, const Tensor& out) {
  const Tensor* operands[1] = {&out};
  check_launch(launch_fill(out.dtype(), false, 0.0, 0, space_of(op, out, operands), out.data(),
                           stream_of(ctx)),
               op);
}

Tensor conv2d_out(const DispatchContext& ctx, const Tensor& input, const Tensor& weight,
                  const std::optional<Tensor>& bias, std::span<const int64_t> stride,
                  std::span<const int64_t> padding, std::span<const int64_t> dilation,
                  int64_t groups, const Tensor& out) {
  const char* op = "conv2d";
  prepare(op, out, {&input, &weight});
  if (bias) prepare(op, out, {&*bias});
  if (out.numel() == 0) return out;
  const int32_t dtype = out.dtype();
  const ConvGeometry g =
      geometry(op, input.sizes(), weight.sizes(), out.sizes(), stride, padding, dilation, groups);
  const Tensor x = packed(ctx, op, input, dtype), w = packed(ctx, op, weight, dtype);
  std::optional<Tensor> b;
  if (bias) b = packed(ctx, op, *bias, dtype);
  const void* bias_data = b ? b->data() : nullptr;
  into(ctx, op, out, [&](const Tensor& y) {
    if (g_loom_conv) {
      check_launch(launch_conv2d(dtype, g, y.data(), x.data(), w.data(), bias_data, stream_of(ctx)),
                   op);
      return;
    }
#if LOOM_GPU_VENDOR_LIBRARIES
    cudnn_conv2d(ctx, op, dtype, g, y.device(), y.data(), x.data(), w.data(), bias_data);
#endif
  });
  return out;
}

Tensor conv2d_backward_input_out(const DispatchContext& ctx, const Tensor& grad_output,
                                 const Tensor& weight, std::span<const int64_t> input_size,
                                 std::span<const int64_t> stride, std::span<const int64_t> padding,
                                 std::span<const int64_t> dilation, int64_t groups,
                                 const Tensor& out) {
  const char* op = "conv2d_backward_input";
  prepare(op, out, {&grad_output, &weight});
  if (out.numel() == 0) return out;
  if (grad_output.numel() == 0) {
    fill_zero(ctx, op, out);
    return out;
  }
  const int32_t dtype = out.dtype();
  const ConvGeometry g = geometry(op, input_size, weight.sizes(), grad_output.sizes(), stride,
                                  padding, dilation, groups);
  const Tensor dy = packed(ctx, op, grad_output, dtype), w = packed(ctx, op, weight, dtype);
  into(ctx, op, out, [&](const Tensor& dx) {
    if (g_loom_conv) {
      check_launch(
          launch_conv2d_backward_input(dtype, g, dx.data(), dy.data(), w.data(), stream_of(ctx)),
          op);
      return;
    }
#if LOOM_GPU_VENDOR_LIBRARIES
    cudnn_conv2d_backward_input(ctx, op, dtype, g, dx.device(), dx.data(), dy.data(), w.data());
#endif
  });
  return out;
}

Tensor conv2d_backward_weight_out(const DispatchContext& ctx, const Tensor& grad_output,
                                  const Tensor& input, std::span<const int64_t> weight_size,
                                  std::span<const int64_t> stride, std::span<const int64_t> padding,
                                  std::span<const int64_t> dilation, int64_t groups,
                                  const Tensor& out) {
  const char* op = "conv2d_backward_weight";
  prepare(op, out, {&grad_output, &input});
  if (out.numel() == 0) return out;
  if (grad_output.numel() == 0 || input.numel() == 0) {  // an empty batch adds nothing
    fill_zero(ctx, op, out);
    return out;
  }
  const int32_t dtype = out.dtype();
  const ConvGeometry g = geometry(op, input.sizes(), weight_size, grad_output.sizes(), stride,
                                  padding, dilation, groups);
  const Tensor dy = packed(ctx, op, grad_output, dtype), x = packed(ctx, op, input, dtype);
  into(ctx, op, out, [&](const Tensor& dw) {
    if (g_loom_conv) {
      std::optional<Tensor> workspace;
      if (const size_t bytes = conv2d_backward_weight_workspace(dtype, g)) {
        workspace = sdk::empty({static_cast<int64_t>(bytes)}, LOOM_DTYPE_UINT8, dw.device());
      }
      check_launch(
          launch_conv2d_backward_weight(dtype, g, dw.data(), dy.data(), x.data(),
                                        workspace ? workspace->data() : nullptr, stream_of(ctx)),
          op);
      return;
    }
#if LOOM_GPU_VENDOR_LIBRARIES
    cudnn_conv2d_backward_weight(ctx, op, dtype, g, dw.device(), dw.data(), dy.data(), x.data());
#endif
  });
  return out;
}

}  // namespace

void register_conv_ops(sdk::Registrar& r, uint32_t key) {
  const bool loom_conv = loom_kernels_option(r, "conv");  // ROCm: loom's either way
#if LOOM_GPU_VENDOR_LIBRARIES
  g_loom_conv = loom_conv;
  set_cudnn_api(r);
#else
  (void)loom_conv;
#endif
  r.impl<&conv2d_out>("loom::conv2d.out", key, sdk::dtypes::floating);
  r.impl<&conv2d_backward_input_out>("loom::conv2d_backward_input.out", key, sdk::dtypes::floating);
  r.impl<&conv2d_backward_weight_out>("loom::conv2d_backward_weight.out", key,
                                      sdk::dtypes::floating);
}

}  // namespace loom::gpu
