// Concurrency: threads call ops while another thread loads, registers and unloads a
// plugin and registers/deregisters kernels. No crash, no lost kernel, no stale kernel.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "dispatch_test_util.h"
#include "loom/dispatcher/plugin_host.h"

namespace loom::testing {
namespace {

using dispatch::Dispatcher;
using dispatch::PluginHost;

const std::string kPlugins = LOOM_TEST_PLUGIN_DIR;

// state % 4: 0 = override unloaded (test::value must return 1), 1 = loading,
// 2 = loaded (must return 2), 3 = unloading. During transitions either is fine.
TEST(Stress, CallsDuringPluginLoadUnloadSeeOnlyCurrentKernels) {
  PluginHost::instance().load(kPlugins + "/libloom_plugin_test_ops.so");
  dispatch::OperatorHandle value = Dispatcher::instance().find_defined("test::value");
  std::atomic<uint64_t> state{0};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0}, violations{0}, bad_values{0};

  auto reader = [&] {
    TensorBase t = cpu_tensor({1});
    while (!stop.load(std::memory_order_acquire)) {
      uint64_t before = state.load(std::memory_order_acquire);
      int64_t v = call_int(value, t);
      uint64_t after = state.load(std::memory_order_acquire);
      ++calls;
      if (v != 1 && v != 2) ++bad_values;
      // If nothing changed during the call, the result must match the state.
      if (before == after && before % 4 == 0 && v != 1) ++violations;
      if (before == after && before % 4 == 2 && v != 2) ++violations;
    }
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) readers.emplace_back(reader);

  // A second writer churns app registrations on another op at the same time.
  dispatch::Registration def = Dispatcher::instance().define("stress::churn(Tensor self) -> int");
  std::thread churner([&] {
    dispatch::OperatorHandle churn = Dispatcher::instance().find_defined("stress::churn");
    const int64_t id = 42;
    TensorBase t = cpu_tensor({1});
    for (int i = 0; i < 200; ++i) {
      dispatch::Registration r =
          Dispatcher::instance().register_kernel(churn, DispatchKey::CPU, id_kernel(id));
      if (call_int(churn, t) != 42) ++violations;
    }
  });

  TensorBase t = cpu_tensor({1});
  for (int i = 0; i < 60; ++i) {
    state.fetch_add(1, std::memory_order_acq_rel);  // loading
    PluginHost::instance().load(kPlugins + "/libloom_plugin_test_override.so");
    state.fetch_add(1, std::memory_order_acq_rel);  // loaded
    EXPECT_EQ(call_int(value, t), 2);
    state.fetch_add(1, std::memory_order_acq_rel);  // unloading
    PluginHost::instance().unload("test_override");
    state.fetch_add(1, std::memory_order_acq_rel);  // unloaded
    EXPECT_EQ(call_int(value, t), 1);
  }
  churner.join();
  stop.store(true, std::memory_order_release);
  for (auto& r : readers) r.join();
  EXPECT_GT(calls.load(), 0);
  EXPECT_EQ(bad_values.load(), 0);
  EXPECT_EQ(violations.load(), 0);
  EXPECT_FALSE(PluginHost::instance().is_loaded("test_override"));
}

}  // namespace
}  // namespace loom::testing
