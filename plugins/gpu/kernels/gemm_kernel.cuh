// loom's tiled GEMM kernels (Note [Tiled GEMM] in gemm_math.h; float16 and bfloat16 on
// CUDA's tensor cores, Note [Tensor-core GEMM]) over any operands: a batch of [m, n] =
// [m, k] @ [k, n] products whose elements an `Operands` object reads through cursors
// (Note [GEMM operand cursors]) and whose results it stores, so strided matrices (linalg.cu) and
// the implicit matrices of a convolution (conv.cu, Note [Implicit-GEMM convolution]) share one
// kernel. Included by those two translation units only.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(LOOM_GPU_EMULATED)  // the emulator's WMMA (Note [The GPU emulator])
#include "../emulator/emulated_wmma.h"
#define LOOM_GPU_TENSOR_CORES 1
#elif defined(__CUDACC__) && !defined(__HIPCC__)  // WMMA: CUDA's tensor cores (sm_70 on)
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

// Operands (Note [GEMM operand cursors]): a_row(z, row) and b_col(z, col) give cursors
// for in-range rows and columns, a(cursor, kk) and b(cursor, kk) read OpMath<T> elements
// for in-range kk, and store(z, row, col, acc) stores each output with its sum.
template <typename Tile, typename T, typename Operands>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocksPerSm)
    tiled_gemm_kernel(Operands ops, GemmDims d, int64_t row_tiles) {
  using A = OpMath<T>;
  using Four = Vector<A, 4>;
  constexpr int kRowsPerThread = Tile::kRowsPerThread, kColsPerThread = Tile::kColsPerThread;
  __shared__ __align__(32) A a_slice[2][Tile::kDepth * Tile::kAStride];
  __shared__ __align__(32) A b_slice[2][Tile::kDepth * Tile::kBStride];
  const int t = threadIdx.x;
  // the k of this thread's A loads and the column of its B loads, the same at every step
  const int a_k = gemm_a_slot<Tile>(t, 0).col;
  const int b_column = gemm_b_slot<Tile>(t, 0).col;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * Tile::kCols;
  for (int64_t z = blockIdx.z; z < d.batch; z += gridDim.z) {
    for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
      const int64_t row0 = tile * Tile::kRows;
      decltype(ops.a_row(z, row0)) a_rows[Tile::kALoads];
      bool a_inside[Tile::kALoads];
      LOOM_GPU_UNROLL
      for (int i = 0; i < Tile::kALoads; ++i) {
        const int64_t r = row0 + gemm_a_slot<Tile>(t, i).row;
        a_inside[i] = r < d.m;
        a_rows[i] = ops.a_row(z, a_inside[i] ? r : row0);
      }
      const bool b_inside = col0 + b_column < d.n;
      const auto b_cursor = ops.b_col(z, b_inside ? col0 + b_column : col0);
      A a_next[Tile::kALoads], b_next[Tile::kBLoads];
      auto fetch = [&](int64_t k0) {  // this thread's elements of the slices at k0
        LOOM_GPU_UNROLL
        for (int i = 0; i < Tile::kALoads; ++i) {
          const int64_t kk = k0 + a_k;
          a_next[i] = a_inside[i] && kk < d.k ? ops.a(a_rows[i], kk) : A(0);
        }
        LOOM_GPU_UNROLL
        for (int i = 0; i < Tile::kBLoads; ++i) {
          const int64_t kk = k0 + gemm_b_slot<Tile>(t, i).row;
          b_next[i] = b_inside && kk < d.k ? ops.b(b_cursor, kk) : A(0);
        }
      };
      auto stage = [&](int s) {  // the registers into shared-memory stage s
        LOOM_GPU_UNROLL
        for (int i = 0; i < Tile::kALoads; ++i) {
          const TileSlot sa = gemm_a_slot<Tile>(t, i);
          a_slice[s][gemm_a_shared<Tile>(sa.row, sa.col)] = a_next[i];
        }
        LOOM_GPU_UNROLL
        for (int i = 0; i < Tile::kBLoads; ++i) {
          const TileSlot sb = gemm_b_slot<Tile>(t, i);
          b_slice[s][gemm_b_shared<Tile>(sb.row, sb.col)] = b_next[i];
        }
      };
      A acc[kRowsPerThread][kColsPerThread] = {};
      fetch(0);
      stage(0);
      __syncthreads();
      int s = 0;
      for (int64_t k0 = 0; k0 < d.k; k0 += Tile::kDepth) {
        const bool more = k0 + Tile::kDepth < d.k;
        if (more) fetch(k0 + Tile::kDepth);  // in flight while the block multiplies
        LOOM_GPU_UNROLL
        for (int kk = 0; kk < Tile::kDepth; ++kk) {
          A a_frag[kRowsPerThread], b_frag[kColsPerThread];
          LOOM_GPU_UNROLL
          for (int g = 0; g < kRowsPerThread; g += 4) {
            const Four v = *reinterpret_cast<const Four*>(
                &a_slice[s][gemm_a_shared<Tile>(gemm_output_row<Tile>(t, g), kk)]);
            LOOM_GPU_UNROLL
            for (int e = 0; e < 4; ++e) a_frag[g + e] = v.v[e];
          }
          LOOM_GPU_UNROLL
          for (int g = 0; g < kColsPerThread; g += 4) {
            const Four v = *reinterpret_cast<const Four*>(
                &b_slice[s][gemm_b_shared<Tile>(kk, gemm_output_col<Tile>(t, g))]);
            LOOM_GPU_UNROLL
            for (int e = 0; e < 4; ++e) b_frag[g + e] = v.v[e];
          }
          LOOM_GPU_UNROLL
          for (int i = 0; i < kRowsPerThread; ++i) {
            LOOM_GPU_UNROLL
            for (int j = 0; j < kColsPerThread; ++j) acc[i][j] += a_frag[i] * b_frag[j];
          }
        }
        if (more) stage(s ^ 1);  // stage s ^ 1 was last read before the previous barrier
        __syncthreads();
        s ^= 1;
      }
      LOOM_GPU_UNROLL
      for (int i = 0; i < kRowsPerThread; ++i) {
        const int64_t r = row0 + gemm_output_row<Tile>(t, i);
        if (r >= d.m) continue;
        LOOM_GPU_UNROLL
        for (int j = 0; j < kColsPerThread; ++j) {
          const int64_t col = col0 + gemm_output_col<Tile>(t, j);
          if (col < d.n) ops.store(z, r, col, acc[i][j]);
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
      // cursors (Note [GEMM operand cursors]): this thread's one B column is kept; its 16 A
      // rows are cheap to address and would cost 16 live cursors, so each fetch takes them
      const int b_column = tensor_b_slot(t, 0).col;
      const bool b_inside = col0 + b_column < d.n;
      const auto b_cursor = ops.b_col(z, b_inside ? col0 + b_column : col0);
      float a_next[kTensorLoads], b_next[kTensorLoads];
      auto fetch = [&](int64_t k0) {  // the slices at k0, into registers
        LOOM_GPU_UNROLL
        for (int i = 0; i < kTensorLoads; ++i) {
          const TileSlot sa = tensor_a_slot(t, i);
          const int64_t r = row0 + sa.row, ka = k0 + sa.col;
          a_next[i] = r < d.m && ka < d.k ? static_cast<float>(ops.a(ops.a_row(z, r), ka)) : 0.0f;
          const int64_t kb = k0 + tensor_b_slot(t, i).row;
          b_next[i] = b_inside && kb < d.k ? static_cast<float>(ops.b(b_cursor, kb)) : 0.0f;
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

// Launches the kernels over d on `stream`: the tensor-core kernel for float16 and
// bfloat16 on CUDA, else the large or small SIMT tile (Note [Tiled GEMM]; kMayTakeLarge
// false: the small one, for rare operands not worth another instantiation); an error
// message, or null.
template <typename T, bool kMayTakeLarge = true, typename Operands>
const char* launch_tiled_gemm(const Operands& ops, const GemmDims& d, gpuStream_t stream) {
  if (d.m == 0 || d.n == 0 || d.batch == 0) return nullptr;
  constexpr bool kFloat = std::is_same_v<OpMath<T>, float>;
  const bool large = kMayTakeLarge && takes_large_gemm_tile(d, kFloat);
  const GemmLaunch l =
      plan_gemm(d.m, d.n, d.batch, large ? LargeGemmTile::kRows : SmallGemmTile::kRows);
  if (l.grid_x == 0) return "the product has more columns than one launch covers";
  const dim3 grid(l.grid_x, l.grid_y, l.grid_z);
#if LOOM_GPU_TENSOR_CORES
  constexpr bool kTensorCores = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
#else
  constexpr bool kTensorCores = false;
#endif
  if constexpr (kTensorCores) {
#if LOOM_GPU_TENSOR_CORES
    const GemmLaunch tensor = plan_gemm(d.m, d.n, d.batch, kTensorTile);
    launch_kernel(tensor_core_gemm_kernel<T, Operands>,
                  dim3(tensor.grid_x, tensor.grid_y, tensor.grid_z), kTensorThreads, 0, stream, ops,
                  d, tensor.row_tiles);
#endif
  } else {
    if constexpr (kFloat && kMayTakeLarge) {  // float64 never takes the large tile
      if (large) {
        launch_kernel(tiled_gemm_kernel<LargeGemmTile, T, Operands>, grid, LargeGemmTile::kThreads,
                      0, stream, ops, d, l.row_tiles);
        return last_launch_error();
      }
    }
    launch_kernel(tiled_gemm_kernel<SmallGemmTile, T, Operands>, grid, SmallGemmTile::kThreads, 0,
                  stream, ops, d, l.row_tiles);
  }
  return last_launch_error();
}

}  // namespace loom::gpu
