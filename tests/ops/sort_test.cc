// The sorting ops through the typed API, against hand-computed values: sort (stable,
// NaN largest), argsort and topk (largest and smallest), on strided and several-dtype
// inputs, and the errors.
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

}  // namespace
}  // namespace loom::testing
