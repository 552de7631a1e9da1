// The tiling of loom's own GEMM kernel (kernels/linalg.cu, the matmul family on ROCm, whose
// Debian packages have no rocBLAS, and on CUDA when the manifest asks for it): how a
// batch of [m, n] outputs is cut into tiles and spread over a grid, and which output
// elements one thread owns. Plain arithmetic compiled into device code and unit-tested
// on the host (tests/gpu/gemm_math_test.cc).
#pragma once

#include <cstdint>
#include <cstring>

#include "index_math.h"

namespace loom::gpu {

// Note [Tiled GEMM]
// ~~~~~~~~~~~~~~~~~
// A block computes one Tile::kRows x Tile::kCols tile of C, stepping along k Tile::kDepth
// at a time. Each step stages a kRows x kDepth slice of A and a kDepth x kCols slice of B
// in shared memory (zero outside the matrices), both stored k-major ([k][row], [k][col])
// so a thread reads four neighbouring rows or columns as one 16-byte vector; every thread
// then adds the products for its kRowsPerThread x kColsPerThread outputs from registers,
// so each shared value feeds that many multiplies. A thread's rows are groups of four,
// one group per kRows / (kRowsPerThread / 4) rows (likewise its columns): a warp's vector
// reads then fall on distinct banks. The slices are double-buffered: while the block
// multiplies one stage, each thread already holds its loads of the next slices in
// registers and writes them to the other stage afterwards (one barrier per step, the
// loads in flight during the products). The A rows padded by 4 elements spread the
// stores' banks and keep rows 16-byte aligned.
//
// Operands are read through cursors (Note [GEMM operand cursors]), so transposed views
// and convolution patches need no copy. Two tiles: 64 x 64 (4 x 4 a thread, k steps of
// 16) for small products, float64, and whenever the large tile would leave SMs idle; 128
// x 128 (8 x 8 a thread, k steps of 8: 64 multiplies per 4 vector reads) for float
// accumulators once the product has kLargeTileMinBlocks tiles. Grid: x over column
// tiles, y over row tiles, z over the batch; y and z loop when a shape needs more blocks
// than a grid dim allows.
//
// Note [GEMM operand cursors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A thread stages the same rows of A and the same column of B at every k step (its load
// slots depend only on its index), so the part of an operand's address that does not
// depend on k is worked out once per tile: `a_row(z, row)` and `b_col(z, col)` return a
// cursor, `a(cursor, k)` and `b(cursor, k)` read one element. A strided matrix's cursor
// is a pointer; a convolution's holds the patch's origin, so a k step costs two or three
// multiply-high divisions (Note [Division by invariant integers]) instead of six 64-bit
// ones. The kernel takes a cursor only for rows and columns inside the matrices.
template <int Rows, int Cols, int Depth, int RowsPerThread, int ColsPerThread, int MinBlocksPerSm>
struct GemmTile {
  static constexpr int kRows = Rows, kCols = Cols, kDepth = Depth;
  // __launch_bounds__' minimum: 2 caps the small tile at 128 registers; the large tile's 64
  // accumulators would spill under that cap, so it takes ~190 registers, one block an SM.
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;
  static constexpr int kRowsPerThread = RowsPerThread, kColsPerThread = ColsPerThread;
  static constexpr int kThreadCols = Cols / ColsPerThread;
  static constexpr int kThreads = (Rows / RowsPerThread) * kThreadCols;
  static constexpr int kALoads = Rows * Depth / kThreads;  // A slice elements a thread stages
  static constexpr int kBLoads = Depth * Cols / kThreads;
  static constexpr int kAStride = Rows + 4;  // one k row of the A slice in shared memory
  static constexpr int kBStride = Cols;
  static_assert(RowsPerThread % 4 == 0 && ColsPerThread % 4 == 0, "groups of four");
  static_assert(kALoads * kThreads == Rows * Depth && kBLoads * kThreads == Depth * Cols,
                "every slice element staged by one load");
  static_assert(kThreads % Cols == 0, "a thread stages one column of B at every step");
  static_assert(kThreads % Depth == 0, "a thread stages the same k of A at every step");
};
using SmallGemmTile = GemmTile<64, 64, 16, 4, 4, 2>;
using LargeGemmTile = GemmTile<128, 128, 8, 8, 8, 1>;
// float64's small tile on AMD GPUs: under two blocks a CU's cap hipcc spills 170 of its
// registers to scratch (gfx90a); with one block a CU it keeps them all (388 VGPRs).
#if defined(__HIPCC__)
using SmallFloat64GemmTile = GemmTile<64, 64, 16, 4, 4, 1>;
#else
using SmallFloat64GemmTile = SmallGemmTile;
#endif
// About two waves of large tiles on a 132-SM GPU (one block an SM): fewer tiles than that
// run on the small tile, whose four times as many blocks keep every SM busy.
inline constexpr int64_t kLargeTileMinBlocks = 256;
inline constexpr uint32_t kMaxGridYZ = 65535;

// The sizes of a batch of GEMMs: batch products of [m, k] @ [k, n].
struct GemmDims {
  int64_t m = 0, n = 0, k = 0, batch = 0;
};

struct GemmLaunch {
  uint32_t grid_x = 0, grid_y = 0, grid_z = 0;
  int64_t row_tiles = 0;  // what grid y loops over
};

// The launch of a GEMM of `batch` [m, n] outputs in square tiles of `tile`; grid_x is 0
// when there are more column tiles than a grid allows (n beyond 2^31 tiles: the caller
// refuses the shape).
inline GemmLaunch plan_gemm(int64_t m, int64_t n, int64_t batch, int tile = SmallGemmTile::kRows) {
  GemmLaunch l;
  const int64_t col_tiles = (n + tile - 1) / tile;
  l.row_tiles = (m + tile - 1) / tile;
  if (col_tiles <= 0 || l.row_tiles <= 0 || batch <= 0) return l;
  if (col_tiles > int64_t{0x7fffffff}) return l;
  l.grid_x = static_cast<uint32_t>(col_tiles);
  l.grid_y = static_cast<uint32_t>(l.row_tiles < kMaxGridYZ ? l.row_tiles : kMaxGridYZ);
  l.grid_z = static_cast<uint32_t>(batch < kMaxGridYZ ? batch : kMaxGridYZ);
  return l;
}

// Whether a product takes the large tile: float accumulators (float64's 64 accumulators
// would take twice the registers) and enough tiles to fill the GPU.
inline bool takes_large_gemm_tile(const GemmDims& d, bool float_accumulator) {
  if (!float_accumulator) return false;
  const int64_t tile = LargeGemmTile::kRows;
  const int64_t tiles = ((d.m + tile - 1) / tile) * ((d.n + tile - 1) / tile);
  return tiles >= kLargeTileMinBlocks || tiles * d.batch >= kLargeTileMinBlocks;
}

// A position in a tile or slice.
struct TileSlot {
  int row, col;
};

// Which element of the A slice (kRows x kDepth) and of the B slice (kDepth x kCols) load
// `i` of thread `t` stages: slot t + i * threads, neighbouring threads along k in A (a
// row-major A's neighbouring elements) and along the columns in B.
template <typename Tile>
LOOM_GPU_HD TileSlot gemm_a_slot(int t, int i) {
  const int slot = t + i * Tile::kThreads;
  return {slot / Tile::kDepth, slot % Tile::kDepth};
}
template <typename Tile>
LOOM_GPU_HD TileSlot gemm_b_slot(int t, int i) {
  const int slot = t + i * Tile::kThreads;
  return {slot / Tile::kCols, slot % Tile::kCols};
}

// The tile row of output i (i < kRowsPerThread) of thread t, and the tile column of its
// output j: groups of four neighbours, the groups kRows / (kRowsPerThread / 4) apart.
template <typename Tile>
LOOM_GPU_HD int gemm_output_row(int t, int i) {
  constexpr int kGroupSpan = Tile::kRows / (Tile::kRowsPerThread / 4);
  return (i / 4) * kGroupSpan + (t / Tile::kThreadCols) * 4 + i % 4;
}
template <typename Tile>
LOOM_GPU_HD int gemm_output_col(int t, int j) {
  constexpr int kGroupSpan = Tile::kCols / (Tile::kColsPerThread / 4);
  return (j / 4) * kGroupSpan + (t % Tile::kThreadCols) * 4 + j % 4;
}

// The 16-byte run of four float32 elements thread t stages (Note [Vector operand loads];
// a slice has one a thread): {row, first k} of the A slice, {k, first column} of the B
// slice, neighbouring threads on neighbouring runs.
template <typename Tile>
LOOM_GPU_HD TileSlot gemm_a_run(int t) {
  return {t / (Tile::kDepth / 4), t % (Tile::kDepth / 4) * 4};
}
template <typename Tile>
LOOM_GPU_HD TileSlot gemm_b_run(int t) {
  return {t / (Tile::kCols / 4), t % (Tile::kCols / 4) * 4};
}

// Where slice element (row or col, k) lives in a stage of shared memory.
template <typename Tile>
LOOM_GPU_HD int gemm_a_shared(int row, int k) {
  return k * Tile::kAStride + row;
}
template <typename Tile>
LOOM_GPU_HD int gemm_b_shared(int k, int col) {
  return k * Tile::kBStride + col;
}

// Note [Tensor-core GEMM]
// ~~~~~~~~~~~~~~~~~~~~~~~
// float16 and bfloat16 products run on the GPU's matrix units with float accumulators:
// CUDA's tensor cores through WMMA, and the matrix cores of AMD's gfx90a (MI200) and
// gfx940-942 (MI300) through MFMA (Note [MFMA fragments]). One kernel serves both; a
// `MatrixCore` (gemm_kernel.cuh) says how a warp loads a 16 x 16 fragment from shared
// memory, multiplies 16 x 16 x 16, and stores its accumulator, and how wide a warp is (32
// lanes on CUDA, 64 on AMD). A block of kTensorWarps warps computes a 64 x 64 tile of C,
// each warp a 32 x 32 quarter of it (2 x 2 fragments), stepping along k kTensorTileK at a
// time through two shared-memory stages: while the warps multiply the slices of one stage,
// each thread's loads of the next slices are already in its registers, written to the
// other stage after (double buffering: one barrier per step, loads in flight during the
// products). The slices are read through the same Operands as the SIMT kernel (any
// strides, implicit convolution matrices), zero outside the matrices, and rows padded by 8
// elements (a multiple WMMA's leading dimension needs, which also spreads the banks). The
// float results go through shared memory to the Operands' store (alpha, beta, any
// layout). float32 and float64 keep the SIMT kernel: float32 on the matrix units would be
// rounded (TF32 on CUDA, xf32 on gfx940), which the TF32-off default forbids. AMD GPUs
// without matrix cores (gfx1030) keep it for every dtype.
inline constexpr int kTensorTile = 64;
inline constexpr int kTensorTileK = 32;
inline constexpr int kTensorWarps = 4;
inline constexpr int kTensorAStride = kTensorTileK + 8;  // 40
inline constexpr int kTensorBStride = kTensorTile + 8;   // 72
inline constexpr int kTensorCStride = kTensorTile + 4;   // 68
inline constexpr int kTensorVector = 8;  // elements a staged run (Note [Vector operand loads])

// A block's threads and the slice elements each one stages, for warps of WarpSize lanes.
template <int WarpSize>
struct TensorTiling {
  static constexpr int kWarpSize = WarpSize;
  static constexpr int kThreads = kTensorWarps * WarpSize;              // 128 or 256
  static constexpr int kLoads = kTensorTile * kTensorTileK / kThreads;  // 16 or 8
  static constexpr int kRuns = kLoads / kTensorVector;
  static_assert(kLoads * kThreads == kTensorTile * kTensorTileK, "every element staged once");
  static_assert(kLoads % kTensorVector == 0, "a thread's elements fill whole runs");
};

// Load number `i` of thread `t` in the A slice (kTensorTile rows x kTensorTileK, threads
// along k) and in the B slice (kTensorTileK rows x kTensorTile, threads along n):
// neighbouring threads read neighbouring elements of a row-major operand.
template <typename Tiling>
LOOM_GPU_HD TileSlot tensor_a_slot(int t, int i) {
  const int slot = t + i * Tiling::kThreads;
  return {slot / kTensorTileK, slot % kTensorTileK};
}
template <typename Tiling>
LOOM_GPU_HD TileSlot tensor_b_slot(int t, int i) {
  const int slot = t + i * Tiling::kThreads;
  return {slot / kTensorTile, slot % kTensorTile};
}
// The first row and column of warp w's 32 x 32 quarter of the tile.
LOOM_GPU_HD TileSlot tensor_warp_origin(int w) {
  return {(w / 2) * 32, (w % 2) * 32};
}

// Note [Vector operand loads]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A strided operand whose runs of 16 bytes along k (A) or along n (B) are aligned (unit
// stride; row and batch strides multiples of a run; a 16-byte aligned start:
// runs_are_vectors) is staged a run at a time, one 16-byte global load instead of one
// load an element. The matrix-core kernel stages 16-bit runs of kTensorVector elements,
// each copied as it is to shared memory in one 16-byte store (the matrix units read the
// same formats); a thread's registers hold kLoads elements either way. The SIMT tiles
// stage float32 runs of four, one of A and one of B a thread a step (each tile's slices
// have exactly that many elements): B's run is one 16-byte store, A's four k go to four
// rows of the k-major slice. A run that crosses the matrix's end along k or n is read
// element by element, zeros past the end. Other operands (a transposed view, an odd row
// length, a convolution's patches, float64) are staged element by element through the
// cursors.

// Run number `i` of thread `t` in the A slice (four runs a row along k) and in the B
// slice (eight runs a k row along n): neighbouring threads read neighbouring runs.
template <typename Tiling>
LOOM_GPU_HD TileSlot tensor_a_run(int t, int i) {
  constexpr int kRunsPerRow = kTensorTileK / kTensorVector;
  const int run = t + i * Tiling::kThreads;
  return {run / kRunsPerRow, run % kRunsPerRow * kTensorVector};
}
template <typename Tiling>
LOOM_GPU_HD TileSlot tensor_b_run(int t, int i) {
  constexpr int kRunsPerRow = kTensorTile / kTensorVector;
  const int run = t + i * Tiling::kThreads;
  return {run / kRunsPerRow, run % kRunsPerRow * kTensorVector};
}

// Whether a strided operand of `rows` rows (and `batch` matrices) is read in 16-byte runs
// (8 16-bit elements, 4 float32) along the dim whose stride is `unit_stride` (Note [Vector
// operand loads]).
inline bool runs_are_vectors(const void* start, int element_bytes, int64_t unit_stride,
                             int64_t rows, int64_t row_stride, int64_t batch,
                             int64_t batch_stride) {
  if (element_bytes != 2 && element_bytes != 4) return false;
  const int64_t run = 16 / element_bytes;
  return unit_stride == 1 && reinterpret_cast<uintptr_t>(start) % 16 == 0 &&
         (rows <= 1 || row_stride % run == 0) && (batch <= 1 || batch_stride % run == 0);
}

// Note [MFMA fragments]
// ~~~~~~~~~~~~~~~~~~~~~
// AMD's v_mfma_f32_16x16x16f16 and v_mfma_f32_16x16x16bf16_1k (gfx90a; gfx940 spells them
// _16x16x16_f16 and _bf16) add a 16 x 16 x 16 product to a 16 x 16 float accumulator over
// one 64-lane wavefront. Each lane holds four elements of each operand, in a layout the
// instruction fixes (AMD's matrix instruction calculator): lane l holds A[l % 16][4 (l / 16)
// + e] and B[4 (l / 16) + e][l % 16] for e = 0..3 (four neighbouring k: one 8-byte read of
// a k-contiguous A row), and accumulator elements C[4 (l / 16) + e][l % 16]. The emulator
// multiplies in the same layout, lane by lane (emulator/block_scheduler.cc).
inline constexpr int kMfmaWaveSize = 64;

// Whether an AMD GPU of this architecture name (hipDeviceProp_t::gcnArchName, such as
// "gfx90a:sramecc+:xnack-") has those instructions as the matrix-core kernel uses them:
// gfx90a (MI200) and gfx940-942 (MI300; Debian's LLVM 15 targets gfx940 only). The device
// passes that compile the instructions are chosen by the same list
// (LOOM_GPU_MFMA_INSTRUCTIONS in gemm_kernel.cuh). gfx908 lacks the bfloat16 one.
inline bool arch_has_mfma(const char* gcn_arch_name) {
  for (const char* arch : {"gfx90a", "gfx940", "gfx941", "gfx942"}) {
    if (std::strncmp(gcn_arch_name, arch, 6) == 0) return true;
  }
  return false;
}
LOOM_GPU_HD TileSlot mfma_a_element(int lane, int e) {
  return {lane % 16, 4 * (lane / 16) + e};
}
LOOM_GPU_HD TileSlot mfma_b_element(int lane, int e) {
  return {4 * (lane / 16) + e, lane % 16};
}
LOOM_GPU_HD TileSlot mfma_accumulator_element(int lane, int e) {
  return {4 * (lane / 16) + e, lane % 16};
}

}  // namespace loom::gpu
