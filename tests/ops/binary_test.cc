// The binary family's decompositions through the typed API: pow with a number on either
// side, its result dtypes (a C++ number promotes as a Python number does) and values,
// pinned to PyTorch.
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Binary : public OpsTest {};

TEST_F(Binary, PowWithANumberOnEitherSide) {
  Tensor ints = make({1, 2, 3}, {3}, ScalarType::Int64);
  // torch.pow(torch.tensor([1, 2, 3]), 2) -> tensor([1, 4, 9])
  Tensor squared = pow(ints, 2);
  EXPECT_EQ(squared.dtype(), ScalarType::Int64);
  EXPECT_EQ(values(squared), (Values{1, 4, 9}));
  // torch.pow(torch.tensor([1, 2, 3]), 0.5) -> float32 [1.0000, 1.4142, 1.7321]
  Tensor roots = ints.pow(0.5);
  EXPECT_EQ(roots.dtype(), ScalarType::Float32);
  expect_close(values(roots), {1, 1.41421354, 1.73205078});
  // torch.pow(torch.tensor([1., 2.], dtype=torch.float16), 3) stays float16
  EXPECT_EQ(pow(make({1, 2}, {2}, ScalarType::Float16), 3).dtype(), ScalarType::Float16);
  // torch.pow(2, torch.tensor([0, 1, 3])) -> tensor([1, 2, 8])
  Tensor powers = pow(2, make({0, 1, 3}, {3}, ScalarType::Int64));
  EXPECT_EQ(powers.dtype(), ScalarType::Int64);
  EXPECT_EQ(values(powers), (Values{1, 2, 8}));
  // torch.pow(2.0, torch.tensor([0, 1, 3])) -> float32 [1., 2., 8.]
  Tensor float_powers = pow(2.0, make({0, 1, 3}, {3}, ScalarType::Int64));
  EXPECT_EQ(float_powers.dtype(), ScalarType::Float32);
  EXPECT_EQ(values(float_powers), (Values{1, 2, 8}));
  // torch.pow(torch.tensor([2]), -1): "Integers to negative integer powers are not allowed."
  expect_error([&] { pow(make({2}, {1}, ScalarType::Int64), -1); }, "loom::pow.Tensor_Scalar",
               "integers to negative integer powers are not allowed");
}

}  // namespace
}  // namespace loom::testing
