// The unary family through the typed API: the activations PyTorch models use (hardswish,
// hardsigmoid, mish, log_sigmoid, prelu, glu) and clamp_min / clamp_max, with values from
// the PyTorch expression in each comment.
#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Unary : public OpsTest {};

TEST_F(Unary, HardActivations) {
  Tensor x = make({-4, -1, 0, 1, 4}, {5});
  // torch.nn.functional.hardswish(torch.tensor([-4., -1, 0, 1, 4]))
  expect_close(values(hardswish(x)), {0, -1.0 / 3, 0, 2.0 / 3, 4});
  // torch.nn.functional.hardsigmoid(torch.tensor([-4., -1, 0, 1, 4]))
  expect_close(values(hardsigmoid(x)), {0, 1.0 / 3, 0.5, 2.0 / 3, 1});
  Tensor y = make({-4, 1}, {2});
  hardswish_(y);
  expect_close(values(y), {0, 2.0 / 3});
  // Integer inputs are refused, as PyTorch's "hardswish_cpu" not implemented for 'Long'.
  expect_error([&] { hardswish(make({1}, {1}, ScalarType::Int64)); }, "loom::hardswish",
               "does not support dtype int64");
}

TEST_F(Unary, MishAndLogSigmoid) {
  // torch.nn.functional.mish(torch.tensor([-1., 0, 1], dtype=torch.float64))
  expect_close(values(mish(make({-1, 0, 1}, {3}, ScalarType::Float64))),
               {-0.30340146137410895, 0, 0.8650983882673103}, 1e-12);
  // torch.nn.functional.logsigmoid(torch.tensor([0., -100, 100], dtype=torch.float64)):
  // stable at both ends.
  expect_close(values(log_sigmoid(make({0, -100, 100}, {3}, ScalarType::Float64))),
               {-0.6931471805599453, -100, -3.720075976020836e-44}, 1e-12);
  expect_close(values(log_sigmoid(make({-INFINITY, INFINITY}, {2}))), {-INFINITY, 0});
}

TEST_F(Unary, ClampMinAndMax) {
  Tensor i = make({1, 5}, {2}, ScalarType::Int64);
  // torch.clamp_min(torch.tensor([1, 5]), 2) -> tensor([2, 5])
  EXPECT_EQ(clamp_min(i, 2).dtype(), ScalarType::Int64);
  EXPECT_EQ(values(clamp_min(i, 2)), (Values{2, 5}));
  // torch.clamp_min(torch.tensor([1, 5]), 2.5) -> tensor([2.5, 5.]) (float32)
  EXPECT_EQ(clamp_min(i, 2.5).dtype(), ScalarType::Float32);
  EXPECT_EQ(values(clamp_min(i, 2.5)), (Values{2.5, 5}));
  // torch.clamp_max(torch.tensor([1., 5]), 3) -> tensor([1., 3.])
  EXPECT_EQ(values(clamp_max(make({1, 5}, {2}), 3)), (Values{1, 3}));
  Tensor f = make({1, 5}, {2});
  clamp_max_(f, NAN);  // a NaN bound propagates
  EXPECT_TRUE(std::isnan(values(f)[0]) && std::isnan(values(f)[1]));
}

TEST_F(Unary, PreluAndGlu) {
  // torch.nn.functional.prelu(torch.tensor([[-2., 3], [-1, -4]]), torch.tensor([0.5, 0.25]))
  // -> [[-1., 3.], [-0.5, -1.]] (weights per channel, dim 1)
  Tensor x = make({-2, 3, -1, -4}, {2, 2});
  EXPECT_EQ(values(prelu(x, make({0.5, 0.25}, {2}))), (Values{-1, 3, -0.5, -1}));
  // A 4-D input with a weight per channel, and one shared weight.
  Tensor image = make({-1, -1, 2, -2}, {1, 2, 2, 1});
  expect_close(values(prelu(image, make({0.5, 0.1}, {2}))), {-0.5, -0.5, 2, -0.2});  // 0.1f * -2
  EXPECT_EQ(values(prelu(x, make({0.5}, {1}))), (Values{-1, 3, -0.5, -2}));
  expect_error(
      [&] {
        prelu(x, make({1, 2, 3}, {3}));
      },
      "loom::prelu", "expected 1 weight or one per channel (2 channels in dim 1), found 3");
  // torch.nn.functional.glu(torch.tensor([1., 2, 3, 4])) -> [1 * sigmoid(3), 2 * sigmoid(4)]
  expect_close(values(glu(make({1, 2, 3, 4}, {4}))), {0.9525741268224334, 1.9640275800758169});
  EXPECT_EQ(shape(glu(loom::zeros({4, 6}), 0)), (Shape{2, 6}));
  expect_error(
      [&] {
        glu(loom::zeros({2, 3}));
      },
      "loom::glu", "expected an even size in dim 1 to halve, found 3");
}

}  // namespace
}  // namespace loom::testing
