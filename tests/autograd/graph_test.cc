// The autograd plugin's graph behaviour through the frontend: leaves and accumulation,
// shared inputs and diamonds, views, in-place ops and version counters, retain_graph and
// create_graph, no-grad and inference mode, hooks, anomaly mode, and the refusals.
#include <gtest/gtest.h>

#include <thread>

#include "../frontend/frontend_test_util.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class Autograd : public test::LoadedRuntimeTest {};

Tensor leaf(std::initializer_list<double> v) {
  return tensor(v).requires_grad_();
}

TEST_F(Autograd, MulAndAddAccumulateIntoLeaves) {
  Tensor x = leaf({1, 2, 3});
  Tensor w = leaf({4, 5, 6});
  Tensor y = (x * w + x).sum();
  EXPECT_EQ(y.grad_fn_name(), "SumBackward0");
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
}

}  // namespace
}  // namespace loom
namespace loom {
namespace {
TEST_F(Autograd, DebugExp) {
  Tensor x = tensor({0.5, 1.0}, TensorOptions().dtype(ScalarType::Float64)).requires_grad_();
  Tensor y = exp(x);
  EXPECT_TRUE(y.requires_grad());
  Tensor l = x.detach().requires_grad_(true);
  EXPECT_TRUE(l.requires_grad());
  std::vector<Value> r = call("loom::exp", {Value(l)});
  EXPECT_TRUE(r[0].to_tensor().requires_grad());
}
}  // namespace
}  // namespace loom
namespace loom {
namespace {
TEST_F(Autograd, DebugGradcheck) {
  Tensor x = tensor({0.5, 1.0}, TensorOptions().dtype(ScalarType::Float64)).requires_grad_();
  autograd::gradcheck([](const std::vector<Tensor>& in) { return exp(in[0]); }, {x});
  autograd::gradcheck([](const std::vector<Tensor>& in) { return call("loom::exp", {in[0]})[0].to_tensor(); }, {x});
}
}  // namespace
}  // namespace loom
namespace loom {
namespace {
TEST_F(Autograd, DebugIndexPut) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, TensorOptions().dtype(ScalarType::Float64)).requires_grad_();
  Tensor c = x.clone();
  std::cerr << "clone " << c.grad_fn_name() << "\n";
  Tensor v = c.view({-1});
  std::cerr << "view " << v.grad_fn_name() << "\n";
  Tensor idx = tensor({int64_t{1}});
  Tensor val = tensor({9.0}, TensorOptions().dtype(ScalarType::Float64));
  scatter_(v, 0, idx, val);
  std::cerr << "after scatter_ v " << v.grad_fn_name() << " c " << c.grad_fn_name() << "\n";
  c.sum().backward();
  std::cerr << x.grad() << "\n";
}
}  // namespace
}  // namespace loom
