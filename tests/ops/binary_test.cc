// The binary family's decompositions through the typed API: pow with a number on either
// side and the .Scalar overloads (add(t, 2), t.add_(1.0)), their result dtypes (a C++
// number promotes as a Python number does) and values, pinned to PyTorch; the layout of new
// pointwise results (Note [Layouts of new results]).
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

// The .Scalar overloads, spelled as libtorch users write them.
TEST_F(Binary, ArithmeticWithANumberAsLibtorchSpellsIt) {
  Tensor ints = make({1, 2, 3}, {3}, ScalarType::Int64);
  // torch.add(torch.tensor([1, 2, 3]), 2) -> tensor([3, 4, 5])
  Tensor plus_two = add(ints, 2);
  EXPECT_EQ(plus_two.dtype(), ScalarType::Int64);
  EXPECT_EQ(values(plus_two), (Values{3, 4, 5}));
  // torch.tensor([1, 2, 3]).mul(2.5) -> float32 [2.5, 5.0, 7.5]
  Tensor scaled = ints.mul(2.5);
  EXPECT_EQ(scaled.dtype(), ScalarType::Float32);
  EXPECT_EQ(values(scaled), (Values{2.5, 5, 7.5}));
  // torch.sub(torch.tensor([1, 2, 3]), 1, 2) -> tensor([-1, 0, 1])
  EXPECT_EQ(values(sub(ints, 1, 2)), (Values{-1, 0, 1}));
  // torch.tensor([1., 2.]).add_(1.0) -> tensor([2., 3.]), in place
  Tensor floats = make({1, 2}, {2});
  Tensor same = floats.add_(1.0);
  EXPECT_EQ(same.impl(), floats.impl());
  EXPECT_EQ(values(floats), (Values{2, 3}));
  floats.div_(2);
  EXPECT_EQ(values(floats), (Values{1, 1.5}));
  // torch.tensor([1, 2, 3]).add_(0.5): "result type Float can't be cast to the desired
  // output type Long"
  expect_error([&] { ints.add_(0.5); }, "loom::add_.Scalar", "can't be cast to the out dtype");
  // torch.div(torch.tensor([7, -7]), 2, rounding_mode="floor") -> tensor([3, -4])
  Tensor floored = div(make({7, -7}, {2}, ScalarType::Int64), 2, std::string("floor"));
  EXPECT_EQ(floored.dtype(), ScalarType::Int64);
  EXPECT_EQ(values(floored), (Values{3, -4}));
  // torch.tensor([1, 2, 3]) >= 2 through ge.Scalar -> tensor([False, True, True])
  Tensor at_least_two = ge(ints, 2);
  EXPECT_EQ(at_least_two.dtype(), ScalarType::Bool);
  EXPECT_EQ(values(at_least_two), (Values{0, 1, 1}));
  // torch.bitwise_and(torch.tensor([6, 5]), 3) -> tensor([2, 1])
  EXPECT_EQ(values(bitwise_and(make({6, 5}, {2}, ScalarType::Int64), 3)), (Values{2, 1}));
  // Calling by name picks the overload that takes the number as it is.
  EXPECT_EQ(schemas("loom::add.Scalar").size(), 1u);
  EXPECT_EQ(values(call("add", {ints, 2})[0].to_tensor()), (Values{3, 4, 5}));
}

// Note [Layouts of new results]: a new pointwise result takes its inputs' layout, as
// PyTorch's TensorIterator gives it; outs and in-place selves keep their own.
TEST_F(Binary, NewResultsFollowTheInputsLayout) {
  manual_seed(3);
  const auto cl = [](const Tensor& t) { return t.contiguous(MemoryFormat::ChannelsLast); };
  const auto strides = [](const Tensor& t) {
    return std::vector<int64_t>(t.strides().begin(), t.strides().end());
  };
  Tensor a = random({2, 3, 4, 5}), b = random({2, 3, 4, 5}), scale = random({1, 3, 1, 1});
  Tensor sum = cl(a) + cl(b);
  EXPECT_TRUE(sum.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(values(sum), values(a + b));
  // torch: (a_cl * scale).is_contiguous(memory_format=torch.channels_last) -> True
  Tensor scaled = scale * cl(a);
  EXPECT_TRUE(scaled.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(values(scaled), values(scale * a));
  // the first input that tells decides: row-major first gives a row-major result
  EXPECT_TRUE((cl(a) - b).is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE((a - cl(b)).is_contiguous());
  EXPECT_EQ(values(a - cl(b)), values(a - b));
  // unary, comparison (bool result), ternary and a dtype change keep it too
  EXPECT_TRUE(relu(cl(a)).is_contiguous(MemoryFormat::ChannelsLast));
  Tensor positive = gt(cl(a), zeros({1}));
  EXPECT_EQ(positive.dtype(), ScalarType::Bool);
  EXPECT_TRUE(positive.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(values(positive), values(gt(a, zeros({1}))));
  Tensor chosen = where(positive, cl(a), b);
  EXPECT_TRUE(chosen.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(values(chosen), values(where(gt(a, zeros({1})), a, b)));
  Tensor halves = cl(make({1, 2, 3, 4, 5, 6}, {1, 2, 3, 1}, ScalarType::Int64)) * 0.5;
  EXPECT_EQ(halves.dtype(), ScalarType::Float32);
  EXPECT_EQ(strides(halves), strides(cl(empty({1, 2, 3, 1}))));
  // any order of dims: a transposed matrix plus a broadcast row is transposed
  Tensor m = random({5, 4}).t(), row = random({1, 5});
  EXPECT_EQ(strides(m + row), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(values(m + row), values(m.contiguous() + row));
  // out= and in-place keep their own strides
  Tensor out = empty({2, 3, 4, 5});
  add_out(out, cl(a), cl(b));
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_EQ(values(out), values(a + b));
  Tensor self = cl(a);
  self.mul_(b);
  EXPECT_TRUE(self.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(values(self), values(a * b));
}

}  // namespace
}  // namespace loom::testing
