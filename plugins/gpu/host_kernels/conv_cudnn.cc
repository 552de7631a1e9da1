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
//
// Note [cuDNN graph plans]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// cuDNN 9's legacy calls (cudnnConvolutionForward and the two backward calls) build an
// execution plan on every call: with the algorithm cached they still took 144-173 us of
// host time each on an H100 (tools/bench/README.md), most of a small CNN step's host
// time. PyTorch goes through cuDNN's graph (backend) API and caches execution plans, and
// so does loom: a problem's graph plan is built once per thread and device (its key adds
// the three pointers' alignment, up to 16 bytes, to the legacy key). It holds the tensor
// descriptors of the packed input, weight and output (unique ids 1, 2, 3), the
// convolution and its operation, the operation graph, and the execution plan of the
// first engine configuration that finalises, from the heuristics' list (mode A, then the
// fallback list) in this order: deterministic engines without runtime compilation, then
// nondeterministic ones, then runtime-compiled ones. Float32 never takes an engine with
// the TENSOR_CORE or DOWN_CONVERT_INPUTS note (TF32, for float data) unless
// "allow_tf32" is "true", and float64 never a down-converting one. A call then builds
// only a variant pack (three pointers and the workspace) and executes the plan. The
// manifest option "cudnn" picks the API: "auto" (the default) takes the legacy plan for
// a problem the graph API has no plan for; "graph" raises that refusal as the op's
// error (how the tests know the graph path ran); "legacy" keeps the legacy calls.
#include "conv_cudnn.h"

#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "op_support.h"

namespace loom::gpu {

using sdk::DispatchContext;
using sdk::Tensor;

CudnnApi g_cudnn_api = CudnnApi::kAuto;

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

// --- graph plans (Note [cuDNN graph plans]) ---

// One backend descriptor, destroyed with its owner.
class BackendDescriptor {
 public:
  BackendDescriptor(cudnnBackendDescriptorType_t type, const char* op) {
    check_dnn(cudnnBackendCreateDescriptor(type, &d_), op, "cudnnBackendCreateDescriptor");
  }
  BackendDescriptor(BackendDescriptor&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept {
    std::swap(d_, other.d_);
    return *this;
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  ~BackendDescriptor() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  cudnnBackendDescriptor_t get() const { return d_; }
  // what: the attribute or descriptor, as the error names it
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* values, const char* op, const char* what) {
    refused(cudnnBackendSetAttribute(d_, name, type, count, values), op, "took no", what);
  }
  void finalize(const char* op, const char* what) {
    refused(cudnnBackendFinalize(d_), op, "could not finalise", what);
  }

 private:
  static void refused(cudnnStatus_t status, const char* op, const char* verb, const char* what) {
    if (status == CUDNN_STATUS_SUCCESS) return;
    throw sdk::Error("[" + std::string(op) + "] cuDNN's graph API " + verb + " " + what + ": " +
                     cudnnGetErrorString(status));
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

constexpr int64_t kInputId = 1, kWeightId = 2, kOutputId = 3;

// The largest power of two up to 16 that divides the address (cuDNN's byte alignment).
int64_t byte_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t alignment = 16;
  while (alignment > 1 && a % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

BackendDescriptor packed_tensor(const std::array<int64_t, 4>& sizes, cudnnDataType_t type,
                                int64_t id, int64_t alignment, const char* op) {
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, op);
  const std::array<int64_t, 4> strides = {sizes[1] * sizes[2] * sizes[3], sizes[2] * sizes[3],
                                          sizes[3], 1};
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, op, "a tensor's dtype");
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, sizes.data(), op, "a tensor's sizes");
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), op, "a tensor's strides");
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, op, "a tensor's id");
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, op,
        "a tensor's alignment");
  t.finalize(op, "a tensor descriptor");
  return t;
}

// An engine configuration's rank in the order of Note [cuDNN graph plans], or -1 when
// its numerics are not allowed for the dtype.
int engine_rank(cudnnBackendDescriptor_t config, cudnnDataType_t type, const char* op) {
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, op);
  cudnnBackendDescriptor_t engine_handle = engine.get();
  int64_t count = 0;
  check_dnn(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &engine_handle),
            op, "reading an engine configuration's engine");
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> numerics{};
  check_dnn(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                     CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                     &count, numerics.data()),
            op, "reading an engine's numerical notes");
  bool nondeterministic = false;
  for (int64_t i = 0; i < count; ++i) {
    const cudnnBackendNumericalNote_t note = numerics[i];
    if (note == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) nondeterministic = true;
    const bool full_precision = type == CUDNN_DATA_FLOAT || type == CUDNN_DATA_DOUBLE;
    if (full_precision && note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return -1;
    if (type == CUDNN_DATA_FLOAT && !g_allow_tf32 && note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) {
      return -1;
    }
  }
  std::array<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT> behaviour{};
  check_dnn(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                     CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                                     &count, behaviour.data()),
            op, "reading an engine's behaviour notes");
  const bool compiled_at_run_time =
      std::find(behaviour.begin(), behaviour.begin() + count,
                CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) != behaviour.begin() + count;
  return (compiled_at_run_time ? 2 : 0) + (nondeterministic ? 1 : 0);
}

// The heuristics' engine configurations of a graph in one mode.
std::vector<BackendDescriptor> engine_configs(cudnnBackendDescriptor_t graph,
                                              cudnnBackendHeurMode_t mode, const char* op) {
  BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, op);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph,
                 op, "the heuristics' graph");
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, op,
                 "the heuristics' mode");
  heuristics.finalize(op, "the heuristics");
  int64_t count = 0;
  check_dnn(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
            op, "reading the heuristics' result count");
  std::vector<BackendDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> handles;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, op);
    handles.push_back(configs.back().get());
  }
  int64_t returned = 0;
  check_dnn(
      cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, handles.data()),
      op, "reading the heuristics' results");
  configs.erase(configs.begin() + std::min(returned, count), configs.end());
  return configs;
}

// A problem's cached execution plan; a forward plan also keeps the legacy descriptors
// cudnnAddTensor adds conv2d's bias with.
struct GraphPlan {
  BackendDescriptor config;  // kept while its plan lives, as cudnn-frontend keeps it
  BackendDescriptor plan;
  int64_t workspace_bytes = 0;
  cudnnTensorDescriptor_t bias = nullptr, output = nullptr;

  GraphPlan(BackendDescriptor c, BackendDescriptor p) : config(std::move(c)), plan(std::move(p)) {}
  GraphPlan(const GraphPlan&) = delete;
  GraphPlan& operator=(const GraphPlan&) = delete;
  ~GraphPlan() {
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (output) cudnnDestroyTensorDescriptor(output);
  }
};

// The operation of a problem's kind over its three tensors.
BackendDescriptor convolution_operation(const ConvProblem& p, cudnnDataType_t type,
                                        const BackendDescriptor& input,
                                        const BackendDescriptor& weight,
                                        const BackendDescriptor& output, const char* op) {
  const cudnnDataType_t compute = type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  BackendDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, op);
  const int64_t spatial = 2;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::array<int64_t, 2> dilation = {p.g.dilation_h, p.g.dilation_w};
  const std::array<int64_t, 2> stride = {p.g.stride_h, p.g.stride_w};
  const std::array<int64_t, 2> padding = {p.g.pad_h, p.g.pad_w};
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, op,
           "the convolution's compute type");
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, op,
           "the convolution's mode");
  conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, op,
           "the convolution's spatial dims");
  conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data(), op,
           "the convolution's dilation");
  conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data(), op,
           "the convolution's stride");
  conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data(), op,
           "the convolution's padding");
  conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data(), op,
           "the convolution's padding");
  conv.finalize(op, "the convolution descriptor");

  struct Roles {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t alpha, beta, conv, input, weight, output;
  };
  Roles r{};
  switch (p.kind) {
    case ConvKind::Forward:
      r = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
      break;
    case ConvKind::BackwardData:
      r = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY};
      break;
    case ConvKind::BackwardFilter:
      r = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY};
      break;
  }
  BackendDescriptor operation(r.type, op);
  const double d_one = 1, d_zero = 0;
  const float f_one = 1, f_zero = 0;
  const bool is_double = compute == CUDNN_DATA_DOUBLE;
  const cudnnBackendAttributeType_t scale = is_double ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  operation.set(r.alpha, scale, 1, is_double ? static_cast<const void*>(&d_one) : &f_one, op,
                "the operation's alpha");
  operation.set(r.beta, scale, 1, is_double ? static_cast<const void*>(&d_zero) : &f_zero, op,
                "the operation's beta");
  cudnnBackendDescriptor_t handles[4] = {conv.get(), input.get(), weight.get(), output.get()};
  operation.set(r.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &handles[0], op,
                "the operation's convolution");
  operation.set(r.input, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &handles[1], op,
                "the operation's input");
  operation.set(r.weight, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &handles[2], op,
                "the operation's weight");
  operation.set(r.output, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &handles[3], op,
                "the operation's output");
  operation.finalize(op, "the convolution operation");
  return operation;
}

// The graph plan of a problem whose tensors have these alignments (Note [cuDNN graph
// plans]); an sdk::Error when cuDNN has none.
std::unique_ptr<GraphPlan> make_graph_plan(cudnnHandle_t handle, const ConvProblem& p,
                                           const std::array<int64_t, 3>& alignment,
                                           const char* op) {
  const cudnnDataType_t type = dnn_type(op, p.dtype);
  const BackendDescriptor input = packed_tensor(p.input(), type, kInputId, alignment[0], op);
  const BackendDescriptor weight = packed_tensor(p.weight(), type, kWeightId, alignment[1], op);
  const BackendDescriptor output = packed_tensor(p.output(), type, kOutputId, alignment[2], op);
  const BackendDescriptor operation = convolution_operation(p, type, input, weight, output, op);
  BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, op);
  cudnnBackendDescriptor_t operation_handle = operation.get();
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &operation_handle, op,
            "the graph's operation");
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, op,
            "the graph's handle");
  graph.finalize(op, "the operation graph");

  std::vector<std::pair<int, BackendDescriptor>> ranked;  // stable: the heuristics' order
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<BackendDescriptor> configs;
    try {
      configs = engine_configs(graph.get(), mode, op);
    } catch (const sdk::Error&) {
      continue;  // a mode with no list for this graph
    }
    for (BackendDescriptor& config : configs) {
      try {
        const int rank = engine_rank(config.get(), type, op);
        if (rank >= 0) ranked.emplace_back(rank, std::move(config));
      } catch (const sdk::Error&) {
        // an engine whose notes cannot be read is not taken
      }
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [rank, config] : ranked) {
    BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, op);
    cudnnBackendDescriptor_t config_handle = config.get();
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, op,
             "the plan's handle");
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &config_handle, op, "the plan's engine configuration");
    if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) continue;  // the next one
    auto result = std::make_unique<GraphPlan>(std::move(config), std::move(plan));
    int64_t count = 0;
    check_dnn(cudnnBackendGetAttribute(result->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                       CUDNN_TYPE_INT64, 1, &count, &result->workspace_bytes),
              op, "reading the plan's workspace size");
    if (p.kind == ConvKind::Forward) {
      check_dnn(cudnnCreateTensorDescriptor(&result->bias), op, "cudnnCreateTensorDescriptor");
      check_dnn(cudnnCreateTensorDescriptor(&result->output), op, "cudnnCreateTensorDescriptor");
      packed_4d(result->bias, type, {1, p.g.out_channels, 1, 1}, op);
      packed_4d(result->output, type, p.output(), op);
    }
    return result;
  }
  throw sdk::Error("[" + std::string(op) + "] cuDNN's graph API has no execution plan for this " +
                   "convolution (" + std::to_string(ranked.size()) +
                   " engine configurations allowed, none finalised)");
}

// The problem's graph plan, or null where cuDNN has none and the "cudnn" option is
// "auto" (the refusal is remembered, so the legacy plan serves that problem from then on).
const GraphPlan* graph_plan_for(cudnnHandle_t handle, int device, const ConvProblem& p,
                                const std::array<int64_t, 3>& alignment, const char* op) {
  using GraphKey = std::pair<PlanKey, std::array<int64_t, 3>>;
  thread_local std::vector<std::map<GraphKey, std::unique_ptr<GraphPlan>>> plans;
  if (device >= static_cast<int>(plans.size())) plans.resize(device + 1);
  auto [it, fresh] = plans[device].try_emplace({p.key(), alignment});
  // A refusal remembered under "auto" is tried again under "graph", which raises it.
  if (fresh || (it->second == nullptr && g_cudnn_api == CudnnApi::kGraph)) {
    try {
      it->second = make_graph_plan(handle, p, alignment, op);
    } catch (const sdk::Error&) {
      if (g_cudnn_api == CudnnApi::kGraph) {
        plans[device].erase(it);
        throw;
      }
    } catch (...) {
      plans[device].erase(it);
      throw;
    }
  }
  return it->second.get();
}

// What one cuDNN call needs: the handle on the call's stream, the problem's graph plan
// (or, where there is none or the "cudnn" option is "legacy", its legacy plan), its
// workspace (from the caching allocator, on that stream), and alpha / beta (double for
// float64 data, float otherwise).
struct ConvCall {
  cudnnHandle_t handle = nullptr;
  const GraphPlan* graph = nullptr;
  const ConvPlan* plan = nullptr;
  std::optional<Tensor> workspace;
  int32_t dtype = 0;
  float f_one = 1, f_zero = 0;
  double d_one = 1, d_zero = 0;

  void* workspace_data() const { return workspace ? workspace->data() : nullptr; }
  size_t workspace_bytes() const {
    return graph ? static_cast<size_t>(graph->workspace_bytes) : plan->workspace_bytes;
  }
  const void* one() const {
    return dtype == LOOM_DTYPE_FLOAT64 ? static_cast<const void*>(&d_one) : &f_one;
  }
  const void* zero() const {
    return dtype == LOOM_DTYPE_FLOAT64 ? static_cast<const void*>(&d_zero) : &f_zero;
  }
  // Runs the graph plan over the packed input, weight and output.
  void execute(const void* input, const void* weight, const void* output, const char* op) const {
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, op);
    void* pointers[3] = {const_cast<void*>(input), const_cast<void*>(weight),
                         const_cast<void*>(output)};
    const int64_t ids[3] = {kInputId, kWeightId, kOutputId};
    void* scratch = workspace_data();
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers, op,
             "the variant pack's pointers");
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids, op,
             "the variant pack's ids");
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &scratch, op,
             "the variant pack's workspace");
    pack.finalize(op, "the variant pack");
    check_dnn(cudnnBackendExecute(handle, graph->plan.get(), pack.get()), op,
              "cudnnBackendExecute");
  }
};

// pointers: the packed input, weight and output (their alignment picks the graph plan).
ConvCall start_call(const DispatchContext& ctx, const char* op, const ConvProblem& p,
                    LoomDevice device, const std::array<const void*, 3>& pointers) {
  ConvCall c;
  c.handle = dnn_handle(device.index, op);
  c.dtype = p.dtype;
  check_dnn(cudnnSetStream(c.handle, stream_of(ctx)), op, "cudnnSetStream");
  if (g_cudnn_api != CudnnApi::kLegacy) {
    const std::array<int64_t, 3> alignment = {
        byte_alignment(pointers[0]), byte_alignment(pointers[1]), byte_alignment(pointers[2])};
    c.graph = graph_plan_for(c.handle, device.index, p, alignment, op);
  }
  if (c.graph == nullptr) c.plan = &plan_for(c.handle, device.index, p, op);
  if (c.workspace_bytes() > 0) {
    c.workspace = sdk::empty({static_cast<int64_t>(c.workspace_bytes())}, LOOM_DTYPE_UINT8, device);
  }
  return c;
}

}  // namespace

void cudnn_conv2d(const DispatchContext& ctx, const char* op, int32_t dtype, const ConvGeometry& g,
                  LoomDevice device, void* out, const void* input, const void* weight,
                  const void* bias) {
  const ConvCall c =
      start_call(ctx, op, {ConvKind::Forward, dtype, g}, device, {input, weight, out});
  if (c.graph != nullptr) {
    c.execute(input, weight, out, op);
  } else {
    check_dnn(cudnnConvolutionForward(
                  c.handle, c.one(), c.plan->input, input, c.plan->weight, weight, c.plan->conv,
                  static_cast<cudnnConvolutionFwdAlgo_t>(c.plan->algorithm), c.workspace_data(),
                  c.plan->workspace_bytes, c.zero(), c.plan->output, out),
              op, "cudnnConvolutionForward");
  }
  if (bias == nullptr) return;
  const cudnnTensorDescriptor_t bias_desc = c.graph ? c.graph->bias : c.plan->bias;
  const cudnnTensorDescriptor_t out_desc = c.graph ? c.graph->output : c.plan->output;
  check_dnn(cudnnAddTensor(c.handle, c.one(), bias_desc, bias, c.one(), out_desc, out), op,
            "cudnnAddTensor");
}

void cudnn_conv2d_backward_input(const DispatchContext& ctx, const char* op, int32_t dtype,
                                 const ConvGeometry& g, LoomDevice device, void* grad_input,
                                 const void* grad_output, const void* weight) {
  const ConvCall c = start_call(ctx, op, {ConvKind::BackwardData, dtype, g}, device,
                                {grad_input, weight, grad_output});
  if (c.graph != nullptr) return c.execute(grad_input, weight, grad_output, op);
  check_dnn(cudnnConvolutionBackwardData(
                c.handle, c.one(), c.plan->weight, weight, c.plan->output, grad_output,
                c.plan->conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(c.plan->algorithm),
                c.workspace_data(), c.plan->workspace_bytes, c.zero(), c.plan->input, grad_input),
            op, "cudnnConvolutionBackwardData");
}

void cudnn_conv2d_backward_weight(const DispatchContext& ctx, const char* op, int32_t dtype,
                                  const ConvGeometry& g, LoomDevice device, void* grad_weight,
                                  const void* grad_output, const void* input) {
  const ConvCall c = start_call(ctx, op, {ConvKind::BackwardFilter, dtype, g}, device,
                                {input, grad_weight, grad_output});
  if (c.graph != nullptr) return c.execute(input, grad_weight, grad_output, op);
  check_dnn(cudnnConvolutionBackwardFilter(
                c.handle, c.one(), c.plan->input, input, c.plan->output, grad_output, c.plan->conv,
                static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.plan->algorithm), c.workspace_data(),
                c.plan->workspace_bytes, c.zero(), c.plan->weight, grad_weight),
            op, "cudnnConvolutionBackwardFilter");
}

void set_cudnn_api(sdk::Registrar& r) {
  const std::string value(r.option("cudnn", "auto"));
  if (value == "auto") {
    g_cudnn_api = CudnnApi::kAuto;
  } else if (value == "graph") {
    g_cudnn_api = CudnnApi::kGraph;
  } else if (value == "legacy") {
    g_cudnn_api = CudnnApi::kLegacy;
  } else {
    throw sdk::Error("[" LOOM_GPU_PLATFORM_NAME
                     "] option cudnn: expected \"auto\", \"graph\" or "
                     "\"legacy\", found \"" +
                         value + "\"",
                     LOOM_STATUS_INVALID_ARGUMENT);
  }
}

}  // namespace loom::gpu
