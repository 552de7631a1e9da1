// loom's own GEMM (Note [Tiled GEMM] in gemm_math.h): c = alpha * a @ b + beta * c over a
// batch, every operand read through its strides, accumulating in OpMath (float for
// float16 / bfloat16, double for float64). The matmul family's kernel on ROCm, and on
// CUDA when the manifest's "gemm" option is "loom" (how it is checked against cuBLAS).
#include <cstdint>

#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "gemm_math.h"
#include "launch.h"

namespace loom::gpu {
namespace {

template <typename T>
__global__ void __launch_bounds__(kGemmThreads)
    gemm_kernel(GemmShape s, int64_t row_tiles, OpMath<T> alpha, OpMath<T> beta, T* c, const T* a,
                const T* b) {
  using A = OpMath<T>;
  __shared__ A a_slice[kGemmTileK][kGemmTile + 1];  // [k][row]; +1 spreads the banks
  __shared__ A b_slice[kGemmTileK][kGemmTile];
  const int t = threadIdx.x;
  const GemmThreadBlock mine = gemm_thread_block(t);
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kGemmTile;
  for (int64_t z = blockIdx.z; z < s.batch; z += gridDim.z) {
    const T* a_batch = a + z * s.a_batch_stride;
    const T* b_batch = b + z * s.b_batch_stride;
    T* c_batch = c + z * s.c_batch_stride;
    for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
      const int64_t row0 = tile * kGemmTile;
      A acc[kGemmPerThread][kGemmPerThread] = {};
      for (int64_t k0 = 0; k0 < s.k; k0 += kGemmTileK) {
        LOOM_GPU_UNROLL
        for (int i = 0; i < kGemmLoadsPerThread; ++i) {
          const TileSlot sa = a_slice_slot(t, i);
          const int64_t r = row0 + sa.row, kk = k0 + sa.col;
          a_slice[sa.col][sa.row] =
              r < s.m && kk < s.k ? convert<A>(a_batch[r * s.a_row_stride + kk * s.a_col_stride])
                                  : A(0);
          const TileSlot sb = b_slice_slot(t, i);
          const int64_t kb = k0 + sb.row, col = col0 + sb.col;
          b_slice[sb.row][sb.col] =
              kb < s.k && col < s.n
                  ? convert<A>(b_batch[kb * s.b_row_stride + col * s.b_col_stride])
                  : A(0);
        }
        __syncthreads();
        LOOM_GPU_UNROLL
        for (int kk = 0; kk < kGemmTileK; ++kk) {
          A a_frag[kGemmPerThread], b_frag[kGemmPerThread];
          LOOM_GPU_UNROLL
          for (int i = 0; i < kGemmPerThread; ++i) {
            a_frag[i] = a_slice[kk][mine.row + i];
            b_frag[i] = b_slice[kk][mine.col + i];
          }
          LOOM_GPU_UNROLL
          for (int i = 0; i < kGemmPerThread; ++i) {
            LOOM_GPU_UNROLL
            for (int j = 0; j < kGemmPerThread; ++j) acc[i][j] += a_frag[i] * b_frag[j];
          }
        }
        __syncthreads();
      }
      LOOM_GPU_UNROLL
      for (int i = 0; i < kGemmPerThread; ++i) {
        const int64_t r = row0 + mine.row + i;
        if (r >= s.m) break;
        LOOM_GPU_UNROLL
        for (int j = 0; j < kGemmPerThread; ++j) {
          const int64_t col = col0 + mine.col + j;
          if (col >= s.n) break;
          T* target = c_batch + r * s.c_row_stride + col * s.c_col_stride;
          // beta 0 ignores c (a NaN there does not leak), as in BLAS and PyTorch
          const A prior = beta == A(0) ? A(0) : beta * convert<A>(*target);
          *target = convert<T>(alpha * acc[i][j] + prior);
        }
      }
    }
  }
}

}  // namespace

const char* launch_gemm(int32_t dtype, const GemmShape& shape, double alpha, double beta, void* c,
                        const void* a, const void* b, gpuStream_t stream) {
  if (shape.m == 0 || shape.n == 0 || shape.batch == 0) return nullptr;
  const GemmLaunch l = plan_gemm(shape.m, shape.n, shape.batch);
  if (l.grid_x == 0) return "the product has more columns than one launch covers";
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    gemm_kernel<T><<<dim3(l.grid_x, l.grid_y, l.grid_z), kGemmThreads, 0, stream>>>(
        shape, l.row_tiles, static_cast<A>(alpha), static_cast<A>(beta), static_cast<T*>(c),
        static_cast<const T*>(a), static_cast<const T*>(b));
    result = last_launch_error();
  });
  return result;
}

}  // namespace loom::gpu
