// The GPU kernels' index math and launch planning, on the host (kernels/index_math.h):
// what the kernels compute offsets and launch shapes with, checked without a GPU.
#include "../../plugins/gpu/kernels/index_math.h"

#include <gtest/gtest.h>

#include <random>
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

TEST(GpuIndexMath, InvariantDivisionMatchesTheDivider) {
  std::mt19937 random(7);
  std::vector<uint32_t> divisors = {1,
                                    2,
                                    3,
                                    5,
                                    7,
                                    10,
                                    28,
                                    64,
                                    100,
                                    255,
                                    256,
                                    257,
                                    641,
                                    4095,
                                    65535,
                                    65536,
                                    65537,
                                    1000003,
                                    (1u << 30) + 1,
                                    (1u << 31) - 1,
                                    1u << 31};
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + random() % (1u << 31));
  for (uint32_t d : divisors) {
    const IntDivider divider(d);
    std::vector<uint32_t> numerators = {0, 1, d - 1, d, (1u << 31) - 1, (1u << 31) - 2};
    if (d < (1u << 30)) numerators.insert(numerators.end(), {d + 1, 2 * d - 1, 2 * d});
    for (int j = 0; j < 200; ++j) numerators.push_back(random() % (1u << 31));
    for (uint32_t n : numerators) {
      if (n >= (1u << 31)) continue;
      ASSERT_EQ(divider.div(n), n / d) << n << " / " << d;
    }
  }
}

TEST(GpuIndexMath, OffsetCalculatorMatchesTheSpace) {
  // out [3, 5, 7] dense; a broadcast row; a transposed view with a negative stride
  const std::vector<int64_t> sizes = {3, 5, 7};
  const std::vector<int64_t> out = {35, 7, 1}, row = {0, 0, 1}, flipped = {1, -3, 15};
  const int64_t* lists[3] = {out.data(), row.data(), flipped.data()};
  StridedSpace<3> s;
  ASSERT_TRUE(make_strided_space<3>(sizes.data(), 3, lists, &s));
  ASSERT_TRUE(fits_int32(s));
  const OffsetCalculator<3> calc = offset_calculator(s);
  for (int64_t i = 0; i < s.numel(); ++i) {
    int64_t wide[3];
    s.offsets(i, wide);
    int32_t narrow[3];
    calc.offsets(static_cast<uint32_t>(i), narrow);
    for (int k = 0; k < 3; ++k)
      ASSERT_EQ(narrow[k], wide[k]) << "element " << i << " operand " << k;
  }
}

TEST(GpuIndexMath, BroadcastInnerVectorsNeedADenseAlignedInnerDim) {
  alignas(64) static float buffer[1024];
  const int sizes4[3] = {4, 4, 4};
  const void* pointers[3] = {buffer, buffer + 256, buffer + 512};
  // x [8, 16] * row [16]: out and x dense, the row broadcast along the outer dim
  const std::vector<int64_t> shape = {8, 16}, dense = {16, 1}, row = {0, 1};
  const int64_t* lists[3] = {dense.data(), dense.data(), row.data()};
  StridedSpace<3> s;
  ASSERT_TRUE(make_strided_space<3>(shape.data(), 2, lists, &s));
  ASSERT_EQ(s.ndim, 2);
  EXPECT_EQ(inner_vector_width(s, pointers, sizes4), 4);
  // x * column [8, 1]: the column is broadcast along the inner dim (stride 0), still fine
  const std::vector<int64_t> column = {1, 0};
  const int64_t* with_column[3] = {dense.data(), dense.data(), column.data()};
  ASSERT_TRUE(make_strided_space<3>(shape.data(), 2, with_column, &s));
  EXPECT_EQ(inner_vector_width(s, pointers, sizes4), 4);
  // a misaligned dense input halves the width; an inner size of 6 allows only 2
  const void* misaligned[3] = {buffer, buffer + 258, buffer + 512};
  ASSERT_TRUE(make_strided_space<3>(shape.data(), 2, lists, &s));
  EXPECT_EQ(inner_vector_width(s, misaligned, sizes4), 2);
  const std::vector<int64_t> narrow = {8, 6}, narrow_dense = {6, 1};
  const int64_t* narrow_lists[3] = {narrow_dense.data(), narrow_dense.data(), row.data()};
  ASSERT_TRUE(make_strided_space<3>(narrow.data(), 2, narrow_lists, &s));
  EXPECT_EQ(inner_vector_width(s, pointers, sizes4), 2);
  // an input walking the inner dim with stride 2, or an out that is not dense: none
  const std::vector<int64_t> strided = {32, 2};
  const int64_t* with_strided[3] = {dense.data(), strided.data(), row.data()};
  ASSERT_TRUE(make_strided_space<3>(shape.data(), 2, with_strided, &s));
  EXPECT_EQ(inner_vector_width(s, pointers, sizes4), 1);
  const int64_t* transposed_out[3] = {strided.data(), dense.data(), row.data()};
  ASSERT_TRUE(make_strided_space<3>(shape.data(), 2, transposed_out, &s));
  EXPECT_EQ(inner_vector_width(s, pointers, sizes4), 1);
  // an outer stride that breaks the vectors' alignment (rows of 17 elements)
  const std::vector<int64_t> padded = {17, 1};
  const int64_t* padded_lists[3] = {dense.data(), padded.data(), row.data()};
  ASSERT_TRUE(make_strided_space<3>(shape.data(), 2, padded_lists, &s));
  EXPECT_EQ(inner_vector_width(s, pointers, sizes4), 1);
  // a host scalar (no pointer) never limits it
  const void* with_scalar[3] = {buffer, nullptr, buffer + 512};
  ASSERT_TRUE(make_strided_space<3>(shape.data(), 2, lists, &s));
  EXPECT_EQ(inner_vector_width(s, with_scalar, sizes4), 4);
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
  for (int64_t length : {32768, 100003, 5000000}) {  // chunks start on a 16-byte vector
    EXPECT_EQ(plan_reduction_split(1, length).chunk_length % kReductionVector, 0) << length;
  }
  EXPECT_EQ(plan_reduction_split(8192, 8192).chunks, 1);
  EXPECT_EQ(plan_reduction_split(1, 20000).chunks, 1);
  EXPECT_EQ(plan_reduction_split(1000, int64_t{1} << 20).workspace_bytes, 0);
}

// The spaces reduction_ops.cc builds for an [outer, inner] input reduced over `dim`.
struct TwoDimReduction {
  StridedSpace<2> rows, row;
};
TwoDimReduction reduce_2d(int64_t outer, int64_t inner, int dim) {
  TwoDimReduction r;
  const int64_t kept_size[1] = {dim == 0 ? inner : outer};
  const int64_t kept_in[1] = {dim == 0 ? 1 : inner}, kept_out[1] = {1};
  const int64_t reduced_size[1] = {dim == 0 ? outer : inner};
  const int64_t reduced_in[1] = {dim == 0 ? inner : 1};
  const int64_t* rows_strides[2] = {kept_out, kept_in};
  const int64_t* row_strides[2] = {reduced_in, reduced_in};
  EXPECT_TRUE(make_strided_space<2>(kept_size, 1, rows_strides, &r.rows));
  EXPECT_TRUE(make_strided_space<2>(reduced_size, 1, row_strides, &r.row));
  return r;
}

// Note [Reductions over outer dims]: a sum over dim 0 reads along the kept dim; a sum over the last
// dim, a full sum and narrow outputs keep the rows layout.
TEST(ReductionPlan, OuterDimsOfWideTensorsReduceByColumns) {
  const TwoDimReduction columns = reduce_2d(8192, 8192, 0);
  EXPECT_TRUE(is_column_reduction(columns.rows, columns.row, 1));
  const TwoDimReduction rows = reduce_2d(8192, 8192, 1);
  EXPECT_FALSE(is_column_reduction(rows.rows, rows.row, 1));
  const TwoDimReduction narrow = reduce_2d(100000, 4, 0);
  EXPECT_FALSE(is_column_reduction(narrow.rows, narrow.row, 1));
  StridedSpace<2> none;  // a full sum: no kept dims
  EXPECT_FALSE(is_column_reduction(none, rows.row, 1));
  // 8192 outputs fill the GPU without a split: 32 outputs by 16 threads a block
  const ColumnReduction wide = plan_column_reduction(8192, 8192);
  EXPECT_EQ(wide.columns, 32u);
  EXPECT_EQ(wide.splits, 16u);
  EXPECT_EQ(wide.grid, 256u);
  EXPECT_EQ(wide.chunks, 1);
  EXPECT_EQ(reduction_workspace_bytes(columns.rows, columns.row, 1), 0);
  // few outputs, long columns: split over grid.y, every chunk non-empty
  for (int64_t outputs : {32, 100, 2000}) {
    for (int64_t length : {1, 15, 600, 1 << 20, 3000017}) {
      const ColumnReduction p = plan_column_reduction(outputs, length);
      EXPECT_EQ(p.columns * p.splits <= 512, true);
      EXPECT_EQ(p.splits & (p.splits - 1), 0u) << "a power of two (the tree)";
      EXPECT_GE(p.grid * int64_t{p.columns}, std::min<int64_t>(outputs, int64_t{kMaxGrid} * 32));
      EXPECT_GE(p.chunks * p.chunk_length, length);
      EXPECT_LT((p.chunks - 1) * p.chunk_length, length);
      EXPECT_LE(p.chunks, 65535);  // grid.y
      EXPECT_EQ(p.workspace_bytes, p.chunks > 1 ? outputs * p.chunks * 8 : 0);
    }
  }
  EXPECT_GT(plan_column_reduction(64, 1 << 20).chunks, 100);
}

// Note [Vectorised rows]: dense rows read in 16-byte vectors when every row and chunk
// starts on one.
TEST(ReductionPlan, DenseAlignedRowsReadVectors) {
  alignas(16) static float data[64];
  const TwoDimReduction rows = reduce_2d(8192, 8192, 1);
  EXPECT_TRUE(rows_are_vectorisable(rows.rows, 1, rows.row, 8192, data, 4));
  EXPECT_FALSE(rows_are_vectorisable(rows.rows, 1, rows.row, 8192, data + 1, 4));  // unaligned
  const TwoDimReduction odd = reduce_2d(100, 1001, 1);  // row starts 1001 apart
  EXPECT_FALSE(rows_are_vectorisable(odd.rows, 1, odd.row, 1001, data, 4));
  const TwoDimReduction columns = reduce_2d(8192, 8192, 0);  // stride 8192 within a row
  EXPECT_FALSE(rows_are_vectorisable(columns.rows, 1, columns.row, 8192, data, 4));
  // a full sum split into chunks of a multiple of 8
  StridedSpace<2> full_rows;
  const TwoDimReduction full = reduce_2d(1, int64_t{1} << 26, 1);
  const ReductionSplit split = plan_reduction_split(1, int64_t{1} << 26);
  EXPECT_TRUE(rows_are_vectorisable(full_rows, 1, full.row, split.chunk_length, data, 4));
  EXPECT_FALSE(rows_are_vectorisable(full_rows, 1, full.row, 1001, data, 4));
  // 8-byte elements take vectors of 2; 1-byte elements vectors of 8
  EXPECT_TRUE(rows_are_vectorisable(full_rows, 1, full.row, 1 << 26, data, 8));
  EXPECT_TRUE(rows_are_vectorisable(full_rows, 1, full.row, 1 << 26, data, 1));
}

}  // namespace
}  // namespace loom::gpu
