// The GPU kernels' index math and launch planning, on the host (kernels/index_math.h):
// what the kernels compute offsets and launch shapes with, checked without a GPU.
#include "../../plugins/gpu/kernels/index_math.h"

#include <gtest/gtest.h>

#include <vector>

namespace loom::gpu {
namespace {

// Every operand offset of every element, the slow way: row-major over `sizes`.
std::vector<int64_t> reference_offsets(const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides) {
  std::vector<int64_t> out;
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, offset = 0;
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      offset += (rest % sizes[d]) * strides[d];
      rest /= sizes[d];
    }
    out.push_back(offset);
  }
  return out;
}

TEST(GpuIndexMath, ContiguousOperandsCoalesceToOneDim) {
  const std::vector<int64_t> sizes = {2, 3, 4}, strides = {12, 4, 1};
  const int64_t* lists[2] = {strides.data(), strides.data()};
  StridedSpace<2> s;
  ASSERT_TRUE(make_strided_space<2>(sizes.data(), 3, lists, &s));
  EXPECT_EQ(s.ndim, 1);
  EXPECT_EQ(s.sizes[0], 24);
  EXPECT_TRUE(s.contiguous());
}

TEST(GpuIndexMath, BroadcastAndTransposedOperandsKeepTheirDims) {
  // out [2, 3, 4] contiguous; in0 broadcast along dim 1 (stride 0); in1 a transposed view.
  const std::vector<int64_t> sizes = {2, 3, 4};
  const std::vector<int64_t> out = {12, 4, 1}, broadcast = {4, 0, 1}, transposed = {1, 8, 2};
  const int64_t* lists[3] = {out.data(), broadcast.data(), transposed.data()};
  StridedSpace<3> s;
  ASSERT_TRUE(make_strided_space<3>(sizes.data(), 3, lists, &s));
  EXPECT_FALSE(s.contiguous());
  EXPECT_EQ(s.numel(), 24);
  const std::vector<int64_t> expected[3] = {reference_offsets(sizes, out),
                                            reference_offsets(sizes, broadcast),
                                            reference_offsets(sizes, transposed)};
  for (int64_t i = 0; i < 24; ++i) {
    int64_t o[3];
    s.offsets(i, o);
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(o[k], expected[k][i]) << "element " << i << " operand " << k;
    int32_t o32[3];
    s.offsets(static_cast<int32_t>(i), o32);
    EXPECT_EQ(o32[1], expected[1][i]);
  }
}

TEST(GpuIndexMath, SizeOneDimsAreDroppedAndScalarsHaveNoDims) {
  const std::vector<int64_t> sizes = {1, 5, 1}, strides = {7, 3, 9};
  const int64_t* lists[1] = {strides.data()};
  StridedSpace<1> s;
  ASSERT_TRUE(make_strided_space<1>(sizes.data(), 3, lists, &s));
  EXPECT_EQ(s.ndim, 1);
  EXPECT_EQ(s.strides[0][0], 3);
  StridedSpace<1> scalar;
  ASSERT_TRUE(make_strided_space<1>(nullptr, 0, lists, &scalar));
  EXPECT_EQ(scalar.ndim, 0);
  EXPECT_EQ(scalar.numel(), 1);
  int64_t o[1];
  scalar.offsets(int64_t{0}, o);
  EXPECT_EQ(o[0], 0);
}

TEST(GpuIndexMath, TooManyUnmergeableDimsAreRefused) {
  std::vector<int64_t> sizes(kMaxDims + 1, 2), strides(kMaxDims + 1);
  for (int d = 0; d <= kMaxDims; ++d) strides[d] = int64_t{1} << (2 * (kMaxDims - d));  // gaps
  const int64_t* lists[1] = {strides.data()};
  StridedSpace<1> s;
  EXPECT_FALSE(make_strided_space<1>(sizes.data(), kMaxDims + 1, lists, &s));
}

// The 32-bit index path takes negative offsets (flip's backward reads) while both their
// lowest and highest reach fit, and its offsets then equal the 64-bit ones.
TEST(GpuIndexMath, Int32IndicesFitNegativeStridesAndRefuseFarReaches) {
  const std::vector<int64_t> sizes = {3, 4}, out_strides = {4, 1}, flipped = {-4, -1};
  const int64_t* lists[2] = {out_strides.data(), flipped.data()};
  StridedSpace<2> s;
  ASSERT_TRUE(make_strided_space<2>(sizes.data(), 2, lists, &s));
  ASSERT_TRUE(fits_int32(s));
  const std::vector<int64_t> expected = reference_offsets(sizes, flipped);
  for (int32_t i = 0; i < 12; ++i) {
    int32_t offsets[2];
    s.offsets(i, offsets);
    EXPECT_EQ(offsets[1], expected[static_cast<size_t>(i)]);
  }
  const int64_t far = int64_t{1} << 30;
  for (const std::vector<int64_t>& strides :
       {std::vector<int64_t>{far, 1}, std::vector<int64_t>{-far, 1}}) {
    const std::vector<int64_t> big = {4, 2};
    const int64_t* far_lists[2] = {out_strides.data(), strides.data()};
    StridedSpace<2> f;
    ASSERT_TRUE(make_strided_space<2>(big.data(), 2, far_lists, &f));
    EXPECT_FALSE(fits_int32(f)) << strides[0];  // 3 * 2^30 is past 2^31 either way
  }
  // Mixed signs: the total reach (2^31 - 1) fits, element [2, 0]'s offset 2^31 does not.
  const std::vector<int64_t> mixed = {far, -1}, two = {3, 2};
  const int64_t* mixed_lists[2] = {out_strides.data(), mixed.data()};
  StridedSpace<2> m;
  ASSERT_TRUE(make_strided_space<2>(two.data(), 2, mixed_lists, &m));
  EXPECT_FALSE(fits_int32(m));
}

TEST(GpuIndexMath, ElementwiseLaunchCoversEveryElement) {
  for (int64_t n :
       {int64_t{1}, int64_t{511}, int64_t{512}, int64_t{513}, int64_t{1} << 20, int64_t{1} << 34}) {
    const Launch l = plan_elementwise(n);
    EXPECT_EQ(l.block, kElementwiseBlock);
    EXPECT_GE(l.grid, 1u);
    EXPECT_LE(l.grid, kMaxGrid);
    // Grid-stride loops: one pass or more covers n.
    const int64_t per_pass = int64_t{l.grid} * l.block * kElementwisePerThread;
    if (l.grid < kMaxGrid) {
      EXPECT_GE(per_pass, n) << n;
    }
  }
}

TEST(GpuIndexMath, VectorWidthFollowsAlignmentAndElementSize) {
  alignas(64) static char buffer[256];
  const int float_size[2] = {4, 4};
  const void* aligned[2] = {buffer, buffer + 64};
  EXPECT_EQ(vector_width(aligned, float_size, 2), 4);
  const void* off_by_4[2] = {buffer, buffer + 4};
  EXPECT_EQ(vector_width(off_by_4, float_size, 2), 1);
  const void* off_by_8[2] = {buffer, buffer + 8};
  EXPECT_EQ(vector_width(off_by_8, float_size, 2), 2);
  const int half_size[1] = {2};
  const void* one[1] = {buffer};
  EXPECT_EQ(vector_width(one, half_size, 1), 8);
  const int mixed[2] = {1, 8};  // a bool out of a double input: 16 bytes of the double
  EXPECT_EQ(vector_width(aligned, mixed, 2), 2);
}

TEST(GpuIndexMath, ReductionLaunchSplitsRowsByLength) {
  const ReductionLaunch long_rows = plan_reduction(10, 1 << 20);
  EXPECT_EQ(long_rows.threads_per_row, 512u);
  EXPECT_EQ(long_rows.rows_per_block, 1u);
  EXPECT_EQ(long_rows.grid, 10u);
  const ReductionLaunch short_rows = plan_reduction(1 << 20, 3);
  EXPECT_EQ(short_rows.threads_per_row, 1u);
  EXPECT_EQ(short_rows.rows_per_block, 512u);
  EXPECT_EQ(short_rows.grid, 2048u);
  for (int64_t length : {1, 7, 64, 1000}) {
    const ReductionLaunch l = plan_reduction(100, length);
    EXPECT_EQ(l.threads_per_row * l.rows_per_block, 512u);
    EXPECT_EQ(l.threads_per_row & (l.threads_per_row - 1), 0u);  // a power of two (the tree)
  }
}

// Note [Split reductions]: a full sum of 64M elements splits into many non-empty chunks
// with a workspace of 8 bytes each; many rows, or short ones, are not split.
TEST(ReductionPlan, FewLongRowsSplitIntoNonEmptyChunks) {
  const ReductionSplit full = plan_reduction_split(1, int64_t{1} << 26);
  EXPECT_EQ(full.chunks, 1024);
  EXPECT_EQ(full.chunk_length, 65536);
  EXPECT_EQ(full.workspace_bytes, 1024 * 8);
  for (int64_t outputs : {1, 3, 100}) {
    for (int64_t length : {32768, 100003, 5000000}) {
      const ReductionSplit s = plan_reduction_split(outputs, length);
      ASSERT_GE(s.chunks, 2) << outputs << " x " << length;
      EXPECT_GE(s.chunks * s.chunk_length, length);
      EXPECT_LT((s.chunks - 1) * s.chunk_length, length);  // the last chunk is not empty
      EXPECT_EQ(s.workspace_bytes, outputs * s.chunks * 8);
    }
  }
  EXPECT_EQ(plan_reduction_split(8192, 8192).chunks, 1);
  EXPECT_EQ(plan_reduction_split(1, 20000).chunks, 1);
  EXPECT_EQ(plan_reduction_split(1000, int64_t{1} << 20).workspace_bytes, 0);
}

}  // namespace
}  // namespace loom::gpu
