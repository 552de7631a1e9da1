// Pinned host memory through a device plugin (Note [Pinned host memory]): the test device
// lends it and counts its copy functions, so these tests see which copy_ calls were queued
// without a wait (non_blocking between pinned memory and the device) and which waited.
#include <gtest/gtest.h>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/core/device.h"
#include "loom/core/device_runtime.h"
#include "loom/data.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/extensions.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"
#include "test_device_counters.h"

namespace loom::testing {
namespace {

using dispatch::PluginHost;

std::string plugin_file(const std::string& name) {
  return std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_" + name + ".so";
}

// How many copies, queued copies and stream waits `f` caused.
struct CopyCalls {
  int64_t copies, queued, waits;
  bool operator==(const CopyCalls&) const = default;
};
std::ostream& operator<<(std::ostream& os, const CopyCalls& c) {
  return os << "{copies " << c.copies << ", queued " << c.queued << ", waits " << c.waits << "}";
}
template <typename F>
CopyCalls calls_of(F&& f) {
  const CopyCalls before{test_device_counter("copy"), test_device_counter("copy_async"),
                         test_device_counter("stream_synchronize")};
  f();
  return CopyCalls{test_device_counter("copy") - before.copies,
                   test_device_counter("copy_async") - before.queued,
                   test_device_counter("stream_synchronize") - before.waits};
}

class PinnedMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    ops::load_standard_library();  // the op library's copies between devices
    if (!PluginHost::instance().is_loaded("test_device")) {
      PluginHost::instance().load(plugin_file("test_device"));
    }
    dev_ = parse_device("testdev:0");
  }
  void TearDown() override { PluginHost::instance().unload("test_device"); }
  Device dev_;
};

TEST_F(PinnedMemory, PinnedTensorsComeFromTheDevicePluginAndKeepItLoaded) {
  const int64_t live = test_device_counter("pinned_live");
  const MemoryStats before = pinned_memory_stats("testdev");
  {
    Tensor pinned = empty({4}, TensorOptions().pinned_memory(true));
    EXPECT_TRUE(pinned.is_pinned());
    EXPECT_EQ(pinned.device(), parse_device("cpu"));
    EXPECT_EQ(test_device_counter("pinned_live"), live + 1);
    const MemoryStats during = pinned_memory_stats("testdev");
    EXPECT_EQ(during.allocated_bytes, before.allocated_bytes + 16);
    EXPECT_EQ(during.allocations, before.allocations + 1);
    EXPECT_FALSE(empty({4}).is_pinned());
    EXPECT_FALSE(pinned.to(dev_).is_pinned());
    expect_error([] { PluginHost::instance().unload("test_device"); }, "plugin-host",
                 {"cannot unload plugin 'test_device'", "still alive"});
  }
  EXPECT_EQ(test_device_counter("pinned_live"), live);
  EXPECT_EQ(pinned_memory_stats("testdev").allocated_bytes, before.allocated_bytes);
}

TEST_F(PinnedMemory, NonBlockingCopiesOfPinnedMemoryAreQueuedAndOthersWait) {
  Tensor pinned = empty({4}, TensorOptions().pinned_memory(true));
  for (int i = 0; i < 4; ++i) pinned.data<float>()[i] = static_cast<float>(i + 1);
  Tensor on_device = empty({4}, TensorOptions().device(dev_));
  Tensor pageable = empty({4});
  // to the device: queued; a blocking one is a copy (this device releases the source)
  EXPECT_EQ(calls_of([&] { on_device.copy_(pinned, /*non_blocking=*/true); }),
            (CopyCalls{0, 1, 0}));
  EXPECT_EQ(calls_of([&] { on_device.copy_(pinned); }), (CopyCalls{1, 0, 0}));
  EXPECT_EQ(calls_of([&] { (void)pinned.to("testdev:0", /*non_blocking=*/true); }),
            (CopyCalls{0, 1, 0}));
  EXPECT_EQ(calls_of([&] { (void)pinned.to(dev_, /*non_blocking=*/true); }), (CopyCalls{0, 1, 0}));
  EXPECT_EQ(calls_of([&] { (void)pinned.to(dev_); }), (CopyCalls{1, 0, 0}));
  // to the host: queued into pinned memory, waited for into pageable memory or when blocking
  Tensor back = empty({4}, TensorOptions().pinned_memory(true));
  EXPECT_EQ(calls_of([&] { back.copy_(on_device, true); }), (CopyCalls{0, 1, 0}));
  synchronize(dev_);
  EXPECT_EQ(back.data<float>()[3], 4.0f);
  EXPECT_EQ(calls_of([&] { back.copy_(on_device); }), (CopyCalls{1, 0, 1}));
  EXPECT_EQ(calls_of([&] { pageable.copy_(on_device, true); }), (CopyCalls{1, 0, 1}));
  EXPECT_EQ(pageable.data<float>()[0], 1.0f);
}

TEST_F(PinnedMemory, BadRequestsAreRefused) {
  Tensor on_device = empty({2}, TensorOptions().device(dev_));
  expect_error([&] { on_device.pin_memory(); }, "pin_memory",
               {"expected a cpu tensor, found one on testdev:0"});
  expect_error([&] { empty({2}, TensorOptions().device(dev_).pinned_memory(true)); }, "empty",
               {"expected the cpu device for pinned memory, found testdev:0"});
  expect_error([] { empty({2}).pin_memory("nope"); }, "pin_memory",
               {"expected a loaded plugin device type, found 'nope'"});
  expect_error([] { empty({2}).pin_memory("cpu"); }, "pin_memory",
               {"expected a loaded plugin device type, found 'cpu'"});
  expect_error([] { pinned_memory_stats("cpu"); }, "device",
               {"device type 'cpu' reports no pinned host memory"});
  expect_error([] { pinned_memory_stats("nope"); }, "device", {"unknown device type 'nope'"});
}

// DataLoaderOptions::pin_memory, as PyTorch's DataLoader(pin_memory=True): every batch in
// pinned memory, assembled on the loader's thread.
TEST_F(PinnedMemory, ADataLoaderAssemblesPinnedBatches) {
  Tensor data = empty({10, 3});
  Tensor targets = empty({10}, TensorOptions().dtype(ScalarType::Int64));
  for (int i = 0; i < 30; ++i) data.data<float>()[i] = static_cast<float>(i);
  for (int i = 0; i < 10; ++i) targets.data<int64_t>()[i] = i;
  data::DataLoaderOptions options;
  options.batch_size = 4;
  options.shuffle = false;
  options.pin_memory = true;
  data::DataLoader loader(data::TensorDataset(data, targets), options);
  int64_t batches = 0;
  for (const data::Example& batch : loader) {
    EXPECT_TRUE(batch.data.is_pinned());
    EXPECT_TRUE(batch.target.is_pinned());
    EXPECT_EQ(batch.data.data<float>()[0], static_cast<float>(12 * batches));
    EXPECT_EQ(batch.target.data<int64_t>()[0], 4 * batches);
    ++batches;
  }
  EXPECT_EQ(batches, 3);
}

TEST(PinnedMemoryLending, WithoutALenderPinningIsRefused) {
  PluginHost& host = PluginHost::instance();
  if (host.is_loaded("test_device")) host.unload("test_device");
  expect_error([] { empty({2}, TensorOptions().pinned_memory(true)); }, "empty",
               {"expected a loaded device plugin with a device that lends pinned host memory"});
  data::DataLoaderOptions options;
  options.pin_memory = true;
  expect_error(
      [&] {
        data::DataLoader(data::TensorDataset(empty({4, 2}), empty({4})), options);
      },
      "data::DataLoader", {"lends pinned host memory"});
}

TEST(PinnedMemoryLending, AnInterfaceWithHalfOfThePinnedFunctionsIsRefused) {
  PluginHost& host = PluginHost::instance();
  if (host.is_loaded("test_device")) host.unload("test_device");
  expect_error(
      [] {
        PluginHost::instance().load(plugin_file("test_device"), {{"half_pinned", "1"}});
      },
      "plugin-host",
      {"register_device_type('testdev_bad')",
       "must provide host_allocate and host_deallocate together, found only "
       "host_allocate"});
  EXPECT_FALSE(host.is_loaded("test_device"));
}

}  // namespace
}  // namespace loom::testing
