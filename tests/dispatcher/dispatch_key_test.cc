// ABI key mapping and thread-local key guards (the key set algebra is core's:
// tests/core/registry_test.cc).
#include <gtest/gtest.h>

#include <thread>

#include "dispatch_test_util.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/local_dispatch_key_set.h"

namespace loom::testing {
namespace {

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
