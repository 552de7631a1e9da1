// The test device plugin's "test_device.counters" table (tests/plugins/test_device_plugin.cc):
// how often each of its copy functions, stream waits and host-scalar kernels ran, read by
// the host tests that check which calls the host made.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "loom/dispatcher/extensions.h"

namespace loom::testing {

struct TestDeviceCounters {
  size_t struct_size;
  int64_t (*count)(const char* name);
};

// The counter `name` ("copy", "copy_async", "stream_synchronize", "pinned_live",
// "host_scalars"), or -1 when the plugin is not loaded.
inline int64_t test_device_counter(const char* name) {
  const auto* table =
      static_cast<const TestDeviceCounters*>(dispatch::find_extension("test_device.counters"));
  EXPECT_NE(table, nullptr);
  return table == nullptr ? -1 : table->count(name);
}

}  // namespace loom::testing
