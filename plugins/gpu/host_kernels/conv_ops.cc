// 2-D convolution on GPU tensors through cuDNN: conv2d (with its bias added by
// cudnnAddTensor), conv2d_backward_input and conv2d_backward_weight, for float16,
// bfloat16 (accumulating in float), float32 and float64, any groups, stride, padding and
// dilation, batched [N, C, H, W] or unbatched [C, H, W] inputs.
//
// Note [Convolution plans]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A plan is the cuDNN descriptors of one problem (the op, dtype, the input, weight and
// output sizes, stride, padding, dilation, groups) and the algorithm cuDNN's heuristics
// (cudnnGet*Algorithm_v7, as PyTorch with cudnn.benchmark off) rank first among those
// that are deterministic, falling back to the first that runs at all; plans are cached
// per thread and device, so a training loop pays the query once per layer. Float32 uses
// TF32 tensor cores only when the manifest's "allow_tf32" option is "true" (the option
// the matmul family reads); PyTorch's cudnn.allow_tf32 defaults to on, so compare
// against it with that flag off. Operands are handed to cuDNN packed (NCHW): a
// non-contiguous operand goes through a contiguous copy, and an output that is not dense
// through a temporary.
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

#if !defined(LOOM_GPU_HIP)
#include <cudnn.h>
#endif

namespace loom::gpu {

#if !defined(LOOM_GPU_HIP)
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

void check_dnn(cudnnStatus_t status, const char* op, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw sdk::Error("[" + std::string(op) + "] cuDNN " + what +
                     " failed: " + cudnnGetErrorString(status));
  }
}

// One handle per thread and device (cuDNN handles are not thread-safe).
cudnnHandle_t dnn_handle(int device, const char* op) {
  thread_local std::vector<cudnnHandle_t> handles;
  if (device >= static_cast<int>(handles.size())) handles.resize(device + 1, nullptr);
  if (handles[device] == nullptr) check_dnn(cudnnCreate(&handles[device]), op, "cudnnCreate");
  return handles[device];
}

cudnnDataType_t dnn_type(const char* op, int32_t dtype) {
  switch (dtype) {
    case LOOM_DTYPE_FLOAT16:
      return CUDNN_DATA_HALF;
    case LOOM_DTYPE_BFLOAT16:
      return CUDNN_DATA_BFLOAT16;
    case LOOM_DTYPE_FLOAT32:
      return CUDNN_DATA_FLOAT;
    case LOOM_DTYPE_FLOAT64:
      return CUDNN_DATA_DOUBLE;
    default:
      throw sdk::Error("[" + std::string(op) + "] expected a floating dtype, found dtype " +
                       std::to_string(dtype));
  }
}

enum class ConvKind : int64_t { Forward, BackwardData, BackwardFilter };

// What identifies a plan: kind, dtype, input [n, c, h, w], weight [oc, c/g, kh, kw],
// output [n, oc, oh, ow], stride, padding, dilation, groups.
using PlanKey = std::array<int64_t, 21>;

struct ConvProblem {
  ConvKind kind;
  int32_t dtype;
  std::array<int64_t, 4> input, weight, output;
  int64_t stride[2], padding[2], dilation[2], groups;

  PlanKey key() const {
    return {static_cast<int64_t>(kind),
            dtype,
            input[0],
            input[1],
            input[2],
            input[3],
            weight[0],
            weight[1],
            weight[2],
            weight[3],
            output[1],
            output[2],
            output[3],
            stride[0],
            stride[1],
            padding[0],
            padding[1],
            dilation[0],
            dilation[1],
            groups,
            g_allow_tf32 ? 1 : 0};
  }
};

// cuDNN descriptors of a problem and the chosen algorithm (Note [Convolution plans]).
struct ConvPlan {
  cudnnTensorDescriptor_t input = nullptr, output = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t weight = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algorithm = 0;  // of the kind's cudnnConvolution*Algo_t
  size_t workspace_bytes = 0;

  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan() {
    if (input) cudnnDestroyTensorDescriptor(input);
    if (output) cudnnDestroyTensorDescriptor(output);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (weight) cudnnDestroyFilterDescriptor(weight);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

void packed_4d(cudnnTensorDescriptor_t desc, cudnnDataType_t type, const std::array<int64_t, 4>& s,
               const char* op) {
  check_dnn(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, type, static_cast<int>(s[0]),
                                       static_cast<int>(s[1]), static_cast<int>(s[2]),
                                       static_cast<int>(s[3])),
            op, "cudnnSetTensor4dDescriptor");
}

// Picks the first deterministic algorithm of a ranked list that runs, else the first
// that runs at all.
template <typename Perf>
const Perf* choose(const Perf* perfs, int count) {
  for (int i = 0; i < count; ++i) {
    if (perfs[i].status == CUDNN_STATUS_SUCCESS && perfs[i].determinism == CUDNN_DETERMINISTIC) {
      return &perfs[i];
    }
  }
  for (int i = 0; i < count; ++i) {
    if (perfs[i].status == CUDNN_STATUS_SUCCESS) return &perfs[i];
  }
  return nullptr;
}

std::unique_ptr<ConvPlan> make_plan(cudnnHandle_t handle, const ConvProblem& p, const char* op) {
  auto plan = std::make_unique<ConvPlan>();
  const cudnnDataType_t type = dnn_type(op, p.dtype);
  check_dnn(cudnnCreateTensorDescriptor(&plan->input), op, "cudnnCreateTensorDescriptor");
  check_dnn(cudnnCreateTensorDescriptor(&plan->output), op, "cudnnCreateTensorDescriptor");
  check_dnn(cudnnCreateFilterDescriptor(&plan->weight), op, "cudnnCreateFilterDescriptor");
  check_dnn(cudnnCreateConvolutionDescriptor(&plan->conv), op, "cudnnCreateConvolutionDescriptor");
  packed_4d(plan->input, type, p.input, op);
  packed_4d(plan->output, type, p.output, op);
  if (p.kind == ConvKind::Forward) {  // conv2d's bias, [1, oc, 1, 1] broadcast by cudnnAddTensor
    check_dnn(cudnnCreateTensorDescriptor(&plan->bias), op, "cudnnCreateTensorDescriptor");
    packed_4d(plan->bias, type, {1, p.output[1], 1, 1}, op);
  }
  check_dnn(
      cudnnSetFilter4dDescriptor(plan->weight, type, CUDNN_TENSOR_NCHW,
                                 static_cast<int>(p.weight[0]), static_cast<int>(p.weight[1]),
                                 static_cast<int>(p.weight[2]), static_cast<int>(p.weight[3])),
      op, "cudnnSetFilter4dDescriptor");
  const cudnnDataType_t compute = type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  check_dnn(cudnnSetConvolution2dDescriptor(
                plan->conv, static_cast<int>(p.padding[0]), static_cast<int>(p.padding[1]),
                static_cast<int>(p.stride[0]), static_cast<int>(p.stride[1]),
                static_cast<int>(p.dilation[0]), static_cast<int>(p.dilation[1]),
                CUDNN_CROSS_CORRELATION, compute),
            op, "cudnnSetConvolution2dDescriptor");
  check_dnn(cudnnSetConvolutionGroupCount(plan->conv, static_cast<int>(p.groups)), op,
            "cudnnSetConvolutionGroupCount");
  cudnnMathType_t math = CUDNN_TENSOR_OP_MATH;  // float16 / bfloat16
  if (type == CUDNN_DATA_FLOAT) {
    math = g_allow_tf32 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : CUDNN_FMA_MATH;
  } else if (type == CUDNN_DATA_DOUBLE) {
    math = CUDNN_DEFAULT_MATH;
  }
  check_dnn(cudnnSetConvolutionMathType(plan->conv, math), op, "cudnnSetConvolutionMathType");

  constexpr int kMaxAlgorithms = 16;
  int count = 0;
  switch (p.kind) {
    case ConvKind::Forward: {
      cudnnConvolutionFwdAlgoPerf_t perfs[kMaxAlgorithms];
      check_dnn(
          cudnnGetConvolutionForwardAlgorithm_v7(handle, plan->input, plan->weight, plan->conv,
                                                 plan->output, kMaxAlgorithms, &count, perfs),
          op, "cudnnGetConvolutionForwardAlgorithm_v7");
      const auto* best = choose(perfs, count);
      if (best == nullptr) break;
      plan->algorithm = best->algo;
      check_dnn(
          cudnnGetConvolutionForwardWorkspaceSize(handle, plan->input, plan->weight, plan->conv,
                                                  plan->output, best->algo, &plan->workspace_bytes),
          op, "cudnnGetConvolutionForwardWorkspaceSize");
      return plan;
    }
    case ConvKind::BackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perfs[kMaxAlgorithms];
      check_dnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, plan->weight, plan->output,
                                                            plan->conv, plan->input, kMaxAlgorithms,
                                                            &count, perfs),
                op, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      const auto* best = choose(perfs, count);
      if (best == nullptr) break;
      plan->algorithm = best->algo;
      check_dnn(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, plan->weight, plan->output,
                                                             plan->conv, plan->input, best->algo,
                                                             &plan->workspace_bytes),
                op, "cudnnGetConvolutionBackwardDataWorkspaceSize");
      return plan;
    }
    case ConvKind::BackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perfs[kMaxAlgorithms];
      check_dnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, plan->input, plan->output,
                                                              plan->conv, plan->weight,
                                                              kMaxAlgorithms, &count, perfs),
                op, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      const auto* best = choose(perfs, count);
      if (best == nullptr) break;
      plan->algorithm = best->algo;
      check_dnn(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, plan->input, plan->output,
                                                               plan->conv, plan->weight, best->algo,
                                                               &plan->workspace_bytes),
                op, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      return plan;
    }
  }
  throw sdk::Error("[" + std::string(op) + "] cuDNN has no algorithm for this convolution (dtype " +
                   std::to_string(p.dtype) + ", groups " + std::to_string(p.groups) + ")");
}

const ConvPlan& plan_for(cudnnHandle_t handle, int device, const ConvProblem& p, const char* op) {
  thread_local std::vector<std::map<PlanKey, std::unique_ptr<ConvPlan>>> plans;
  if (device >= static_cast<int>(plans.size())) plans.resize(device + 1);
  std::unique_ptr<ConvPlan>& slot = plans[device][p.key()];
  if (!slot) slot = make_plan(handle, p, op);
  return *slot;
}

// [N, C, H, W] sizes of a 4-d tensor's shape, or of a 3-d one as a batch of one.
std::array<int64_t, 4> nchw(std::span<const int64_t> sizes) {
  if (sizes.size() == 3) return {1, sizes[0], sizes[1], sizes[2]};
  return {sizes[0], sizes[1], sizes[2], sizes[3]};
}

void pair_into(std::span<const int64_t> v, int64_t (&pair)[2], int64_t fallback) {
  pair[0] = v.empty() ? fallback : v[0];
  pair[1] = v.empty() ? fallback : (v.size() == 1 ? v[0] : v[1]);
}

ConvProblem problem(ConvKind kind, int32_t dtype, std::span<const int64_t> input,
                    std::span<const int64_t> weight, std::span<const int64_t> output,
                    std::span<const int64_t> stride, std::span<const int64_t> padding,
                    std::span<const int64_t> dilation, int64_t groups, const char* op) {
  if ((input.size() != 3 && input.size() != 4) || weight.size() != 4 ||
      output.size() != input.size()) {
    throw sdk::Error("[" + std::string(op) +
                     "] expected a 3-d or 4-d input and output and a 4-d weight, found " +
                     std::to_string(input.size()) + ", " + std::to_string(output.size()) + " and " +
                     std::to_string(weight.size()) + " dims");
  }
  ConvProblem p{kind, dtype, nchw(input), nchw(weight), nchw(output), {}, {}, {}, groups};
  pair_into(stride, p.stride, 1);
  pair_into(padding, p.padding, 0);
  pair_into(dilation, p.dilation, 1);
  return p;
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
  const Tensor* operands[2] = {&out, &temp};
  check_launch(launch_copy(out.dtype(), temp.dtype(), space_of(op, out, operands), out.data(),
                           temp.data(), stream_of(ctx)),
               op);
}

void fill_zero(const DispatchContext& ctx, const char* op, const Tensor& out) {
  const Tensor* operands[1] = {&out};
  check_launch(launch_fill(out.dtype(), false, 0.0, 0, space_of(op, out, operands), out.data(),
                           stream_of(ctx)),
               op);
}

// What one cuDNN call needs: the handle on the call's stream, the problem's plan, its
// workspace (from the caching allocator, on that stream), and alpha / beta (double for
// float64 data, float otherwise).
struct ConvCall {
  cudnnHandle_t handle = nullptr;
  const ConvPlan* plan = nullptr;
  std::optional<Tensor> workspace;
  int32_t dtype = 0;
  float f_one = 1, f_zero = 0;
  double d_one = 1, d_zero = 0;

  void* workspace_data() const { return workspace ? workspace->data() : nullptr; }
  const void* one() const {
    return dtype == LOOM_DTYPE_FLOAT64 ? static_cast<const void*>(&d_one) : &f_one;
  }
  const void* zero() const {
    return dtype == LOOM_DTYPE_FLOAT64 ? static_cast<const void*>(&d_zero) : &f_zero;
  }
};

ConvCall start_call(const DispatchContext& ctx, const char* op, const ConvProblem& p,
                    const Tensor& out) {
  const int device = out.device().index;
  ConvCall c;
  c.handle = dnn_handle(device, op);
  c.dtype = p.dtype;
  check_dnn(cudnnSetStream(c.handle, stream_of(ctx)), op, "cudnnSetStream");
  c.plan = &plan_for(c.handle, device, p, op);
  if (c.plan->workspace_bytes > 0) {
    c.workspace =
        sdk::empty({static_cast<int64_t>(c.plan->workspace_bytes)}, LOOM_DTYPE_UINT8, out.device());
  }
  return c;
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
  const ConvCall c = start_call(ctx, op,
                                problem(ConvKind::Forward, dtype, input.sizes(), weight.sizes(),
                                        out.sizes(), stride, padding, dilation, groups, op),
                                out);
  const Tensor x = packed(ctx, op, input, dtype), w = packed(ctx, op, weight, dtype);
  into(ctx, op, out, [&](const Tensor& y) {
    check_dnn(cudnnConvolutionForward(
                  c.handle, c.one(), c.plan->input, x.data(), c.plan->weight, w.data(),
                  c.plan->conv, static_cast<cudnnConvolutionFwdAlgo_t>(c.plan->algorithm),
                  c.workspace_data(), c.plan->workspace_bytes, c.zero(), c.plan->output, y.data()),
              op, "cudnnConvolutionForward");
    if (!bias) return;
    const Tensor b = packed(ctx, op, *bias, dtype);
    check_dnn(cudnnAddTensor(c.handle, c.one(), c.plan->bias, b.data(), c.one(), c.plan->output,
                             y.data()),
              op, "cudnnAddTensor");
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
  const ConvCall c = start_call(ctx, op,
                                problem(ConvKind::BackwardData, dtype, input_size, weight.sizes(),
                                        grad_output.sizes(), stride, padding, dilation, groups, op),
                                out);
  const Tensor dy = packed(ctx, op, grad_output, dtype), w = packed(ctx, op, weight, dtype);
  into(ctx, op, out, [&](const Tensor& dx) {
    check_dnn(cudnnConvolutionBackwardData(
                  c.handle, c.one(), c.plan->weight, w.data(), c.plan->output, dy.data(),
                  c.plan->conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(c.plan->algorithm),
                  c.workspace_data(), c.plan->workspace_bytes, c.zero(), c.plan->input, dx.data()),
              op, "cudnnConvolutionBackwardData");
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
  const ConvCall c = start_call(ctx, op,
                                problem(ConvKind::BackwardFilter, dtype, input.sizes(), weight_size,
                                        grad_output.sizes(), stride, padding, dilation, groups, op),
                                out);
  const Tensor dy = packed(ctx, op, grad_output, dtype), x = packed(ctx, op, input, dtype);
  into(ctx, op, out, [&](const Tensor& dw) {
    check_dnn(cudnnConvolutionBackwardFilter(
                  c.handle, c.one(), c.plan->input, x.data(), c.plan->output, dy.data(),
                  c.plan->conv, static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.plan->algorithm),
                  c.workspace_data(), c.plan->workspace_bytes, c.zero(), c.plan->weight, dw.data()),
              op, "cudnnConvolutionBackwardFilter");
  });
  return out;
}

}  // namespace

void register_conv_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&conv2d_out>("loom::conv2d.out", key, sdk::dtypes::floating);
  r.impl<&conv2d_backward_input_out>("loom::conv2d_backward_input.out", key, sdk::dtypes::floating);
  r.impl<&conv2d_backward_weight_out>("loom::conv2d_backward_weight.out", key,
                                      sdk::dtypes::floating);
}
#else
// ROCm: Debian ships no MIOpen; loom's own implicit-GEMM convolution is not written yet,
// so the convolution family is not registered on the ROCm plugin.
void register_conv_ops(sdk::Registrar&, uint32_t) {}
#endif

}  // namespace loom::gpu
