// loom's own 2-D convolution and its two gradients (Note [Implicit-GEMM convolution] in
// conv_math.h): each pass is the shared tiled GEMM kernel (gemm_kernel.cuh) reading its
// operands through the pass's implicit matrices, accumulating in OpMath. The ROCm
// plugin's convolution, and the CUDA plugin's when the manifest's "conv" option is
// "loom" (how it is checked against cuDNN).
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "conv_math.h"
#include "gemm_kernel.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

// A pass's matrices (with cursors: Note [32-bit convolution addressing]) over the packed
// tensors it reads (a_data, b_data) and writes (c_data, of Out: T, or the accumulation
// type for a split weight gradient's slices); a -1 offset reads as zero. The forward
// pass adds conv2d's bias, when given.
template <typename T, typename Matrices, typename Out = T>
struct ConvOperands {
  using A = OpMath<T>;
  using Row = decltype(std::declval<const Matrices&>().a_row(0, 0));
  using Col = decltype(std::declval<const Matrices&>().b_col(0, 0));
  Matrices m;
  const T* a_data;
  const T* b_data;
  Out* c_data;
  const T* bias;
  // whether the forward pass reads the weight's rows in 16-byte runs along k (Note [Vector
  // operand loads]); the other passes' A, and every B, gather element by element (their
  // kernels are compiled without the runs)
  static constexpr bool kGivesARuns = Matrices::kForward;
  bool a_runs = false;

  __device__ const T* a_run(int64_t z, int64_t r, int64_t kk) const {
    return a_data + m.a(m.a_row(z, r), kk);  // a forward row: kk elements into its weights
  }
  __device__ Row a_row(int64_t z, int64_t r) const { return m.a_row(z, r); }
  __device__ A a(const Row& row, int64_t kk) const {
    const auto at = m.a(row, kk);
    return at < 0 ? A(0) : convert<A>(a_data[at]);
  }
  __device__ Col b_col(int64_t z, int64_t col) const { return m.b_col(z, col); }
  __device__ A b(const Col& col, int64_t kk) const {
    const auto at = m.b(col, kk);
    return at < 0 ? A(0) : convert<A>(b_data[at]);
  }
  __device__ void store(int64_t z, int64_t r, int64_t col, A acc) const {
    if constexpr (Matrices::kForward) {
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

// kSlices: the pass writes a split weight gradient's OpMath<T> slices, else T. kNarrow:
// the 32-bit matrices; the 64-bit ones, for tensors of 2^30 elements and more, keep to
// the small tile (fewer kernels to compile).
template <bool kSlices, bool kNarrow, typename Matrices>
const char* launch_pass_on(int32_t dtype, const Matrices& matrices, void* c, const void* a,
                           const void* b, const void* bias, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using O = std::conditional_t<kSlices, OpMath<T>, T>;
    ConvOperands<T, Matrices, O> ops{matrices, static_cast<const T*>(a), static_cast<const T*>(b),
                                     static_cast<O*>(c), static_cast<const T*>(bias)};
    if constexpr (Matrices::kForward) {  // weight rows of `patch` elements, one after another
      const GemmDims d = matrices.dims();
      ops.a_runs = runs_are_vectors(a, sizeof(T), 1, d.m * d.batch, d.k, 1, 0);
    }
    result = launch_tiled_gemm<T, kNarrow>(ops, matrices.dims(), stream);
  });
  return result;
}

// A pass on its 32-bit matrices where the tensors allow, else on the 64-bit ones (Note
// [32-bit convolution addressing]).
template <typename Narrow, bool kSlices = false, typename Wide>
const char* launch_pass(int32_t dtype, const Wide& wide, void* c, const void* a, const void* b,
                        const void* bias, gpuStream_t stream) {
  if (conv_fits_int32(wide.g)) {
    return launch_pass_on<kSlices, true>(dtype, Narrow(wide), c, a, b, bias, stream);
  }
  return launch_pass_on<kSlices, false>(dtype, ElementCursors<Wide>{wide}, c, a, b, bias, stream);
}

}  // namespace

const char* launch_conv2d(int32_t dtype, const ConvGeometry& g, void* out, const void* input,
                          const void* weight, const void* bias, gpuStream_t stream) {
  return launch_pass<ConvForwardMatrices32>(dtype, ConvForwardMatrices{g}, out, weight, input, bias,
                                            stream);
}

const char* launch_conv2d_backward_input(int32_t dtype, const ConvGeometry& g, void* grad_input,
                                         const void* grad_output, const void* weight,
                                         gpuStream_t stream) {
  return launch_pass<ConvInputGradMatrices32>(dtype, ConvInputGradMatrices{g}, grad_input, weight,
                                              grad_output, nullptr, stream);
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
    return launch_pass<ConvWeightGradMatrices32>(dtype, m, grad_weight, grad_output, input, nullptr,
                                                 stream);
  }
  const char* result = launch_pass<ConvWeightGradMatrices32, /*kSlices=*/true>(
      dtype, m, workspace, grad_output, input, nullptr, stream);
  if (result != nullptr) return result;
  result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    result = launch_grid_stride(sum_slices_kernel<T>, g.out_channels * g.patch(), stream,
                                static_cast<const A*>(workspace), m.splits,
                                static_cast<T*>(grad_weight));
  });
  return result;
}

}  // namespace loom::gpu
