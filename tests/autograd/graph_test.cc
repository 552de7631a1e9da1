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
