// The sorting ops through the typed API, against hand-computed values: sort (stable,
// NaN largest), argsort and topk (largest and smallest), on strided and several-dtype
// inputs, and the errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

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

// Note [Packed sort keys]: float32 and int32 take the packed path; its order must be the
// general comparator's (checked against float64, which does not pack).
TEST_F(Sort, PackedKeysKeepTheGeneralOrder) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  // torch.sort(torch.tensor([0., -0., nan, -inf, 2, -1, inf, -nan, -2, 0.]), stable=True)
  // -> indices [3, 8, 5, 0, 1, 9, 4, 6, 2, 7]: -0.0 ties with 0.0, every NaN last
  const Values data = {0, -0.0, nan, -inf, 2, -1, inf, -nan, -2, 0};
  for (bool descending : {false, true}) {
    auto [reference_values, reference] = sort(make(data, {10}, ScalarType::Float64), 0, descending);
    auto [packed_values, packed] = sort(make(data, {10}, ScalarType::Float32), 0, descending);
    EXPECT_EQ(values(packed), values(reference)) << "descending " << descending;
  }
  EXPECT_EQ(values(std::get<1>(sort(make(data, {10}, ScalarType::Float32)))),
            (Values{3, 8, 5, 0, 1, 9, 4, 6, 2, 7}));
  // int32 extremes and ties, and topk through the same path
  Tensor ints = make({2147483647, -2147483648.0, 0, -1, 0, 5}, {6}, ScalarType::Int32);
  EXPECT_EQ(values(std::get<1>(sort(ints))), (Values{1, 3, 2, 4, 5, 0}));
  EXPECT_EQ(values(std::get<1>(sort(ints, 0, true))), (Values{0, 5, 2, 4, 3, 1}));
  auto [top, where] = topk(make(data, {10}, ScalarType::Float32), 3);
  EXPECT_EQ(values(where), (Values{2, 7, 6}));
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

// The insertion indices std::lower_bound (left) or std::upper_bound (right) gives, NaN
// values after every boundary: what PyTorch's binary search gives on a row without NaN.
Values binary_search_indices(const Values& row, const Values& of, bool right) {
  Values out;
  for (double v : of) {
    if (std::isnan(v)) {
      out.push_back(static_cast<double>(row.size()));
    } else {
      auto at = right ? std::upper_bound(row.begin(), row.end(), v)
                      : std::lower_bound(row.begin(), row.end(), v);
      out.push_back(static_cast<double>(at - row.begin()));
    }
  }
  return out;
}

// Note [searchsorted by counting or merging]: past kCountingElements values x boundaries
// the indices come from merging; both ways give the binary search's indices, with
// boundaries repeated, values equal to them, NaN values and mixed dtypes.
TEST_F(Sort, SearchsortedMergesWhereCountingWouldNotFit) {
  Values boundaries;
  for (int i = 0; i < 3000; ++i) boundaries.push_back(i / 2);  // each integer twice
  Values wanted;
  uint32_t state = 12345;
  for (int i = 0; i < 2000; ++i) {
    state = state * 1664525u + 1013904223u;
    wanted.push_back(i % 97 == 0 ? NAN : static_cast<double>(state % 3220) / 2 - 5);
  }
  const Tensor sorted = make(boundaries, {3000});
  for (bool right : {false, true}) {
    // 100 values (counting) and 2000 (merging: 6M comparisons).
    const Values few(wanted.begin(), wanted.begin() + 100);
    EXPECT_EQ(values(searchsorted(sorted, make(few, {100}), false, right)),
              binary_search_indices(boundaries, few, right));
    const Tensor many = searchsorted(sorted, make(wanted, {40, 50}), true, right);
    EXPECT_EQ(many.dtype(), ScalarType::Int32);
    EXPECT_EQ(shape(many), (Shape{40, 50}));
    EXPECT_EQ(values(many), binary_search_indices(boundaries, wanted, right));
    // int32 boundaries and int64 values search in int64 (NaN-free: the values' integers).
    Values integers;
    for (double v : wanted) integers.push_back(std::isnan(v) ? 7 : std::floor(v));
    EXPECT_EQ(values(bucketize(make(integers, {2000}, ScalarType::Int64),
                               make(boundaries, {3000}, ScalarType::Int32), false, right)),
              binary_search_indices(boundaries, integers, right));
  }
  // Rows of an N-D sequence, each searched by its own values: [2, 3000] and [2, 1000].
  Values two_rows = boundaries;
  for (double b : boundaries) two_rows.push_back(b + 0.5);
  const Values first(wanted.begin(), wanted.begin() + 1000),
      second(wanted.begin() + 1000, wanted.end());
  Values expected = binary_search_indices(boundaries, first, false);
  Values shifted(boundaries.begin(), boundaries.end());
  for (double& b : shifted) b += 0.5;
  for (double i : binary_search_indices(shifted, second, false)) expected.push_back(i);
  EXPECT_EQ(values(searchsorted(make(two_rows, {2, 3000}), make(wanted, {2, 1000}))), expected);
}

// A boundary list as long as the values: counting would hold 9e10 comparisons; merging
// holds the 600,000 elements.
TEST_F(Sort, SearchsortedTakesLongBoundaryListsInLinearMemory) {
  Values boundaries, wanted;
  for (int i = 0; i < 300000; ++i) {
    boundaries.push_back(3 * i);
    wanted.push_back(899999 - 3 * i);
  }
  EXPECT_EQ(values(searchsorted(make(boundaries, {300000}, ScalarType::Int64),
                                make(wanted, {300000}, ScalarType::Int64))),
            binary_search_indices(boundaries, wanted, false));
}

// Note [unique by sorting]
TEST_F(Sort, UniqueWithInverseAndCounts) {
  // torch.unique(torch.tensor([[3, 1, 3], [2, 1, 3]]), return_inverse=True,
  // return_counts=True) -> ([1, 2, 3], [[2, 0, 2], [1, 0, 2]], [2, 1, 3])
  auto [u, inverse, counts] =
      unique(make({3, 1, 3, 2, 1, 3}, {2, 3}, ScalarType::Int64), true, true, true);
  EXPECT_EQ(values(u), (Values{1, 2, 3}));
  EXPECT_EQ(u.dtype(), ScalarType::Int64);
  EXPECT_EQ(values(inverse), (Values{2, 0, 2, 1, 0, 2}));
  EXPECT_EQ(shape(inverse), (Shape{2, 3}));
  EXPECT_EQ(values(counts), (Values{2, 1, 3}));
  // Outputs not asked for are empty: torch._unique2(x) -> (values, tensor([]), tensor([]))
  auto [only, no_inverse, no_counts] = unique(make({2, 2, 1}, {3}));
  EXPECT_EQ(values(only), (Values{1, 2}));
  EXPECT_EQ(no_inverse.numel(), 0);
  EXPECT_EQ(no_counts.numel(), 0);
  // torch.unique(torch.tensor([1., nan, nan])) -> [1, nan, nan]: NaNs never equal
  const double nan = std::nan("");
  Values with_nan = values(std::get<0>(unique(make({nan, 1, nan}, {3}))));
  ASSERT_EQ(with_nan.size(), 3u);
  EXPECT_EQ(with_nan[0], 1);
  EXPECT_TRUE(std::isnan(with_nan[1]) && std::isnan(with_nan[2]));
  EXPECT_EQ(shape(std::get<0>(unique(empty({0, 3})))), (Shape{0}));
}

}  // namespace
}  // namespace loom::testing
