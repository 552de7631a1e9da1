// Dispatch key set algebra and priority, ABI key mapping, and thread-local guards.
#include <gtest/gtest.h>

#include <thread>

#include "dispatch_test_util.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/local_dispatch_key_set.h"

namespace loom::testing {
namespace {

TEST(DispatchKeySet, HighestPriorityPicksTopFunctionalityThenTopBackend) {
  DispatchKeySet cpu = DispatchKeySet::for_backend(DispatchKey::CPU);
  EXPECT_EQ(cpu.highest_priority(), DispatchKey::CPU);
  EXPECT_EQ(cpu.add(DispatchKey::Autograd).highest_priority(), DispatchKey::Autograd);
  EXPECT_EQ(cpu.add(DispatchKey::Autograd).add(DispatchKey::Tracer).highest_priority(),
            DispatchKey::Tracer);
  EXPECT_EQ(cpu.add(DispatchKey::Quantized).highest_priority(), DispatchKey::Quantized);
  DispatchKeySet mixed = cpu | DispatchKeySet::for_backend(DispatchKey::CUDA);
  EXPECT_EQ(mixed.highest_priority(), DispatchKey::CUDA);
  EXPECT_EQ(DispatchKeySet().highest_priority(), DispatchKey::Undefined);
  EXPECT_EQ(DispatchKeySet(DispatchKey::CPU).highest_priority(), DispatchKey::Undefined);
}

TEST(DispatchKeySet, AfterKeepsLowerFunctionalitiesAndBackends) {
  DispatchKeySet ks = DispatchKeySet::for_backend(DispatchKey::CPU)
                          .add(DispatchKey::Autograd)
                          .add(DispatchKey::Profiler)
                          .add(DispatchKey::Tracer);
  DispatchKeySet below_profiler = ks.after(DispatchKey::Profiler);
  EXPECT_FALSE(below_profiler.has(DispatchKey::Tracer));
  EXPECT_FALSE(below_profiler.has(DispatchKey::Profiler));
  EXPECT_TRUE(below_profiler.has(DispatchKey::Autograd));
  EXPECT_TRUE(below_profiler.has(DispatchKey::Dense));
  EXPECT_TRUE(below_profiler.has(DispatchKey::CPU));
  EXPECT_EQ(below_profiler.highest_priority(), DispatchKey::Autograd);
  EXPECT_EQ(ks.after(DispatchKey::Autograd).highest_priority(), DispatchKey::CPU);
  EXPECT_TRUE(ks.after(DispatchKey::CPU).empty());
}

TEST(DispatchKeySet, AlgebraAndPrinting) {
  DispatchKeySet a = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::Dense);
  DispatchKeySet b = DispatchKeySet(DispatchKey::Autograd);
  EXPECT_EQ((a | b).raw(), a.raw() | b.raw());
  EXPECT_EQ((a | b) - b, a);
  EXPECT_EQ((a | b) & b, b);
  EXPECT_TRUE((a | b).remove(DispatchKey::CPU).has(DispatchKey::Dense));
  EXPECT_EQ((a | b).to_string(), "[Autograd, Dense, CPU]");
}

TEST(DispatchKeySet, RuntimeIndexRoundTripsForEveryRuntimeKey) {
  for (int i = 0; i < kNumRuntimeKeys; ++i) {
    DispatchKey k = runtime_key_at(i);
    EXPECT_TRUE(is_runtime_key(k)) << i;
    EXPECT_EQ(runtime_index(k), i);
  }
  EXPECT_FALSE(is_runtime_key(DispatchKey::Dense));
  EXPECT_FALSE(is_runtime_key(DispatchKey::CompositeImplicit));
}

TEST(AbiKeys, EveryKeyRoundTripsAndUnknownIdsError) {
  for (uint32_t abi : {LOOM_KEY_CPU, LOOM_KEY_CUDA, LOOM_KEY_HIP, LOOM_KEY_META, LOOM_KEY_QUANTIZED,
                       LOOM_KEY_AUTOGRAD, LOOM_KEY_AUTOCAST, LOOM_KEY_PROFILER, LOOM_KEY_TRACER,
                       LOOM_KEY_COMPOSITE_EXPLICIT, LOOM_KEY_COMPOSITE_IMPLICIT}) {
    EXPECT_EQ(dispatch::key_to_abi(dispatch::key_from_abi(abi)), abi);
  }
  for (uint32_t v = 0; v < LOOM_MAX_VENDOR_BACKENDS; ++v) {
    EXPECT_EQ(dispatch::key_to_abi(dispatch::key_from_abi(LOOM_KEY_VENDOR_FIRST + v)),
              LOOM_KEY_VENDOR_FIRST + v);
  }
  expect_error([] { dispatch::key_from_abi(999); }, "dispatcher", {"unknown dispatch key id 999"});
  expect_error([] { dispatch::parse_dispatch_key("Autogard"); }, "dispatcher",
               {"unknown dispatch key 'Autogard'"});
  EXPECT_EQ(dispatch::parse_dispatch_key("Autograd"), DispatchKey::Autograd);
}

TEST(LocalDispatchKeySet, GuardsNestAndRestoreAndAreThreadLocal) {
  using dispatch::local_dispatch_key_set;
  EXPECT_EQ(local_dispatch_key_set().included, 0u);
  {
    dispatch::IncludeDispatchKeyGuard a(DispatchKey::Profiler);
    {
      dispatch::IncludeDispatchKeyGuard b(DispatchKey::Tracer);
      EXPECT_TRUE(DispatchKeySet(local_dispatch_key_set().included).has(DispatchKey::Tracer));
      uint64_t other_thread = 1;
      std::thread([&] { other_thread = local_dispatch_key_set().included; }).join();
      EXPECT_EQ(other_thread, 0u);
    }
    EXPECT_FALSE(DispatchKeySet(local_dispatch_key_set().included).has(DispatchKey::Tracer));
    EXPECT_TRUE(DispatchKeySet(local_dispatch_key_set().included).has(DispatchKey::Profiler));
    dispatch::ExcludeDispatchKeyGuard c(DispatchKey::Autograd);
    EXPECT_TRUE(DispatchKeySet(local_dispatch_key_set().excluded).has(DispatchKey::Autograd));
  }
  EXPECT_EQ(local_dispatch_key_set().included, 0u);
  EXPECT_EQ(local_dispatch_key_set().excluded, 0u);
}

}  // namespace
}  // namespace loom::testing
