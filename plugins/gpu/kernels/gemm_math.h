// The tiling of loom's own GEMM kernel (kernels/linalg.cu, the matmul family on ROCm, whose
// Debian packages have no rocBLAS, and on CUDA when the manifest asks for it): how a
// batch of [m, n] outputs is cut into tiles and spread over a grid, and which output
// elements one thread owns. Plain arithmetic compiled into device code and unit-tested
// on the host (tests/gpu/gemm_math_test.cc).
#pragma once

#include <cstdint>

#include "index_math.h"

namespace loom::gpu {

// Note [Tiled GEMM]
// ~~~~~~~~~~~~~~~~~
// A block of kGemmThreads threads computes one kGemmTile x kGemmTile tile of C, stepping
// along k kGemmTileK at a time: each step stages a kGemmTile x kGemmTileK slice of A and
// a kGemmTileK x kGemmTile slice of B in shared memory (zero outside the matrices), then
// every thread adds the products for its kGemmPerThread x kGemmPerThread outputs, read
// as a register block so each shared value feeds kGemmPerThread multiplies. Operands
// are read through their strides, so transposed views need no copy. Grid: x over column
// tiles, y over row tiles, z over the batch; y and z loop when a shape needs more blocks
// than a grid dim allows.
inline constexpr int kGemmTile = 64;
inline constexpr int kGemmTileK = 16;
inline constexpr int kGemmPerThread = 4;
inline constexpr int kGemmThreadsPerDim = kGemmTile / kGemmPerThread;         // 16
inline constexpr int kGemmThreads = kGemmThreadsPerDim * kGemmThreadsPerDim;  // 256
inline constexpr uint32_t kMaxGridYZ = 65535;

// The sizes of a batch of GEMMs: batch products of [m, k] @ [k, n].
struct GemmDims {
  int64_t m = 0, n = 0, k = 0, batch = 0;
};

struct GemmLaunch {
  uint32_t grid_x = 0, grid_y = 0, grid_z = 0;
  int64_t row_tiles = 0;  // what grid y loops over
};

// The launch of a GEMM of `batch` [m, n] outputs; grid_x is 0 when there are more column
// tiles than a grid allows (n beyond 2^31 * 64: the caller refuses the shape).
inline GemmLaunch plan_gemm(int64_t m, int64_t n, int64_t batch) {
  GemmLaunch l;
  const int64_t col_tiles = (n + kGemmTile - 1) / kGemmTile;
  l.row_tiles = (m + kGemmTile - 1) / kGemmTile;
  if (col_tiles <= 0 || l.row_tiles <= 0 || batch <= 0) return l;
  if (col_tiles > int64_t{0x7fffffff}) return l;
  l.grid_x = static_cast<uint32_t>(col_tiles);
  l.grid_y = static_cast<uint32_t>(l.row_tiles < kMaxGridYZ ? l.row_tiles : kMaxGridYZ);
  l.grid_z = static_cast<uint32_t>(batch < kMaxGridYZ ? batch : kMaxGridYZ);
  return l;
}

// The first row and column (within its tile) of the outputs thread `t` owns: rows
// row + i and columns col + j for i, j in [0, kGemmPerThread).
struct GemmThreadBlock {
  int row, col;
};

LOOM_GPU_HD GemmThreadBlock gemm_thread_block(int t) {
  return {(t / kGemmThreadsPerDim) * kGemmPerThread, (t % kGemmThreadsPerDim) * kGemmPerThread};
}

// Which element of the A slice (kGemmTile rows x kGemmTileK) and of the B slice
// (kGemmTileK x kGemmTile) load number `i` of thread `t` stages: slot = t + i * threads.
struct TileSlot {
  int row, col;
};

LOOM_GPU_HD TileSlot a_slice_slot(int t, int i) {
  const int slot = t + i * kGemmThreads;
  return {slot / kGemmTileK, slot % kGemmTileK};
}

LOOM_GPU_HD TileSlot b_slice_slot(int t, int i) {
  const int slot = t + i * kGemmThreads;
  return {slot / kGemmTile, slot % kGemmTile};
}

inline constexpr int kGemmLoadsPerThread = kGemmTile * kGemmTileK / kGemmThreads;  // 4

// Note [Tensor-core GEMM]
// ~~~~~~~~~~~~~~~~~~~~~~~
// float16 and bfloat16 products on CUDA run on tensor cores (WMMA's 16 x 16 x 16 fragments,
// float accumulators): a block of 4 warps computes a 64 x 64 tile of C, each warp a 32 x 32
// quarter of it (2 x 2 fragments), stepping along k kTensorTileK at a time through two
// shared-memory stages: while the warps multiply the slices of one stage, each thread's
// loads of the next slices are already in its registers, written to the other stage after
// (double buffering: one barrier per step, loads in flight during the products). The
// slices are read through the same Operands as the SIMT kernel (any strides, implicit
// convolution matrices), zero outside the matrices, and rows padded by 8 elements (a
// multiple WMMA's leading dimension needs, which also spreads the banks). The float
// results go through shared memory to the Operands' store (alpha, beta, any layout).
// float32 and float64 keep the SIMT kernel: tensor cores would round float32 to TF32.
inline constexpr int kTensorTile = 64;
inline constexpr int kTensorTileK = 32;
inline constexpr int kTensorWarps = 4;
inline constexpr int kTensorThreads = kTensorWarps * 32;                          // 128
inline constexpr int kTensorLoads = kTensorTile * kTensorTileK / kTensorThreads;  // 16
inline constexpr int kTensorAStride = kTensorTileK + 8;                           // 40
inline constexpr int kTensorBStride = kTensorTile + 8;                            // 72
inline constexpr int kTensorCStride = kTensorTile + 4;                            // 68

// Load number `i` of thread `t` in the A slice (kTensorTile rows x kTensorTileK, threads
// along k) and in the B slice (kTensorTileK rows x kTensorTile, threads along n):
// neighbouring threads read neighbouring elements of a row-major operand.
LOOM_GPU_HD TileSlot tensor_a_slot(int t, int i) {
  const int slot = t + i * kTensorThreads;
  return {slot / kTensorTileK, slot % kTensorTileK};
}
LOOM_GPU_HD TileSlot tensor_b_slot(int t, int i) {
  const int slot = t + i * kTensorThreads;
  return {slot / kTensorTile, slot % kTensorTile};
}
// The first row and column of warp w's 32 x 32 quarter of the tile.
LOOM_GPU_HD TileSlot tensor_warp_origin(int w) {
  return {(w / 2) * 32, (w % 2) * 32};
}

}  // namespace loom::gpu
