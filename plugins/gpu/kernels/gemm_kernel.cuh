// loom's tiled GEMM kernels (Note [Tiled GEMM] in gemm_math.h; float16 and bfloat16 on
// CUDA's tensor cores, Note [Tensor-core GEMM]) over any operands: a batch
// of [m, n] = [m, k] @ [k, n] products whose elements an `Operands` object reads and
// whose results it stores, so strided matrices (linalg.cu) and the implicit matrices of a
// convolution (conv.cu, Note [Implicit-GEMM convolution]) share one kernel. Included by
// those two translation units only.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__) && !defined(__HIPCC__)  // WMMA: CUDA's tensor cores (sm_70 on)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#define LOOM_GPU_TENSOR_CORES 1
#else
#define LOOM_GPU_TENSOR_CORES 0
#endif

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

#if LOOM_GPU_TENSOR_CORES
template <typename T>
struct WmmaElement;
template <>
struct WmmaElement<Half> {
  using type = __half;
  static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <>
struct WmmaElement<BFloat16> {
  using type = __nv_bfloat16;
  static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};

// Note [Tensor-core GEMM] in gemm_math.h: float16 and bfloat16 on WMMA fragments, two
// shared-memory stages.
template <typename T, typename Operands>
__global__ void __launch_bounds__(kTensorThreads)
    tensor_core_gemm_kernel(Operands ops, GemmDims d, int64_t row_tiles) {
  namespace wmma = nvcuda::wmma;
  using E = WmmaElement<T>;
  using W = typename E::type;
  __shared__ __align__(32) W a_tile[2][kTensorTile * kTensorAStride];
  __shared__ __align__(32) W b_tile[2][kTensorTileK * kTensorBStride];
  __shared__ __align__(32) float c_tile[kTensorTile * kTensorCStride];
  const int t = threadIdx.x;
  const TileSlot origin = tensor_warp_origin(t / 32);
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTensorTile;
  for (int64_t z = blockIdx.z; z < d.batch; z += gridDim.z) {
    for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
      const int64_t row0 = tile * kTensorTile;
      float a_next[kTensorLoads], b_next[kTensorLoads];
      auto fetch = [&](int64_t k0) {  // the slices at k0, into registers
        LOOM_GPU_UNROLL
        for (int i = 0; i < kTensorLoads; ++i) {
          const TileSlot sa = tensor_a_slot(t, i);
          const int64_t r = row0 + sa.row, ka = k0 + sa.col;
          a_next[i] = r < d.m && ka < d.k ? static_cast<float>(ops.a(z, r, ka)) : 0.0f;
          const TileSlot sb = tensor_b_slot(t, i);
          const int64_t kb = k0 + sb.row, col = col0 + sb.col;
          b_next[i] = kb < d.k && col < d.n ? static_cast<float>(ops.b(z, kb, col)) : 0.0f;
        }
      };
      auto stage = [&](int s) {  // the registers into shared-memory stage s
        LOOM_GPU_UNROLL
        for (int i = 0; i < kTensorLoads; ++i) {
          const TileSlot sa = tensor_a_slot(t, i), sb = tensor_b_slot(t, i);
          a_tile[s][sa.row * kTensorAStride + sa.col] = E::from(a_next[i]);
          b_tile[s][sb.row * kTensorBStride + sb.col] = E::from(b_next[i]);
        }
      };
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
      LOOM_GPU_UNROLL
      for (int i = 0; i < 2; ++i) {
        LOOM_GPU_UNROLL
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
      }
      fetch(0);
      stage(0);
      __syncthreads();
      int s = 0;
      for (int64_t k0 = 0; k0 < d.k; k0 += kTensorTileK) {
        const bool more = k0 + kTensorTileK < d.k;
        if (more) fetch(k0 + kTensorTileK);  // in flight while the fragments multiply
        LOOM_GPU_UNROLL
        for (int kk = 0; kk < kTensorTileK; kk += 16) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> fa[2];
          wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::row_major> fb[2];
          LOOM_GPU_UNROLL
          for (int i = 0; i < 2; ++i) {
            wmma::load_matrix_sync(fa[i], &a_tile[s][(origin.row + i * 16) * kTensorAStride + kk],
                                   kTensorAStride);
            wmma::load_matrix_sync(fb[i], &b_tile[s][kk * kTensorBStride + origin.col + i * 16],
                                   kTensorBStride);
          }
          LOOM_GPU_UNROLL
          for (int i = 0; i < 2; ++i) {
            LOOM_GPU_UNROLL
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
          }
        }
        if (more) stage(s ^ 1);  // stage s ^ 1 was last read before the previous barrier
        __syncthreads();
        s ^= 1;
      }
      LOOM_GPU_UNROLL
      for (int i = 0; i < 2; ++i) {
        LOOM_GPU_UNROLL
        for (int j = 0; j < 2; ++j) {
          wmma::store_matrix_sync(
              &c_tile[(origin.row + i * 16) * kTensorCStride + origin.col + j * 16], acc[i][j],
              kTensorCStride, wmma::mem_row_major);
        }
      }
      __syncthreads();
      for (int e = t; e < kTensorTile * kTensorTile; e += kTensorThreads) {
        const int r = e / kTensorTile, c = e % kTensorTile;
        if (row0 + r < d.m && col0 + c < d.n) {
          ops.store(z, row0 + r, col0 + c, c_tile[r * kTensorCStride + c]);
        }
      }
      __syncthreads();  // c_tile and stage 0 are written again by the next tile
    }
  }
}
#endif

// Launches the kernel over d on `stream` (the tensor-core kernel for float16 and bfloat16
// on CUDA); an error message, or null.
template <typename T, typename Operands>
const char* launch_tiled_gemm(const Operands& ops, const GemmDims& d, gpuStream_t stream) {
  if (d.m == 0 || d.n == 0 || d.batch == 0) return nullptr;
  const GemmLaunch l = plan_gemm(d.m, d.n, d.batch);
  if (l.grid_x == 0) return "the product has more columns than one launch covers";
#if LOOM_GPU_TENSOR_CORES
  static_assert(kTensorTile == kGemmTile, "one grid plan serves both kernels");
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    tensor_core_gemm_kernel<T, Operands>
        <<<dim3(l.grid_x, l.grid_y, l.grid_z), kTensorThreads, 0, stream>>>(ops, d, l.row_tiles);
    return last_launch_error();
  }
#endif
  tiled_gemm_kernel<T, Operands>
      <<<dim3(l.grid_x, l.grid_y, l.grid_z), kGemmThreads, 0, stream>>>(ops, d, l.row_tiles);
  return last_launch_error();
}

}  // namespace loom::gpu
