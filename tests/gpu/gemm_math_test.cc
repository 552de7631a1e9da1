// The tiling of loom's GEMM kernels on the host (kernels/gemm_math.h): the grid covers every
// output tile (looping where a grid dim runs out), each tile's outputs belong to exactly
// one thread, each shared-memory slice element is staged by exactly one load, and a
// replay of a block's staging and products gives the plain product.
#include "../../plugins/gpu/kernels/gemm_math.h"

#include <gtest/gtest.h>

#include <vector>

namespace loom::gpu {
namespace {

TEST(GpuGemmMath, TheGridCoversEveryTileAndLoopsPastGridLimits) {
  GemmLaunch l = plan_gemm(100, 130, 3);
  EXPECT_EQ(l.grid_x, 3u);  // ceil(130 / 64)
  EXPECT_EQ(l.grid_y, 2u);  // ceil(100 / 64)
  EXPECT_EQ(l.grid_z, 3u);
  EXPECT_EQ(l.row_tiles, 2);
  l = plan_gemm(int64_t{64} * 70000, 64, 100000);  // more row tiles and batches than y / z
  EXPECT_EQ(l.grid_y, kMaxGridYZ);
  EXPECT_EQ(l.grid_z, kMaxGridYZ);
  EXPECT_EQ(l.row_tiles, 70000);  // the kernel's y loop covers the rest
  EXPECT_EQ(plan_gemm(0, 5, 1).grid_x, 0u);
  EXPECT_EQ(plan_gemm(5, 5, 0).grid_x, 0u);
  l = plan_gemm(300, 129, 2, LargeGemmTile::kRows);
  EXPECT_EQ(l.grid_x, 2u);
  EXPECT_EQ(l.grid_y, 3u);
}

template <typename Tile>
class GpuGemmTile : public testing::Test {};
using GemmTiles = testing::Types<SmallGemmTile, LargeGemmTile>;
TYPED_TEST_SUITE(GpuGemmTile, GemmTiles);

TYPED_TEST(GpuGemmTile, EveryOutputOfATileHasExactlyOneThread) {
  using Tile = TypeParam;
  std::vector<int> owners(Tile::kRows * Tile::kCols, 0);
  for (int t = 0; t < Tile::kThreads; ++t) {
    for (int i = 0; i < Tile::kRowsPerThread; ++i) {
      for (int j = 0; j < Tile::kColsPerThread; ++j) {
        const int r = gemm_output_row<Tile>(t, i), c = gemm_output_col<Tile>(t, j);
        ASSERT_LT(r, Tile::kRows);
        ASSERT_LT(c, Tile::kCols);
        ++owners[r * Tile::kCols + c];
      }
    }
  }
  for (int o : owners) EXPECT_EQ(o, 1);
}

// Note [GEMM operand cursors]: a thread's A loads keep one k and its B loads one column,
// so one cursor per row and one per column serve every step.
TYPED_TEST(GpuGemmTile, EverySliceElementIsStagedByExactlyOneLoadOfFixedKAndColumn) {
  using Tile = TypeParam;
  std::vector<int> a(Tile::kRows * Tile::kDepth, 0), b(Tile::kDepth * Tile::kCols, 0);
  for (int t = 0; t < Tile::kThreads; ++t) {
    for (int i = 0; i < Tile::kALoads; ++i) {
      const TileSlot sa = gemm_a_slot<Tile>(t, i);
      ASSERT_LT(sa.row, Tile::kRows);
      ASSERT_LT(sa.col, Tile::kDepth);
      EXPECT_EQ(sa.col, gemm_a_slot<Tile>(t, 0).col);
      ++a[sa.row * Tile::kDepth + sa.col];
    }
    for (int i = 0; i < Tile::kBLoads; ++i) {
      const TileSlot sb = gemm_b_slot<Tile>(t, i);
      ASSERT_LT(sb.row, Tile::kDepth);
      ASSERT_LT(sb.col, Tile::kCols);
      EXPECT_EQ(sb.col, gemm_b_slot<Tile>(t, 0).col);
      ++b[sb.row * Tile::kCols + sb.col];
    }
  }
  for (int n : a) EXPECT_EQ(n, 1);
  for (int n : b) EXPECT_EQ(n, 1);
  // coalescing: a warp's loads of a B row are adjacent columns, of a row-major A adjacent k
  for (int t = 0; t + 1 < 32; ++t) {
    EXPECT_EQ(gemm_b_slot<Tile>(t + 1, 0).col, gemm_b_slot<Tile>(t, 0).col + 1);
    if ((t + 1) % Tile::kDepth != 0) {
      EXPECT_EQ(gemm_a_slot<Tile>(t + 1, 0).col, gemm_a_slot<Tile>(t, 0).col + 1);
    }
  }
}

// The block's data movement replayed on the host with the kernel's own index functions:
// each step stages both slices from every thread's loads (zero outside the matrices),
// each thread reads its fragments as 16-byte-aligned groups of four and accumulates. The
// outputs equal a plain product, for sizes that leave partial tiles and a partial k step.
TYPED_TEST(GpuGemmTile, ReplayingTheBlocksStagingAndProductsGivesThePlainProduct) {
  using Tile = TypeParam;
  const int m = Tile::kRows + 37, n = Tile::kCols * 2 + 5, k = Tile::kDepth * 3 + 3;
  std::vector<double> a(m * k), b(k * n);
  for (int i = 0; i < m * k; ++i) a[i] = (i * 7 % 13) - 6;
  for (int i = 0; i < k * n; ++i) b[i] = (i * 5 % 11) - 5;
  std::vector<double> c(m * n, 0.0);
  std::vector<int> writes(m * n, 0);
  const GemmLaunch l = plan_gemm(m, n, 1, Tile::kRows);
  std::vector<double> a_shared(Tile::kDepth * Tile::kAStride),
      b_shared(Tile::kDepth * Tile::kBStride);
  for (uint32_t bx = 0; bx < l.grid_x; ++bx) {
    for (int64_t tile = 0; tile < l.row_tiles; ++tile) {
      const int row0 = static_cast<int>(tile) * Tile::kRows, col0 = bx * Tile::kCols;
      std::vector<double> acc(Tile::kThreads * Tile::kRowsPerThread * Tile::kColsPerThread, 0.0);
      for (int k0 = 0; k0 < k; k0 += Tile::kDepth) {
        for (int t = 0; t < Tile::kThreads; ++t) {
          for (int i = 0; i < Tile::kALoads; ++i) {
            const TileSlot sa = gemm_a_slot<Tile>(t, i);
            const int r = row0 + sa.row, kk = k0 + sa.col;
            a_shared.at(gemm_a_shared<Tile>(sa.row, sa.col)) = r < m && kk < k ? a[r * k + kk] : 0;
          }
          for (int i = 0; i < Tile::kBLoads; ++i) {
            const TileSlot sb = gemm_b_slot<Tile>(t, i);
            const int kk = k0 + sb.row, col = col0 + sb.col;
            b_shared.at(gemm_b_shared<Tile>(sb.row, sb.col)) =
                kk < k && col < n ? b[kk * n + col] : 0;
          }
        }
        for (int t = 0; t < Tile::kThreads; ++t) {
          double* mine = &acc[t * Tile::kRowsPerThread * Tile::kColsPerThread];
          for (int kk = 0; kk < Tile::kDepth; ++kk) {
            for (int i = 0; i < Tile::kRowsPerThread; ++i) {
              const int at = gemm_a_shared<Tile>(gemm_output_row<Tile>(t, i), kk);
              ASSERT_TRUE(i % 4 != 0 || at % 4 == 0) << "a vector read off its 16 bytes";
              for (int j = 0; j < Tile::kColsPerThread; ++j) {
                const int bt = gemm_b_shared<Tile>(kk, gemm_output_col<Tile>(t, j));
                ASSERT_TRUE(j % 4 != 0 || bt % 4 == 0) << "a vector read off its 16 bytes";
                // a group of four is four neighbours in shared memory
                ASSERT_EQ(at, gemm_a_shared<Tile>(gemm_output_row<Tile>(t, i - i % 4), kk) + i % 4);
                ASSERT_EQ(bt, gemm_b_shared<Tile>(kk, gemm_output_col<Tile>(t, j - j % 4)) + j % 4);
                mine[i * Tile::kColsPerThread + j] += a_shared.at(at) * b_shared.at(bt);
              }
            }
          }
        }
      }
      for (int t = 0; t < Tile::kThreads; ++t) {
        for (int i = 0; i < Tile::kRowsPerThread; ++i) {
          for (int j = 0; j < Tile::kColsPerThread; ++j) {
            const int r = row0 + gemm_output_row<Tile>(t, i),
                      col = col0 + gemm_output_col<Tile>(t, j);
            if (r >= m || col >= n) continue;
            c[r * n + col] = acc[(t * Tile::kRowsPerThread + i) * Tile::kColsPerThread + j];
            ++writes[r * n + col];
          }
        }
      }
    }
  }
  for (int r = 0; r < m; ++r) {
    for (int col = 0; col < n; ++col) {
      double want = 0;
      for (int kk = 0; kk < k; ++kk) want += a[r * k + kk] * b[kk * n + col];
      ASSERT_EQ(c[r * n + col], want) << "output " << r << ", " << col;
      ASSERT_EQ(writes[r * n + col], 1);
    }
  }
  // both stages of both slices fit a block's 48 KB of static shared memory as float
  EXPECT_LE(2 * (Tile::kDepth * Tile::kAStride + Tile::kDepth * Tile::kBStride) * 4, 48 * 1024);
  EXPECT_EQ(Tile::kAStride % 4, 0);
}

TEST(GpuGemmMath, LargeTilesAreTakenOnlyWhenTheyFillTheGpu) {
  EXPECT_TRUE(takes_large_gemm_tile({4096, 4096, 4096, 1}, true));    // 1,024 tiles
  EXPECT_FALSE(takes_large_gemm_tile({4096, 4096, 4096, 1}, false));  // float64
  EXPECT_FALSE(
      takes_large_gemm_tile({1024, 1024, 1024, 1}, true));        // 64 tiles: the small tile's 256
  EXPECT_TRUE(takes_large_gemm_tile({1024, 1024, 64, 4}, true));  // the batch fills it
  // a 3x3 64 -> 64 convolution of 8 images at 56 x 56: 200 tiles of 128, 392 of 64
  EXPECT_FALSE(takes_large_gemm_tile({64, 3136, 576, 8}, true));
}

// Every element of both slices staged by exactly one load of a block of `Tiling`.
template <typename Tiling>
void expect_tensor_slices_covered() {
  std::vector<int> a(kTensorTile * kTensorTileK, 0), b(kTensorTileK * kTensorTile, 0);
  for (int t = 0; t < Tiling::kThreads; ++t) {
    for (int i = 0; i < Tiling::kLoads; ++i) {
      const TileSlot sa = tensor_a_slot<Tiling>(t, i), sb = tensor_b_slot<Tiling>(t, i);
      ASSERT_LT(sa.row, kTensorTile);
      ASSERT_LT(sb.row, kTensorTileK);
      ++a[sa.row * kTensorTileK + sa.col];
      ++b[sb.row * kTensorTile + sb.col];
    }
    // one B column for every load (one cursor)
    EXPECT_EQ(tensor_b_slot<Tiling>(t, Tiling::kLoads - 1).col, tensor_b_slot<Tiling>(t, 0).col);
    // neighbouring threads, neighbouring elements
    if (t + 1 < Tiling::kThreads && (t + 1) % kTensorTileK != 0) {
      EXPECT_EQ(tensor_a_slot<Tiling>(t + 1, 0).col, tensor_a_slot<Tiling>(t, 0).col + 1);
    }
  }
  for (int v : a) EXPECT_EQ(v, 1);
  for (int v : b) EXPECT_EQ(v, 1);
}

// Note [Tensor-core GEMM]: the slices covered for CUDA's 32-lane warps and AMD's 64-lane
// wavefronts, the four warps' quarters tiling the output tile, and the padded rows fitting
// WMMA's leading dimension rules (a multiple of 8 halves, of 4 floats).
TEST(GpuGemmMath, TensorCoreTilesCoverTheirSlicesAndOutputs) {
  expect_tensor_slices_covered<TensorTiling<32>>();
  expect_tensor_slices_covered<TensorTiling<kMfmaWaveSize>>();
  EXPECT_EQ(TensorTiling<32>::kThreads, 128);
  EXPECT_EQ(TensorTiling<kMfmaWaveSize>::kThreads, 256);
  std::vector<int> owners(kTensorTile * kTensorTile, 0);
  for (int w = 0; w < kTensorWarps; ++w) {
    const TileSlot o = tensor_warp_origin(w);
    for (int r = 0; r < 32; ++r) {
      for (int c = 0; c < 32; ++c) ++owners[(o.row + r) * kTensorTile + o.col + c];
    }
  }
  for (int v : owners) EXPECT_EQ(v, 1);
  EXPECT_EQ(kTensorAStride % 8, 0);
  EXPECT_EQ(kTensorBStride % 8, 0);
  EXPECT_EQ(kTensorCStride % 4, 0);
  // two stages of both slices and the float results under 48 KB of shared memory
  const int bytes = 2 * (kTensorTile * kTensorAStride + kTensorTileK * kTensorBStride) * 2 +
                    kTensorTile * kTensorCStride * 4;
  EXPECT_LE(bytes, 48 * 1024);
}

// Note [Vector operand loads]: the runs of each tiling cover both slices once, each run
// inside one row of its slice and 16-byte aligned in shared memory; operands are read in
// runs only when every run starts 16 bytes aligned.
template <typename Tiling>
void expect_tensor_runs_covered() {
  std::vector<int> a(kTensorTile * kTensorTileK, 0), b(kTensorTileK * kTensorTile, 0);
  for (int t = 0; t < Tiling::kThreads; ++t) {
    for (int i = 0; i < Tiling::kRuns; ++i) {
      const TileSlot ra = tensor_a_run<Tiling>(t, i), rb = tensor_b_run<Tiling>(t, i);
      ASSERT_TRUE(ra.row < kTensorTile && ra.col + kTensorVector <= kTensorTileK);
      ASSERT_TRUE(rb.row < kTensorTileK && rb.col + kTensorVector <= kTensorTile);
      EXPECT_EQ((ra.row * kTensorAStride + ra.col) * 2 % 16, 0);
      EXPECT_EQ((rb.row * kTensorBStride + rb.col) * 2 % 16, 0);
      for (int e = 0; e < kTensorVector; ++e) {
        ++a[ra.row * kTensorTileK + ra.col + e];
        ++b[rb.row * kTensorTile + rb.col + e];
      }
    }
  }
  for (int v : a) EXPECT_EQ(v, 1);
  for (int v : b) EXPECT_EQ(v, 1);
}

// The SIMT tiles' float32 runs: one of A and one of B a thread, covering both slices once,
// B's 16-byte aligned in shared memory.
template <typename Tile>
void expect_simt_runs_covered() {
  std::vector<int> a(Tile::kRows * Tile::kDepth, 0), b(Tile::kDepth * Tile::kCols, 0);
  for (int t = 0; t < Tile::kThreads; ++t) {
    const TileSlot ra = gemm_a_run<Tile>(t), rb = gemm_b_run<Tile>(t);
    ASSERT_TRUE(ra.row < Tile::kRows && ra.col + 4 <= Tile::kDepth);
    ASSERT_TRUE(rb.row < Tile::kDepth && rb.col + 4 <= Tile::kCols);
    EXPECT_EQ(gemm_b_shared<Tile>(rb.row, rb.col) % 4, 0);
    for (int e = 0; e < 4; ++e) {
      ++a[ra.row * Tile::kDepth + ra.col + e];
      ++b[rb.row * Tile::kCols + rb.col + e];
    }
  }
  for (int v : a) EXPECT_EQ(v, 1);
  for (int v : b) EXPECT_EQ(v, 1);
}

TEST(GpuGemmMath, OperandsAreStagedInAlignedRunsWhereTheirLayoutAllows) {
  expect_tensor_runs_covered<TensorTiling<32>>();
  expect_tensor_runs_covered<TensorTiling<kMfmaWaveSize>>();
  expect_simt_runs_covered<SmallGemmTile>();
  expect_simt_runs_covered<LargeGemmTile>();
  alignas(16) static const uint16_t data[64] = {};
  // start, element bytes, unit stride, rows, row stride, batch, batch stride
  EXPECT_TRUE(runs_are_vectors(data, 2, 1, 40, 104, 1, 0));
  EXPECT_TRUE(runs_are_vectors(data, 2, 1, 1, 3, 3, 8));          // one row: its stride is unread
  EXPECT_FALSE(runs_are_vectors(data + 1, 2, 1, 40, 104, 1, 0));  // a start off by one element
  EXPECT_FALSE(runs_are_vectors(data, 2, 1, 40, 100, 1, 0));      // rows 200 bytes apart
  EXPECT_FALSE(runs_are_vectors(data, 2, 40, 40, 1, 1, 0));       // a transposed view
  EXPECT_FALSE(runs_are_vectors(data, 2, 1, 40, 104, 2, 4));      // matrices 8 bytes apart
  EXPECT_TRUE(runs_are_vectors(data, 4, 1, 40, 100, 1, 0));       // float32: runs of four
  EXPECT_FALSE(runs_are_vectors(data, 4, 1, 40, 102, 1, 0));
  EXPECT_FALSE(runs_are_vectors(data, 8, 1, 40, 100, 1, 0));  // float64 stays element-wise
}

// Note [MFMA fragments]: a wavefront's 64 lanes hold each element of A, of B and of the
// accumulator exactly once; a lane's four A elements are neighbours along k (one 8-byte
// read of a row of the A slice), and a lane's A row and B column are its accumulator's
// column and rows' partners as the product needs (the same 16 lanes share a k range).
TEST(GpuGemmMath, MfmaFragmentsGiveEveryElementToOneLane) {
  std::vector<int> a(256, 0), b(256, 0), c(256, 0);
  for (int lane = 0; lane < kMfmaWaveSize; ++lane) {
    for (int e = 0; e < 4; ++e) {
      const TileSlot sa = mfma_a_element(lane, e), sb = mfma_b_element(lane, e),
                     sc = mfma_accumulator_element(lane, e);
      ASSERT_TRUE(sa.row < 16 && sa.col < 16 && sb.row < 16 && sb.col < 16);
      ASSERT_TRUE(sc.row < 16 && sc.col < 16);
      ++a[sa.row * 16 + sa.col];
      ++b[sb.row * 16 + sb.col];
      ++c[sc.row * 16 + sc.col];
      EXPECT_EQ(sa.col, mfma_a_element(lane, 0).col + e);  // neighbours along k
      EXPECT_EQ(sb.row, sa.col);                           // A and B share this lane's k
    }
  }
  for (int v : a) EXPECT_EQ(v, 1);
  for (int v : b) EXPECT_EQ(v, 1);
  for (int v : c) EXPECT_EQ(v, 1);
  // the A slice's rows, the fragments' k offsets and each lane's first k keep a lane's
  // 8-byte read of its A elements aligned
  EXPECT_EQ(kTensorAStride * 2 % 8, 0);
  for (int lane = 0; lane < kMfmaWaveSize; ++lane) EXPECT_EQ(mfma_a_element(lane, 0).col % 4, 0);
}

// The architectures whose device passes compile the MFMA instructions, by the names HIP
// gives them (with their feature suffixes).
TEST(GpuGemmMath, OnlyGfx90aAndGfx94xTakeTheMfmaKernel) {
  EXPECT_TRUE(arch_has_mfma("gfx90a:sramecc+:xnack-"));
  EXPECT_TRUE(arch_has_mfma("gfx940"));
  EXPECT_TRUE(arch_has_mfma("gfx942:sramecc+:xnack-"));
  EXPECT_FALSE(arch_has_mfma("gfx908:sramecc+:xnack-"));  // no bfloat16 MFMA of this shape
  EXPECT_FALSE(arch_has_mfma("gfx1030"));
  EXPECT_FALSE(arch_has_mfma("gfx1100"));
  EXPECT_FALSE(arch_has_mfma(""));
}

}  // namespace
}  // namespace loom::gpu
