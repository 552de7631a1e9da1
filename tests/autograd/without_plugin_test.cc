// Without the autograd plugin loaded: the autograd calls fail with "[autograd] ... the
// autograd plugin is not loaded", queries answer as for plain tensors, the guards still
// work, and ops record nothing.
#include <gtest/gtest.h>

#include "../frontend/frontend_test_util.h"

namespace loom {
namespace {

using test::expect_error;

TEST(AutogradWithoutPlugin, CallsFailClearlyAndOpsRunAsBefore) {
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
  Runtime runtime = test::load_plugins({"cpu"});
  Tensor x = tensor({1.0, 2.0});
  const std::vector<std::string> not_loaded{"the autograd plugin is not loaded"};
  expect_error([&] { x.requires_grad_(); }, "autograd", not_loaded);
  expect_error([&] { x.backward(); }, "autograd", not_loaded);
  expect_error([&] { x.grad(); }, "autograd", not_loaded);
  expect_error([&] { x.retain_grad(); }, "autograd", not_loaded);
  expect_error([&] { x.register_hook([](const Tensor& g) { return g; }); }, "autograd", not_loaded);
  expect_error([&] { autograd::grad({x}, {x}); }, "autograd", not_loaded);
  expect_error([&] { autograd::set_detect_anomaly(true); }, "autograd", not_loaded);
  EXPECT_FALSE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(autograd::is_available());
  EXPECT_FALSE(autograd::is_enabled());
  {
    NoGradGuard no_grad;
    EXPECT_EQ(test::values(x * 2.0), (std::vector<double>{2, 4}));
  }
  EXPECT_EQ(test::values(x.detach() + 1.0), (std::vector<double>{2, 3}));
}

}  // namespace
}  // namespace loom
