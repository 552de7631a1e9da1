// A backend's own autocast policy (tests/plugins/test_autocast_policy_plugin.cc publishes
// one for cpu): its default dtype and per-op overrides replace the default policy, whichever
// plugin loads first; and without the autocast plugin a region is refused by name.
#include <gtest/gtest.h>

#include "../frontend/frontend_test_util.h"
#include "loom/autocast.h"

namespace loom {
namespace {

TEST(AutocastPolicy, ABackendsTableOverridesTheDefaults) {
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
  {
    Runtime without = test::load_plugins({"cpu", "autograd"});
    test::expect_error([] { autocast::Guard g("cpu"); }, "autocast",
                       {"the autocast plugin is not loaded"});
  }
  // The policy's plugin before autocast's: the table is read when a region is entered.
  Runtime runtime = test::load_plugins(
      {"cpu", "autograd"},
      {std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_test_autocast_policy.so",
       std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_autocast.so"});
  EXPECT_EQ(autocast::lower_dtype("cpu"), ScalarType::Float16);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::softmax.int"), autocast::Cast::Keep);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::mm"), autocast::Cast::Float32);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::bmm"), autocast::Cast::Lower);
  const Tensor a = randn({2, 3}), low = randn({2, 3}).to(ScalarType::Float16);
  autocast::Guard amp("cpu");
  EXPECT_EQ(linear(a, a).dtype(), ScalarType::Float16);
  EXPECT_EQ(mm(low, low.t()).dtype(), ScalarType::Float32);
  EXPECT_EQ(softmax(low, 1).dtype(), ScalarType::Float16);
}

}  // namespace
}  // namespace loom
