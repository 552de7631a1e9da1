// The scans (cumsum, cumprod) through the typed API, against hand-computed values:
// dims, dtype, strided and zero-size inputs, the in-place variant.
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

}  // namespace
}  // namespace loom::testing
