// loom's tiled GEMM kernel (Note [Tiled GEMM] in gemm_math.h) over any operands: a batch
// of [m, n] = [m, k] @ [k, n] products whose elements an `Operands` object reads and
// whose results it stores, so strided matrices (linalg.cu) and the implicit matrices of a
// convolution (conv.cu, Note [Implicit-GEMM convolution]) share one kernel. Included by
// those two translation units only.
#pragma once

#include <cstdint>

#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "gemm_math.h"

namespace loom::gpu {

// Operands: OpMath<T> a(z, row, kk) and b(z, kk, col) for in-range indices, and
// store(z, row, col, acc) for each output with its sum.
template <typename T, typename Operands>
__global__ void __launch_bounds__(kGemmThreads)
    tiled_gemm_kernel(Operands ops, GemmDims d, int64_t row_tiles) {
  using A = OpMath<T>;
  __shared__ A a_slice[kGemmTileK][kGemmTile + 1];  // [k][row]; +1 spreads the banks
  __shared__ A b_slice[kGemmTileK][kGemmTile];
  const int t = threadIdx.x;
  const GemmThreadBlock mine = gemm_thread_block(t);
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kGemmTile;
  for (int64_t z = blockIdx.z; z < d.batch; z += gridDim.z) {
    for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
      const int64_t row0 = tile * kGemmTile;
      A acc[kGemmPerThread][kGemmPerThread] = {};
      for (int64_t k0 = 0; k0 < d.k; k0 += kGemmTileK) {
        LOOM_GPU_UNROLL
        for (int i = 0; i < kGemmLoadsPerThread; ++i) {
          const TileSlot sa = a_slice_slot(t, i);
          const int64_t r = row0 + sa.row, kk = k0 + sa.col;
          a_slice[sa.col][sa.row] = r < d.m && kk < d.k ? ops.a(z, r, kk) : A(0);
          const TileSlot sb = b_slice_slot(t, i);
          const int64_t kb = k0 + sb.row, col = col0 + sb.col;
          b_slice[sb.row][sb.col] = kb < d.k && col < d.n ? ops.b(z, kb, col) : A(0);
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
        if (r >= d.m) break;
        LOOM_GPU_UNROLL
        for (int j = 0; j < kGemmPerThread; ++j) {
          const int64_t col = col0 + mine.col + j;
          if (col >= d.n) break;
          ops.store(z, r, col, acc[i][j]);
        }
      }
    }
  }
}

// Launches the kernel over d on `stream`; an error message, or null.
template <typename T, typename Operands>
const char* launch_tiled_gemm(const Operands& ops, const GemmDims& d, gpuStream_t stream) {
  if (d.m == 0 || d.n == 0 || d.batch == 0) return nullptr;
  const GemmLaunch l = plan_gemm(d.m, d.n, d.batch);
  if (l.grid_x == 0) return "the product has more columns than one launch covers";
  tiled_gemm_kernel<T, Operands>
      <<<dim3(l.grid_x, l.grid_y, l.grid_z), kGemmThreads, 0, stream>>>(ops, d, l.row_tiles);
  return last_launch_error();
}

}  // namespace loom::gpu
