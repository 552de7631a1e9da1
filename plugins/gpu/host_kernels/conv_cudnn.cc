// The CUDA plugin's 2-D convolution passes through cuDNN: conv2d (its bias added by
// cudnnAddTensor), the input gradient and the weight gradient, for float16, bfloat16
// (accumulating in float), float32 and float64, any groups, stride, padding and
// dilation, over packed NCHW operands (conv_ops.cc packs them).
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
// against it with that flag off.
#include "conv_cudnn.h"

#include <cudnn.h>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "op_support.h"

namespace loom::gpu {

using sdk::DispatchContext;
using sdk::Tensor;

namespace {

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

// What identifies a plan: kind, dtype, the geometry's sizes, stride, padding, dilation,
// groups, and whether TF32 is allowed.
using PlanKey = std::array<int64_t, 19>;

struct ConvProblem {
  ConvKind kind;
  int32_t dtype;
  ConvGeometry g;

  std::array<int64_t, 4> input() const { return {g.batch, g.channels, g.height, g.width}; }
  std::array<int64_t, 4> weight() const {
    return {g.out_channels, g.group_channels(), g.kernel_h, g.kernel_w};
  }
  std::array<int64_t, 4> output() const { return {g.batch, g.out_channels, g.out_h, g.out_w}; }
  PlanKey key() const {
    return {static_cast<int64_t>(kind),
            dtype,
            g.batch,
            g.channels,
            g.height,
            g.width,
            g.out_channels,
            g.kernel_h,
            g.kernel_w,
            g.out_h,
            g.out_w,
            g.stride_h,
            g.stride_w,
            g.pad_h,
            g.pad_w,
            g.dilation_h,
            g.dilation_w,
            g.groups,
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
  packed_4d(plan->input, type, p.input(), op);
  packed_4d(plan->output, type, p.output(), op);
  if (p.kind == ConvKind::Forward) {  // conv2d's bias, [1, oc, 1, 1] broadcast by cudnnAddTensor
    check_dnn(cudnnCreateTensorDescriptor(&plan->bias), op, "cudnnCreateTensorDescriptor");
    packed_4d(plan->bias, type, {1, p.g.out_channels, 1, 1}, op);
  }
  const std::array<int64_t, 4> w = p.weight();
  check_dnn(cudnnSetFilter4dDescriptor(plan->weight, type, CUDNN_TENSOR_NCHW,
                                       static_cast<int>(w[0]), static_cast<int>(w[1]),
                                       static_cast<int>(w[2]), static_cast<int>(w[3])),
            op, "cudnnSetFilter4dDescriptor");
  const cudnnDataType_t compute = type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  check_dnn(cudnnSetConvolution2dDescriptor(
                plan->conv, static_cast<int>(p.g.pad_h), static_cast<int>(p.g.pad_w),
                static_cast<int>(p.g.stride_h), static_cast<int>(p.g.stride_w),
                static_cast<int>(p.g.dilation_h), static_cast<int>(p.g.dilation_w),
                CUDNN_CROSS_CORRELATION, compute),
            op, "cudnnSetConvolution2dDescriptor");
  check_dnn(cudnnSetConvolutionGroupCount(plan->conv, static_cast<int>(p.g.groups)), op,
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
                   std::to_string(p.dtype) + ", groups " + std::to_string(p.g.groups) + ")");
}

const ConvPlan& plan_for(cudnnHandle_t handle, int device, const ConvProblem& p, const char* op) {
  thread_local std::vector<std::map<PlanKey, std::unique_ptr<ConvPlan>>> plans;
  if (device >= static_cast<int>(plans.size())) plans.resize(device + 1);
  std::unique_ptr<ConvPlan>& slot = plans[device][p.key()];
  if (!slot) slot = make_plan(handle, p, op);
  return *slot;
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
                    LoomDevice device) {
  ConvCall c;
  c.handle = dnn_handle(device.index, op);
  c.dtype = p.dtype;
  check_dnn(cudnnSetStream(c.handle, stream_of(ctx)), op, "cudnnSetStream");
  c.plan = &plan_for(c.handle, device.index, p, op);
  if (c.plan->workspace_bytes > 0) {
    c.workspace =
        sdk::empty({static_cast<int64_t>(c.plan->workspace_bytes)}, LOOM_DTYPE_UINT8, device);
  }
  return c;
}

}  // namespace

void cudnn_conv2d(const DispatchContext& ctx, const char* op, int32_t dtype, const ConvGeometry& g,
                  LoomDevice device, void* out, const void* input, const void* weight,
                  const void* bias) {
  const ConvCall c = start_call(ctx, op, {ConvKind::Forward, dtype, g}, device);
  check_dnn(cudnnConvolutionForward(
                c.handle, c.one(), c.plan->input, input, c.plan->weight, weight, c.plan->conv,
                static_cast<cudnnConvolutionFwdAlgo_t>(c.plan->algorithm), c.workspace_data(),
                c.plan->workspace_bytes, c.zero(), c.plan->output, out),
            op, "cudnnConvolutionForward");
  if (bias == nullptr) return;
  check_dnn(cudnnAddTensor(c.handle, c.one(), c.plan->bias, bias, c.one(), c.plan->output, out), op,
            "cudnnAddTensor");
}

void cudnn_conv2d_backward_input(const DispatchContext& ctx, const char* op, int32_t dtype,
                                 const ConvGeometry& g, LoomDevice device, void* grad_input,
                                 const void* grad_output, const void* weight) {
  const ConvCall c = start_call(ctx, op, {ConvKind::BackwardData, dtype, g}, device);
  check_dnn(cudnnConvolutionBackwardData(
                c.handle, c.one(), c.plan->weight, weight, c.plan->output, grad_output,
                c.plan->conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(c.plan->algorithm),
                c.workspace_data(), c.plan->workspace_bytes, c.zero(), c.plan->input, grad_input),
            op, "cudnnConvolutionBackwardData");
}

void cudnn_conv2d_backward_weight(const DispatchContext& ctx, const char* op, int32_t dtype,
                                  const ConvGeometry& g, LoomDevice device, void* grad_weight,
                                  const void* grad_output, const void* input) {
  const ConvCall c = start_call(ctx, op, {ConvKind::BackwardFilter, dtype, g}, device);
  check_dnn(cudnnConvolutionBackwardFilter(
                c.handle, c.one(), c.plan->input, input, c.plan->output, grad_output, c.plan->conv,
                static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.plan->algorithm), c.workspace_data(),
                c.plan->workspace_bytes, c.zero(), c.plan->weight, grad_weight),
            op, "cudnnConvolutionBackwardFilter");
}

}  // namespace loom::gpu
