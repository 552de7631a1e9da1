// ABI 1.2 through a plugin built on the SDK (tests/plugins/test_extension_plugin.cc):
// per-tensor slots and their lifetime, key bits, the version counter the dispatcher bumps
// on writes, thread-local key guards, allocation observers, dtype claims, kernels with a
// state pointer; 1.4's and 1.6's refusals, 1.6's redispatch under changed keys and slot
// values set with a key; and plugins built against the frozen 1.0 and 1.1 headers still
// load.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/call.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"

namespace loom::testing {
namespace {

using dispatch::Dispatcher;
using dispatch::OperatorHandle;
using dispatch::PluginHost;

std::string test_plugin(const std::string& name) {
  return std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_" + name + ".so";
}

// Loads a plugin unless a plugin of that name is loaded already.
void ensure_loaded(const std::string& file, const std::string& name) {
  for (const dispatch::PluginInfo& p : PluginHost::instance().plugins()) {
    if (p.name == name) return;
  }
  PluginHost::instance().load(file);
}

class Abi12 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ops::load_standard_library();
    ensure_loaded(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so", "cpu");
    ensure_loaded(test_plugin("test_extension"), "test_extension");
  }
  static int64_t int_of(const std::string& op, const std::vector<Value>& args = {}) {
    return call(op, args)[0].to_int();
  }
};

TEST_F(Abi12, SlotValuesLiveWithTheTensorAndKeepThePluginLoaded) {
  const int64_t destroyed_before = int_of("test_ext::destroyed");
  {
    Tensor x = ones({2});
    EXPECT_EQ(int_of("test_ext::get_tag", {x}), -1);  // unset
    call("test_ext::set_tag", {x, 7});
    EXPECT_EQ(int_of("test_ext::get_tag", {x}), 7);
    Tensor same = x;  // another handle on the same tensor sees it
    EXPECT_EQ(int_of("test_ext::get_tag", {same}), 7);
    EXPECT_EQ(int_of("test_ext::get_tag", {x.view({2})}), -1);  // a view has its own slots
    call("test_ext::set_tag", {x, 9});                          // replacing destroys the old value
    EXPECT_EQ(int_of("test_ext::destroyed"), destroyed_before + 1);
    EXPECT_EQ(int_of("test_ext::get_tag", {x}), 9);
    // The plugin's destroy function must outlive the value: unload is refused.
    expect_error([] { PluginHost::instance().unload("test_extension"); }, "plugin-host",
                 {"cannot unload plugin 'test_extension'", "tensor slot value(s)"});
  }
  EXPECT_EQ(int_of("test_ext::destroyed"), destroyed_before + 2);
}

TEST_F(Abi12, KeyBitsAreSetAndClearedOnTheTensor) {
  Tensor x = ones({2});
  EXPECT_FALSE(x.key_set().has(DispatchKey::Autograd));
  EXPECT_TRUE(call("test_ext::set_autograd_bit", {x, true})[0].to_bool());
  EXPECT_TRUE(x.key_set().has(DispatchKey::Autograd));
  EXPECT_FALSE(call("test_ext::set_autograd_bit", {x, false})[0].to_bool());
  EXPECT_FALSE(x.key_set().has(DispatchKey::Autograd));
}

TEST_F(Abi12, VersionCounterCountsWritesAndIsSharedByViews) {
  Tensor x = zeros({2, 3});
  const int64_t v0 = int_of("test_ext::version", {x, 0});
  Tensor y = add(x, ones({2, 3}));  // reads x: no bump
  EXPECT_EQ(int_of("test_ext::version", {x, 0}), v0);
  x.add_(y);  // writes x
  EXPECT_EQ(int_of("test_ext::version", {x, 0}), v0 + 1);
  add_out(x, y, y);  // writes x through out=
  EXPECT_EQ(int_of("test_ext::version", {x, 0}), v0 + 2);
  Tensor t = x.t();
  t.mul_(y.t());  // a write through a view bumps the shared counter
  EXPECT_EQ(int_of("test_ext::version", {x, 0}), v0 + 3);
  EXPECT_EQ(int_of("test_ext::version", {t, 5}), v0 + 8);  // a plugin may bump too
  EXPECT_EQ(int_of("test_ext::version", {y, 0}), 0);
}

// A Profiler fallback on the host while alive: counts the ops it sees and keeps the
// thread's excluded keys as the last one saw them.
class ProfilerCounter {
 public:
  ProfilerCounter() {
    profiled_ = 0;
    excluded_seen_ = 0;
    fallback_ = Dispatcher::instance().register_fallback(DispatchKey::Profiler,
                                                         dispatch::KernelFunction{&count, nullptr});
  }
  int profiled() const { return profiled_.load(); }
  DispatchKeySet excluded_seen() const { return DispatchKeySet(excluded_seen_.load()); }

 private:
  static LoomError* count(void*, const LoomKernelCall* call) {
    ++profiled_;
    excluded_seen_ = dispatch::local_dispatch_key_set().excluded;
    Dispatcher::instance().redispatch(OperatorHandle::from_abi(call->op),
                                      DispatchKeySet(call->key_set), call->args, call->num_args,
                                      call->returns, call->num_returns);
    return nullptr;
  }
  static inline std::atomic<int> profiled_{0};
  static inline std::atomic<uint64_t> excluded_seen_{0};
  dispatch::Registration fallback_;
};

// The Profiler fallback counts the ops the plugin's guard lets it see.
TEST_F(Abi12, LocalKeyGuardIncludesKeysForTheCallsInsideIt) {
  ProfilerCounter counter;
  Tensor x = ones({3});
  Tensor n = call("test_ext::neg_profiled", {x})[0].to_tensor();
  EXPECT_EQ(n.data<float>()[0], -1.0f);
  EXPECT_EQ(counter.profiled(), 1);                            // loom::neg inside the guard
  EXPECT_EQ(dispatch::local_dispatch_key_set().included, 0u);  // restored
  neg(x);
  EXPECT_EQ(counter.profiled(), 1);
}

// ABI 1.6: redispatch_with_keys changes this thread's keys for the ops the kernels below
// call, and only while it runs, also when the op fails.
TEST_F(Abi12, RedispatchWithKeysChangesTheThreadsKeysWhileItRuns) {
  ProfilerCounter counter;
  Tensor x = ones({3});
  {
    dispatch::IncludeDispatchKeyGuard tracer{DispatchKeySet(DispatchKey::Tracer)};
    Tensor n = call("test_ext::probed", {x, false})[0].to_tensor();
    EXPECT_EQ(n.data<float>()[0], -1.0f);
    EXPECT_EQ(counter.profiled(), 1);  // loom::neg inside, not probed itself
    EXPECT_TRUE(counter.excluded_seen().has(DispatchKey::Autocast));
    expect_error(
        [&] {
          call("test_ext::probed", {x, true});
        },
        "test_ext::probed", {"failing on purpose"});
    EXPECT_EQ(counter.profiled(), 2);
    EXPECT_EQ(dispatch::local_dispatch_key_set().excluded, 0u);  // restored after the error
  }
  EXPECT_EQ(dispatch::local_dispatch_key_set().included, 0u);
  neg(x);
  EXPECT_EQ(counter.profiled(), 2);
}

// ABI 1.6: a slot value and a key bit in one call; bad keys are refused before anything
// changes, naming the service.
TEST_F(Abi12, Abi16ServicesSetSlotsWithKeysAndRefuseBadInput) {
  Tensor x = ones({2});
  const int64_t destroyed_before = int_of("test_ext::destroyed");
  call("test_ext::abi_1_6_call", {x, Value("slot_key")});
  EXPECT_EQ(int_of("test_ext::get_tag", {x}), 5);
  EXPECT_TRUE(x.key_set().has(DispatchKey::Autograd));
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"slot_backend_key", {"[host] tensor_slot_set: key 1 (CPU) is not a functionality key"}},
      {"redispatch_backend_key",
       {"[host] redispatch_with_keys: key 1 (CPU) is not a functionality key"}},
      {"redispatch_no_op", {"[host] redispatch_with_keys"}},
      {"redispatch_args_size", {"[host] redispatch_with_keys: struct_size 0 is smaller than"}},
  };
  for (const auto& [which, parts] : cases) {
    std::string message = "(no error)";
    try {
      call("test_ext::abi_1_6_call", {x, Value(which)});
    } catch (const Error& e) {
      message = e.what();
    }
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << which << ": " << message;
    }
  }
  EXPECT_EQ(int_of("test_ext::get_tag", {x}), 5);  // the refused value never replaced it
  EXPECT_EQ(int_of("test_ext::destroyed"), destroyed_before);
  EXPECT_EQ(dispatch::local_dispatch_key_set().included, 0u);
}

TEST_F(Abi12, AllocationObserverSeesAllocationsAndFrees) {
  const int64_t allocs = int_of("test_ext::allocations");
  const int64_t frees = int_of("test_ext::frees");
  { Tensor x = empty({1000}); }
  EXPECT_GE(int_of("test_ext::allocations"), allocs + 1);
  EXPECT_GE(int_of("test_ext::frees"), frees + 1);
}

// ABI 1.4's services refuse bad input with errors naming the service, and extension
// tables round-trip (tests/profiler/ covers the services doing their work).
TEST_F(Abi12, Abi14ServicesRefuseBadInput) {
  auto refusal = [](const std::string& which) -> std::string {
    try {
      call("test_ext::abi_1_4_call", {Value(which)});
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(refusal("extension_roundtrip"), "(no error)");
  EXPECT_EQ(refusal("extension_roundtrip"), "(no error)");  // found, not published again
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"extension_name", {"[extensions]", "[a-z0-9_.]", "found 'Bad Name!'"}},
      {"extension_twice",
       {"[extensions]", "'test_ext.table' is already published by 'test_extension'"}},
      {"process_key_backend", {"process_keys_include", "not a functionality key"}},
      {"process_key_not_included", {"[dispatch] key Tracer is not included"}},
      {"range_kind", {"trace_range_begin", "kind must be", "found 7"}},
      {"device_event_backwards",
       {"trace_device_event", "'k' ends (5 ns) before it starts (10 ns)"}},
      {"set_tracer_null", {"[trace] set_tracer", "every function of the tracer must be set"}},
      {"args_size", {"trace_state"}},
  };
  for (const auto& [which, parts] : cases) {
    const std::string message = refusal(which);
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << which << ": " << message;
    }
  }
}

TEST_F(Abi12, DtypeClaimsAreEnforcedAndShownAndKernelsGetTheirState) {
  Tensor f = ones({2});
  Tensor r = call("test_ext::scaled", {f})[0].to_tensor();
  EXPECT_EQ(r.data<float>()[1], 3.0f);  // scale from the registration's state
  expect_error(
      [] { call("test_ext::scaled", {ones({2}, TensorOptions().dtype(ScalarType::Int64))}); },
      "test_ext::scaled", {"backend CPU does not support dtype int64 (claims: float32, float64)"});
  OperatorHandle op = Dispatcher::instance().find_defined("test_ext::scaled");
  bool found = false;
  for (const dispatch::TableRow& row : Dispatcher::instance().dump_table(op)) {
    if (row.key != DispatchKey::CPU) continue;
    found = true;
    EXPECT_EQ(row.dtype_claim, (uint64_t{1} << static_cast<int>(ScalarType::Float32)) |
                                   (uint64_t{1} << static_cast<int>(ScalarType::Float64)));
  }
  EXPECT_TRUE(found);
}

TEST(FrozenAbi, PluginsBuiltAgainstOlderHeadersLoadAndRun) {
  ops::load_standard_library();
  for (int minor : {0, 1}) {
    const std::string name = "frozen_abi_1_" + std::to_string(minor);
    dispatch::PluginInfo info = PluginHost::instance().load(test_plugin(name));
    EXPECT_EQ(info.abi_minor, static_cast<uint32_t>(minor));
    EXPECT_EQ(call("frozen_1_" + std::to_string(minor) + "::answer")[0].to_int(), 42);
    PluginHost::instance().unload(name);
  }
}

}  // namespace
}  // namespace loom::testing
