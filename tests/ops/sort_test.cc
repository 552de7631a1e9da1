// The sorting ops through the typed API, against hand-computed values: sort (stable,
// NaN largest), argsort and topk (largest and smallest), on strided and several-dtype
// inputs, and the errors.
#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Sort : public OpsTest {};

TEST_F(Sort, SortIsStableWithNaNLargest) {
  const double nan = std::nan("");
  Tensor x = make({3, nan, 1, 3, 2}, {5});
  auto [v, i] = sort(x);
  expect_close(values(v), {1, 2, 3, 3, nan});
  EXPECT_EQ(values(i), (Values{2, 4, 0, 3, 1}));
  auto [dv, di] = sort(x, 0, true);
  expect_close(values(dv), {nan, 3, 3, 2, 1});
  EXPECT_EQ(values(di), (Values{1, 0, 3, 4, 2}));
  // along dim 0 of a transposed int tensor
  Tensor m = make({5, 1, 4, 2, 6, 0}, {2, 3}, ScalarType::Int16).t();  // [[5,2],[1,6],[4,0]]
  auto [mv, mi] = sort(m, 0);
  EXPECT_EQ(values(mv), (Values{1, 0, 4, 2, 5, 6}));
  EXPECT_EQ(values(mi), (Values{1, 2, 2, 0, 0, 1}));
  EXPECT_EQ(values(argsort(make({0, 1, 0}, {3}, ScalarType::Bool), -1, true)), (Values{1, 0, 2}));
  EXPECT_EQ(shape(std::get<0>(sort(empty({0, 4}), 1))), (Shape{0, 4}));
}

TEST_F(Sort, TopkLargestAndSmallest) {
  Tensor x = make({1, 5, 3, 5, 2, 4}, {2, 3}, ScalarType::BFloat16);
  auto [v, i] = topk(x, 2);
  EXPECT_EQ(values(v), (Values{5, 3, 5, 4}));
  EXPECT_EQ(values(i), (Values{1, 2, 0, 2}));
  auto [sv, si] = topk(x, 1, 0, false);
  EXPECT_EQ(values(sv), (Values{1, 2, 3}));
  EXPECT_EQ(values(si), (Values{0, 1, 0}));
  EXPECT_EQ(shape(std::get<1>(topk(x, 0))), (Shape{2, 0}));
  expect_error([&] { topk(x, 4); }, "loom::topk", "expected k in [0, 3]");
}

TEST_F(Sort, SearchsortedAndBucketize) {
  Tensor boundaries = make({1, 3, 5, 7, 9}, {5});
  Tensor v = make({3, 6, 9, NAN}, {4});
  // torch.searchsorted(boundaries, v) -> [1, 3, 4, 5]; right=True -> [2, 3, 5, 5]
  EXPECT_EQ(values(searchsorted(boundaries, v)), (Values{1, 3, 4, 5}));
  EXPECT_EQ(values(searchsorted(boundaries, v, false, true)), (Values{2, 3, 5, 5}));
  EXPECT_EQ(searchsorted(boundaries, v).dtype(), ScalarType::Int64);
  EXPECT_EQ(searchsorted(boundaries, v, true).dtype(), ScalarType::Int32);
  // torch.bucketize(v, boundaries) matches searchsorted's left side.
  EXPECT_EQ(values(bucketize(v, boundaries)), (Values{1, 3, 4, 5}));
  EXPECT_EQ(values(bucketize(v, boundaries, false, true)), (Values{2, 3, 5, 5}));
  // Rows of an N-D sorted sequence search their own row.
  Tensor rows = make({1, 2, 3, 10, 20, 30}, {2, 3});
  EXPECT_EQ(values(searchsorted(rows, make({2, 25}, {2, 1}))), (Values{1, 2}));
  expect_error([&] { bucketize(v, rows); }, "loom::bucketize.Tensor", "expected 1-D boundaries");
}

}  // namespace
}  // namespace loom::testing
