// The tiling of loom's GEMM kernel on the host (kernels/gemm_math.h): the grid covers every
// output tile (looping where a grid dim runs out), each tile's outputs belong to exactly
// one thread, and each shared-memory slice element is staged by exactly one load.
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
}

TEST(GpuGemmMath, EveryOutputOfATileHasExactlyOneThread) {
  std::vector<int> owners(kGemmTile * kGemmTile, 0);
  for (int t = 0; t < kGemmThreads; ++t) {
    const GemmThreadBlock b = gemm_thread_block(t);
    for (int i = 0; i < kGemmPerThread; ++i) {
      for (int j = 0; j < kGemmPerThread; ++j) {
        ASSERT_LT(b.row + i, kGemmTile);
        ASSERT_LT(b.col + j, kGemmTile);
        ++owners[(b.row + i) * kGemmTile + b.col + j];
      }
    }
  }
  for (int o : owners) EXPECT_EQ(o, 1);
}

TEST(GpuGemmMath, EverySliceElementIsStagedByExactlyOneLoad) {
  std::vector<int> a(kGemmTile * kGemmTileK, 0), b(kGemmTileK * kGemmTile, 0);
  for (int t = 0; t < kGemmThreads; ++t) {
    for (int i = 0; i < kGemmLoadsPerThread; ++i) {
      const TileSlot sa = a_slice_slot(t, i), sb = b_slice_slot(t, i);
      ASSERT_LT(sa.row, kGemmTile);
      ASSERT_LT(sa.col, kGemmTileK);
      ASSERT_LT(sb.row, kGemmTileK);
      ASSERT_LT(sb.col, kGemmTile);
      ++a[sa.row * kGemmTileK + sa.col];
      ++b[sb.row * kGemmTile + sb.col];
    }
  }
  for (int n : a) EXPECT_EQ(n, 1);
  for (int n : b) EXPECT_EQ(n, 1);
}

TEST(GpuGemmMath, ConsecutiveThreadsLoadConsecutiveColumnsOfB) {
  // coalescing: a warp's loads of a B row are adjacent columns
  for (int t = 0; t + 1 < 32; ++t) {
    EXPECT_EQ(b_slice_slot(t + 1, 0).col, b_slice_slot(t, 0).col + 1);
    EXPECT_EQ(b_slice_slot(t + 1, 0).row, b_slice_slot(t, 0).row);
  }
}

// Note [Tensor-core GEMM]: every element of both slices staged by exactly one load, the
// four warps' quarters tiling the output tile, and the padded rows fitting WMMA's leading
// dimension rules (a multiple of 8 halves, of 4 floats).
TEST(GpuGemmMath, TensorCoreTilesCoverTheirSlicesAndOutputs) {
  std::vector<int> a(kTensorTile * kTensorTileK, 0), b(kTensorTileK * kTensorTile, 0);
  for (int t = 0; t < kTensorThreads; ++t) {
    for (int i = 0; i < kTensorLoads; ++i) {
      const TileSlot sa = tensor_a_slot(t, i), sb = tensor_b_slot(t, i);
      ASSERT_LT(sa.row, kTensorTile);
      ASSERT_LT(sb.row, kTensorTileK);
      ++a[sa.row * kTensorTileK + sa.col];
      ++b[sb.row * kTensorTile + sb.col];
    }
    // neighbouring threads, neighbouring elements
    if (t + 1 < kTensorThreads && (t + 1) % kTensorTileK != 0) {
      EXPECT_EQ(tensor_a_slot(t + 1, 0).col, tensor_a_slot(t, 0).col + 1);
    }
  }
  for (int v : a) EXPECT_EQ(v, 1);
  for (int v : b) EXPECT_EQ(v, 1);
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

}  // namespace
}  // namespace loom::gpu
