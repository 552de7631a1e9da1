// loom's own 2-D convolution and its two gradients (Note [Implicit-GEMM convolution] in
// conv_math.h): each pass is the shared tiled GEMM kernel (gemm_kernel.cuh) reading its
// operands through the pass's implicit matrices, accumulating in OpMath. The ROCm
// plugin's convolution, and the CUDA plugin's when the manifest's "conv" option is
// "loom" (how it is checked against cuDNN).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "conv_math.h"
#include "gemm_kernel.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

// A pass's matrices over the packed tensors it reads (a_data, b_data) and writes
// (c_data, of Out: T, or the accumulation type for a split weight gradient's slices); a
// -1 offset reads as zero. The forward pass adds conv2d's bias, when given.
template <typename T, typename Matrices, typename Out = T>
struct ConvOperands {
  using A = OpMath<T>;
  Matrices m;
  const T* a_data;
  const T* b_data;
  Out* c_data;
  const T* bias;

  __device__ A a(int64_t z, int64_t r, int64_t kk) const {
    const int64_t at = m.a(z, r, kk);
    return at < 0 ? A(0) : convert<A>(a_data[at]);
  }
  __device__ A b(int64_t z, int64_t kk, int64_t col) const {
    const int64_t at = m.b(z, kk, col);
    return at < 0 ? A(0) : convert<A>(b_data[at]);
  }
  __device__ void store(int64_t z, int64_t r, int64_t col, A acc) const {
    if constexpr (std::is_same_v<Matrices, ConvForwardMatrices>) {
      if (bias != nullptr) acc += convert<A>(bias[m.channel(z, r)]);
    }
    c_data[m.c(z, r, col)] = convert<Out>(acc);
  }
};

// out[i] = the sum of the `splits` slices' element i, in slice order (Note [Split weight
// gradient]).
template <typename T>
__global__ void sum_slices_kernel(int64_t n, const OpMath<T>* slices, int64_t splits, T* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    OpMath<T> sum = 0;
    for (int64_t s = 0; s < splits; ++s) sum += slices[s * n + i];
    out[i] = convert<T>(sum);
  }
}

template <typename Matrices>
const char* launch_pass(int32_t dtype, const Matrices& matrices, void* c, const void* a,
                        const void* b, const void* bias, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const ConvOperands<T, Matrices> ops{matrices, static_cast<const T*>(a),
                                        static_cast<const T*>(b), static_cast<T*>(c),
                                        static_cast<const T*>(bias)};
    result = launch_tiled_gemm<T>(ops, matrices.dims(), stream);
  });
  return result;
}

}  // namespace

const char* launch_conv2d(int32_t dtype, const ConvGeometry& g, void* out, const void* input,
                          const void* weight, const void* bias, gpuStream_t stream) {
  return launch_pass(dtype, ConvForwardMatrices{g}, out, weight, input, bias, stream);
}

const char* launch_conv2d_backward_input(int32_t dtype, const ConvGeometry& g, void* grad_input,
                                         const void* grad_output, const void* weight,
                                         gpuStream_t stream) {
  return launch_pass(dtype, ConvInputGradMatrices{g}, grad_input, weight, grad_output, nullptr,
                     stream);
}

size_t conv2d_backward_weight_workspace(int32_t dtype, const ConvGeometry& g) {
  const ConvWeightGradMatrices m = plan_weight_grad(g);
  if (m.splits <= 1) return 0;
  const size_t accumulator = dtype == LOOM_DTYPE_FLOAT64 ? sizeof(double) : sizeof(float);
  return static_cast<size_t>(m.splits * g.out_channels * g.patch()) * accumulator;
}

const char* launch_conv2d_backward_weight(int32_t dtype, const ConvGeometry& g, void* grad_weight,
                                          const void* grad_output, const void* input,
                                          void* workspace, gpuStream_t stream) {
  const ConvWeightGradMatrices m = plan_weight_grad(g);
  if (m.splits <= 1) {
    return launch_pass(dtype, m, grad_weight, grad_output, input, nullptr, stream);
  }
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    const ConvOperands<T, ConvWeightGradMatrices, A> ops{m, static_cast<const T*>(grad_output),
                                                         static_cast<const T*>(input),
                                                         static_cast<A*>(workspace), nullptr};
    result = launch_tiled_gemm<T>(ops, m.dims(), stream);
    if (result != nullptr) return;
    result = launch_grid_stride(sum_slices_kernel<T>, g.out_channels * g.patch(), stream,
                                static_cast<const A*>(workspace), m.splits,
                                static_cast<T*>(grad_weight));
  });
  return result;
}

}  // namespace loom::gpu
