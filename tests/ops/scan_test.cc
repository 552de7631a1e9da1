// The scans (cumsum, cumprod, cummax, cummin) through the typed API, against hand-computed values:
// dims, dtype, strided and zero-size inputs, the in-place variant.
#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Scan : public OpsTest {};

TEST_F(Scan, CumsumCumprod) {
  Tensor x = make(k23, {2, 3});
  EXPECT_EQ(values(cumsum(x, 1)), (Values{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values(cumsum(x, 0)), (Values{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(values(cumprod(x, -1)), (Values{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(values(cumsum(x.t(), 0)), (Values{1, 4, 3, 9, 6, 15}));  // strided input
  Tensor i = make(k23, {2, 3}, ScalarType::Int8);
  EXPECT_EQ(cumsum(i, 1).dtype(), ScalarType::Int64);
  EXPECT_EQ(cumsum(i, 1, ScalarType::Float32).dtype(), ScalarType::Float32);
  Tensor inplace = make(k23, {2, 3});
  inplace.cumsum_(1);
  EXPECT_EQ(values(inplace), (Values{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(shape(cumsum(empty({0, 2}), 0)), (Shape{0, 2}));
}

// Note [dtype= casts the input first]
TEST_F(Scan, DtypeConvertsTheInputBeforeScanning) {
  const ScalarType i64 = ScalarType::Int64;
  // torch.tensor([0.6, 0.6, 0.6]).cumsum(0, dtype=torch.int64) -> tensor([0, 0, 0])
  EXPECT_EQ(values(loom::cumsum(make({0.6, 0.6, 0.6}, {3}), 0, i64)), (Values{0, 0, 0}));
  // torch.tensor([1.5, 2.5, 3.5]).cumprod(0, dtype=torch.int64) -> tensor([1, 2, 6])
  EXPECT_EQ(values(loom::cumprod(make({1.5, 2.5, 3.5}, {3}), 0, i64)), (Values{1, 2, 6}));
  // In place: torch.tensor([0.6, 0.6]).cumsum_(0, dtype=torch.int64) -> tensor([0., 0.])
  Tensor x = make({0.6, 0.6}, {2});
  cumsum_(x, 0, i64);
  EXPECT_EQ(values(x), (Values{0, 0}));
}

// Note [cummax and cummin]
TEST_F(Scan, CummaxCumminKeepTheLastOfEqualExtremesAndNaN) {
  // torch.tensor([1., 3, 2, 3, 0]).cummax(0) -> values [1, 3, 3, 3, 3], indices [0, 1, 1, 3, 3]
  auto [maxima, where_max] = cummax(make({1, 3, 2, 3, 0}, {5}), 0);
  EXPECT_EQ(values(maxima), (Values{1, 3, 3, 3, 3}));
  EXPECT_EQ(values(where_max), (Values{0, 1, 1, 3, 3}));
  EXPECT_EQ(where_max.dtype(), ScalarType::Int64);
  // torch.tensor([2., nan, 5, nan, 1]).cummin(0) -> values [2, nan, nan, nan, nan],
  // indices [0, 1, 1, 3, 3]
  const double nan = std::nan("");
  auto [minima, where_min] = cummin(make({2, nan, 5, nan, 1}, {5}), 0);
  Values m = values(minima);
  EXPECT_EQ(m[0], 2);
  for (size_t i = 1; i < m.size(); ++i) EXPECT_TRUE(std::isnan(m[i])) << i;
  EXPECT_EQ(values(where_min), (Values{0, 1, 1, 3, 3}));
  // torch.tensor([[4, 1], [2, 5]]).cummin(0) -> values [[4, 1], [2, 1]], indices [[0, 0], [1, 0]]
  // (int64, along dim 0 of a transposed view)
  auto [col_min, col_at] = cummin(make({4, 2, 1, 5}, {2, 2}, ScalarType::Int64).t(), 0);
  EXPECT_EQ(values(col_min), (Values{4, 1, 2, 1}));
  EXPECT_EQ(values(col_at), (Values{0, 0, 1, 0}));
  expect_error([&] { cummax(make({1, 2}, {2}), 1); }, "loom::cummax", "dim");
}

}  // namespace
}  // namespace loom::testing
