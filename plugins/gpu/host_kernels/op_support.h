// What every GPU kernel wrapper does before a launch: select the output's device, take
// the call's stream, and describe its operands as a StridedSpace (refusing tensors on
// another device with the op's name in the message); contiguous copies and the slots
// kernels flag bad input in.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../kernels/index_math.h"
#include "../kernels/launch.h"
#include "../runtime/gpu_device.h"
#include "loom/sdk/kernel.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom::gpu {

// The kernel call's stream (the runtime's default stream when none is set).
inline gpuStream_t stream_of(const sdk::DispatchContext& ctx) {
  return static_cast<gpuStream_t>(ctx.stream());
}

inline bool is_floating_dtype(int32_t dtype) {
  return dtype >= LOOM_DTYPE_FLOAT16 && dtype <= LOOM_DTYPE_FLOAT64;
}

// Checks that every tensor lives on out's device and makes that device current.
void prepare(const char* op, const sdk::Tensor& out,
             std::initializer_list<const sdk::Tensor*> inputs);

// A 0-dim CPU tensor among a pointwise op's inputs: a C++ number the host hands over as it
// is (LOOM_DEVICE_TAKES_HOST_SCALARS; Note [Host scalars by value]).
inline bool is_host_scalar(const sdk::Tensor& t) {
  return t.device().type == LOOM_DEVICE_CPU && t.dim() == 0;
}

// prepare() for the out= kernels of pointwise ops, whose inputs may also be host scalars:
// returns their elements for the launch (bit k: inputs[k]).
HostScalars prepare_pointwise(const char* op, const sdk::Tensor& out,
                              std::initializer_list<const sdk::Tensor*> inputs);

// An input's pointer for a launch: null for a host scalar (its element travels in the
// launch's HostScalars).
inline const void* device_data(const sdk::Tensor& t) {
  return is_host_scalar(t) ? nullptr : t.data();
}

// The space of out's shape with each operand's strides (operands[0] is out). Operands
// have out's shape (the structured-op contract: inputs arrive broadcast); a host scalar
// among them (never read through the space) takes operands[0]'s strides, so it merges
// dims as out does and keeps a dense launch dense.
template <int N>
StridedSpace<N> space_of(const char* op, const sdk::Tensor& shape_tensor,
                         const sdk::Tensor* const (&operands)[N]) {
  const int64_t* strides[N];
  for (int k = 0; k < N; ++k) {
    if (k > 0 && is_host_scalar(*operands[k]) && operands[0]->dim() == shape_tensor.dim()) {
      strides[k] = operands[0]->strides().data();
      continue;
    }
    if (operands[k]->dim() != shape_tensor.dim()) {
      throw sdk::Error("[" + std::string(op) + "] operand " + std::to_string(k) + " has " +
                       std::to_string(operands[k]->dim()) + " dims, expected " +
                       std::to_string(shape_tensor.dim()));
    }
    strides[k] = operands[k]->strides().data();
  }
  StridedSpace<N> space;
  if (!make_strided_space<N>(shape_tensor.sizes().data(), static_cast<int>(shape_tensor.dim()),
                             strides, &space)) {
    throw sdk::Error("[" + std::string(op) + "] " LOOM_GPU_PLATFORM_NAME " kernels take at most " +
                     std::to_string(kMaxDims) +
                     " dims after merging contiguous ones; this tensor has " +
                     std::to_string(shape_tensor.dim()));
  }
  return space;
}

// The lines along dim `d` of shape `sizes` (a scan's, a sort's): the shape without d,
// with each operand's strides without d.
template <int N>
StridedSpace<N> lines_along(const char* op, const std::vector<int64_t>& sizes, int64_t d,
                            const sdk::Tensor* const (&operands)[N]) {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides[N];
  for (size_t j = 0; j < sizes.size(); ++j) {
    if (static_cast<int64_t>(j) == d) continue;
    shape.push_back(sizes[j]);
    for (int k = 0; k < N; ++k) strides[k].push_back(operands[k]->strides()[j]);
  }
  const int64_t* stride_ptrs[N];
  for (int k = 0; k < N; ++k) stride_ptrs[k] = strides[k].data();
  StridedSpace<N> space;
  if (!make_strided_space<N>(shape.data(), static_cast<int>(shape.size()), stride_ptrs, &space)) {
    throw sdk::Error("[" + std::string(op) +
                     "] too many dims for the " LOOM_GPU_PLATFORM_NAME " kernel");
  }
  return space;
}

// A tensor's size and stride along dim d (1 and 1 for a 0-dim tensor).
inline int64_t size_along(const sdk::Tensor& t, int64_t d) {
  return t.dim() == 0 ? 1 : t.sizes()[d];
}
inline int64_t stride_along(const sdk::Tensor& t, int64_t d) {
  return t.dim() == 0 ? 1 : t.strides()[d];
}

// Sorts the lines of self along dim d (sort_ops.cc, Note [Bitonic sort]) into the first
// `count` values and their int64 positions.
void sort_along(const sdk::DispatchContext& ctx, const char* op, const sdk::Tensor& self, int64_t d,
                int64_t count, bool descending, const sdk::Tensor& values,
                const sdk::Tensor& indices);

// out = the reduction of self over `dims` (all when empty; out's dims decide keepdim),
// with the launch's workspace (reduction_ops.cc).
void reduce(const sdk::DispatchContext& ctx, const char* op, ReduceOp kind, const sdk::Tensor& self,
            std::span<const int64_t> dims, const sdk::Tensor& out);

// out = self `kind` alpha * other (alpha where the op takes one): self has out's shape,
// other broadcasts to it (missing leading dims and size-1 dims read again); all of out's
// dtype.
void broadcast_binary(const sdk::DispatchContext& ctx, const char* op, BinaryOp kind, double alpha,
                      const sdk::Tensor& out, const sdk::Tensor& self, const sdk::Tensor& other);

// out = src converted to out's dtype (src of out's shape); nothing when they are one tensor.
void copy_into(const sdk::DispatchContext& ctx, const char* op, const sdk::Tensor& out,
               const sdk::Tensor& src);

// A 0-dim tensor of dtype on device holding `value` (broadcasts to any shape).
sdk::Tensor scalar_tensor(const sdk::DispatchContext& ctx, const char* op, double value,
                          int32_t dtype, LoomDevice device);

// `dim` wrapped into [0, ndim) (a 0-dim tensor takes dims 0 and -1), or the op's error.
int64_t wrapped_dim(const char* op, int64_t dim, int64_t ndim);

// The manifest's "allow_tf32" option: float32 matmuls and convolutions may use TF32.
extern bool g_allow_tf32;

// The manifest option `name` ("gemm", "conv"): true for "loom" (loom's own kernels), false
// for "vendor" (the default: cuBLAS, cuDNN), else the plugin's initialisation error.
bool loom_kernels_option(sdk::Registrar& r, const char* name);

// A contiguous copy of t on its device (t's dtype, or `dtype` when given).
sdk::Tensor contiguous(const sdk::DispatchContext& ctx, const char* op, const sdk::Tensor& t,
                       int32_t dtype = -1);

// The slot a launch's kernels flag bad input in (Note [Input errors found by kernels]):
// `describe` makes the op's error from the flagged value, raised at the host's next wait
// for out's device, so the launch does not wait for the stream. Keep it until the launch
// is queued.
inline InputCheck input_check(const sdk::DispatchContext& ctx, const sdk::Tensor& out,
                              DeferredChecks::Describe describe) {
  return InputCheck(out.device().index, stream_of(ctx), std::move(describe));
}

// One per op family, defined in host_kernels/<family>_ops.cc; the build lists the files it
// finds (gpu_kernel_families.inc, Note [Op families as data]).
#define LOOM_FAMILY(family) void register_##family##_ops(sdk::Registrar& r, uint32_t key);
#include "gpu_kernel_families.inc"
#undef LOOM_FAMILY

}  // namespace loom::gpu
