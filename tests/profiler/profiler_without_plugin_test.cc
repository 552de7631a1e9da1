// The profiler API in a process whose runtime did not load the profiler plugin: it says
// so, and ranges do nothing.
#include <gtest/gtest.h>

#include "../frontend/frontend_test_util.h"
#include "loom/loom.h"

namespace loom {
namespace {

TEST(ProfilerWithoutPlugin, SaysSoClearly) {
  Runtime runtime = test::load_plugins({"cpu"});
  EXPECT_FALSE(profiler::Profiler::is_available());
  test::expect_error([] { profiler::Profiler p; }, "profiler",
                     {"the profiler plugin is not loaded", "plugins { name: \"profiler\" }"});
  profiler::Range r("data");
  EXPECT_EQ(neg(ones({2})).sum().item<float>(), -2.0f);
}

}  // namespace
}  // namespace loom
