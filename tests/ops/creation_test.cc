// The creation ops through the typed API: arange, linspace, eye (dtypes, lengths, ends,
// errors).
#include <algorithm>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Creation : public OpsTest {};

TEST_F(Creation, ArangeInfersDtypeAndLength) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), ScalarType::Int64);
  EXPECT_EQ(values(a), (Values{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(arange(1, 10, 3)), (Values{1, 4, 7}));
  EXPECT_EQ(values(arange(5, 0, -2)), (Values{5, 3, 1}));
  Tensor f = arange(0.0, 1.0, 0.25);
  EXPECT_EQ(f.dtype(), ScalarType::Float32);
  EXPECT_EQ(values(f), (Values{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_EQ(values(arange(4, TensorOptions().dtype(ScalarType::Float16))), (Values{0, 1, 2, 3}));
}

TEST_F(Creation, LinspaceHitsBothEnds) {
  EXPECT_EQ(values(linspace(0, 1, 5)), (Values{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(values(linspace(-1, 1, 1)), (Values{-1}));
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  Tensor d = linspace(0, 0.3, 4, TensorOptions().dtype(ScalarType::Float64));
  EXPECT_EQ(values(d).back(), 0.3);
}

TEST_F(Creation, Eye) {
  EXPECT_EQ(values(eye(2)), (Values{1, 0, 0, 1}));
  EXPECT_EQ(values(eye(2, 3, TensorOptions().dtype(ScalarType::Int32))),
            (Values{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(shape(eye(0, 4)), (Shape{0, 4}));
}

TEST_F(Creation, BadInputs) {
  expect_error([] { arange(0, 1, 0); }, "arange", "step must be nonzero");
  expect_error([] { arange(0, 5, -1); }, "loom::arange.start_out", "inconsistent signs");
  expect_error([] { linspace(0, 1, -1); }, "linspace", "must be non-negative");
  expect_error([] { eye(-1); }, "eye", "non-negative");
}

// The out= factories resize their out silently, as PyTorch's do
// (torch.arange(0, 5, out=torch.empty(2)) -> tensor([0., 1., 2., 3., 4.])).
TEST_F(Creation, OutFactoriesResizeTheirOut) {
  Tensor a = empty({2});
  arange_out(a, 0, 5, 1);
  EXPECT_EQ(values(a), (Values{0, 1, 2, 3, 4}));
  Tensor l = empty({0});
  linspace_out(l, 0, 1, 3);
  EXPECT_EQ(values(l), (Values{0, 0.5, 1}));
  Tensor e = empty({2, 2});
  eye_out(e, 2, 3);
  EXPECT_EQ(shape(e), (Shape{2, 3}));
  EXPECT_EQ(values(e), (Values{1, 0, 0, 0, 1, 0}));
  Tensor p = empty({7}, TensorOptions().dtype(ScalarType::Int64));
  randperm_out(p, 4);
  EXPECT_EQ(shape(p), (Shape{4}));
  Values sorted = values(p);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (Values{0, 1, 2, 3}));
  // Bad arguments still reach the kernel's checks.
  expect_error([] { arange_out(empty({2}), 0, 5, -1); }, "loom::arange.start_out",
               "inconsistent signs");
  expect_error([] { eye_out(empty({2, 2}), -1, 3); }, "loom::eye.m_out", "non-negative");
}

}  // namespace
}  // namespace loom::testing
