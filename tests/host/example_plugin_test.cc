// The example vendor plugin (sdk/examples/vendor_backend), built out of tree against the
// installed SDK, loaded with manifest options and used end to end on its device.
#include <gtest/gtest.h>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/core/device.h"
#include "loom/devices.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/runtime.h"

namespace loom::testing {
namespace {

using dispatch::Dispatcher;
using dispatch::PluginHost;

loom::Runtime load_npu_sim() {
  std::string manifest = std::string("plugins { path: \"") + LOOM_EXAMPLE_PLUGIN_DIR +
                         "/libloom_plugin_npu_sim.so\" }\n";
  return loom::Runtime::load(dispatch::parse_manifest(manifest, "<test>"));
}

// A float32 CPU tensor of `shape` holding 0, 1, 2, ... (no CPU plugin is loaded here).
Tensor host_iota(std::vector<int64_t> shape) {
  Tensor t = empty(shape, ScalarType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

// t's values in row-major order (the copy to the host keeps t's layout; this test loads no
// CPU plugin to reorder them, so the row-major host tensor is made first).
std::vector<float> host_values(const Tensor& t) {
  Tensor host = empty(t.sizes(), TensorOptions().dtype(t.dtype()));
  host.copy_(t);
  return std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
}

Tensor call_tensor(const char* op, std::initializer_list<LoomValue> args) {
  std::vector<LoomValue> a(args);
  LoomValue ret[1];
  Dispatcher::instance().call(Dispatcher::instance().find_defined(op), a.data(), a.size(), ret, 1);
  return dispatch::unbox_tensor(ret[0], "test");
}

TEST(ExamplePlugin, ComputesOnItsDeviceAndReportsItself) {
  std::string manifest = std::string("plugins { path: \"") + LOOM_EXAMPLE_PLUGIN_DIR +
                         "/libloom_plugin_npu_sim.so\" options { key: \"driver_version\" "
                         "value: \"sim-7.1\" } }\n";
  loom::Runtime runtime = loom::Runtime::load(dispatch::parse_manifest(manifest, "<test>"));
  ASSERT_EQ(runtime.report().loaded, std::vector<std::string>{"npu_sim"});
  dispatch::PluginInfo info = PluginHost::instance().plugins().at(0);
  EXPECT_EQ(info.version, "0.1.0");
  EXPECT_EQ(info.device_types, std::vector<std::string>{"npu_sim"});
  EXPECT_EQ(info.backends, std::vector<std::string>{"npu_sim"});
  EXPECT_EQ(info.attributes.at("driver_version"), "sim-7.1");
  EXPECT_EQ(info.kernels, 13);
  EXPECT_EQ(info.capabilities.at("loom::add.out").at("npu_sim"), uint64_t{1} << LOOM_DTYPE_FLOAT32);

  Device npu = parse_device("npu_sim:1");
  std::vector<int64_t> shape{3};
  {
    Tensor host_a = empty(shape, ScalarType::Float32);
    for (int i = 0; i < 3; ++i) host_a.data<float>()[i] = static_cast<float>(i + 1);
    Tensor dev_a = empty(shape, ScalarType::Float32, npu);
    Tensor dev_b = empty(shape, ScalarType::Float32, npu);
    call_tensor("loom::copy_", {dispatch::box(dev_a), dispatch::box(host_a), dispatch::box(false)});
    call_tensor("loom::fill_.Scalar", {dispatch::box(dev_b), dispatch::box(0.5)});
    Tensor dev_c = call_tensor("loom::add.Tensor",
                               {dispatch::box(dev_a), dispatch::box(dev_b), dispatch::box(2.0)});
    EXPECT_EQ(dev_c.device(), npu);
    Tensor host_c = empty(shape, ScalarType::Float32);
    call_tensor("loom::copy_", {dispatch::box(host_c), dispatch::box(dev_c), dispatch::box(false)});
    EXPECT_EQ(host_c.data<float>()[0], 2.0f);
    EXPECT_EQ(host_c.data<float>()[2], 4.0f);
    // A C++ number is cast to float32 on the host before it moves to the device, so the
    // float32-only backend needs no dtype conversion in its copy_.
    Tensor dev_e = dev_a + 2.0;
    EXPECT_EQ(dev_e.device(), npu);
    EXPECT_EQ(dev_e.dtype(), ScalarType::Float32);
    Tensor host_e = empty(shape, ScalarType::Float32);
    call_tensor("loom::copy_", {dispatch::box(host_e), dispatch::box(dev_e), dispatch::box(false)});
    EXPECT_EQ(host_e.data<float>()[1], 4.0f);
    // Its kernels check their inputs and name the op.
    Tensor dev_d = empty(std::vector<int64_t>{3}, ScalarType::Float64, npu);
    expect_error(
        [&] {
          call_tensor("loom::mul.Tensor", {dispatch::box(dev_a), dispatch::box(dev_d)});
        },
        "loom::mul.Tensor", {"backend npu_sim does not support dtype float64 (claims: float32)"});
    // Broadcasting on the device: the core hands the kernel stride-0 views.
    Tensor dev_row = empty(std::vector<int64_t>{2, 3}, ScalarType::Float32, npu);
    call_tensor("loom::fill_.Scalar", {dispatch::box(dev_row), dispatch::box(1.0)});
    Tensor dev_sum = call_tensor(
        "loom::add.Tensor", {dispatch::box(dev_row), dispatch::box(dev_a), dispatch::box(1.0)});
    Tensor host_sum = empty(std::vector<int64_t>{2, 3}, ScalarType::Float32);
    call_tensor("loom::copy_",
                {dispatch::box(host_sum), dispatch::box(dev_sum), dispatch::box(false)});
    EXPECT_EQ(host_sum.data<float>()[5], 4.0f);  // 1 + host_a[2] (= 3)
    expect_error([] { parse_device("npu_sim:x"); }, "device", {"invalid device"});
    expect_error([&] { PluginHost::instance().unload("npu_sim"); }, "plugin-host", {"still alive"});
    // npu_sim has no caching allocator, so no "loom.device_memory.npu_sim" table
    expect_error(
        [] { memory_stats(parse_device("npu_sim:0")); }, "device",
        {"device type 'npu_sim' publishes no memory statistics", "loom.device_memory.npu_sim"});
  }
  PluginHost::instance().unload("npu_sim");
  expect_error([] { parse_device("npu_sim:0"); }, "device", {"unknown device type 'npu_sim'"});
}

// The host drives the device through its interface: counts, properties, index
// resolution, the current device, synchronisation and copies between devices.
TEST(ExamplePlugin, DeviceSideThroughTheDeviceInterface) {
  loom::Runtime runtime = load_npu_sim();
  EXPECT_EQ(device_count("npu_sim"), 2);
  EXPECT_EQ(device_count("cpu"), 1);
  expect_error([] { device_count("tpu"); }, "device", {"unknown device type 'tpu'"});
  EXPECT_EQ(device_properties(parse_device("npu_sim:1")).name, "npu_sim 1");
  {
    // "npu_sim" is the current device, index 0: it mixes with npu_sim:0 tensors.
    Tensor a = empty({3}, TensorOptions().device(parse_device("npu_sim")));
    EXPECT_EQ(a.device(), parse_device("npu_sim:0"));
    Tensor b = host_iota({3}).to("npu_sim:0");
    a.fill_(2.0);
    EXPECT_EQ(host_values(a + b), (std::vector<float>{2, 3, 4}));
    expect_error([] { empty({3}, TensorOptions().device(parse_device("npu_sim:5"))); }, "device",
                 {"npu_sim:5 does not exist: npu_sim has 2 devices (npu_sim:0..npu_sim:1)"});
    {
      DeviceGuard guard(parse_device("npu_sim:1"));
      EXPECT_EQ(empty({1}, TensorOptions().device(parse_device("npu_sim"))).device().index, 1);
    }
    EXPECT_EQ(empty({1}, TensorOptions().device(parse_device("npu_sim"))).device().index, 0);
    // host -> npu_sim:0, transposed there -> npu_sim:1 (through host memory) -> host
    Tensor host = host_iota({2, 3});
    Tensor on0 = host.to("npu_sim:0").t();
    Tensor on1 = on0.to("npu_sim:1");
    EXPECT_EQ(on1.device(), parse_device("npu_sim:1"));
    // the copy keeps the transposed layout (Note [Layouts of new results]), as PyTorch's to()
    EXPECT_EQ(std::vector<int64_t>(on1.strides().begin(), on1.strides().end()),
              (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(host_values(on1), (std::vector<float>{0, 3, 1, 4, 2, 5}));
    // into a non-contiguous destination on the device
    Tensor dst = empty({3, 2}, TensorOptions().device(parse_device("npu_sim:1"))).t();
    dst.copy_(host);
    EXPECT_EQ(host_values(dst.t()), (std::vector<float>{0, 3, 1, 4, 2, 5}));
    synchronize(on1.device());
  }
}

// Kernels queue on the current stream (a worker thread in npu_sim); an event orders a
// second stream after the first. s1 runs a chain of ten passes over 1M elements; s2 waits
// for the event recorded after it, then adds 1: every element must see the whole chain.
TEST(ExamplePlugin, StreamsQueueKernelsAndEventsOrderStreams) {
  loom::Runtime runtime = load_npu_sim();
  const Device npu = parse_device("npu_sim:0");
  Stream s1 = Stream::create(npu);
  Stream s2 = Stream::create(npu);
  const int64_t n = int64_t{1} << 20;
  Tensor x = host_iota({n}).to("npu_sim:0");
  // Device-side operands: no C++ number (whose move to the device would wait for the
  // stream) inside the queued chain.
  Tensor one = empty({n}, TensorOptions().device(npu));
  one.fill_(1.0);
  Tensor two = one + one;
  Event produced(npu);
  for (int round = 0; round < 3; ++round) {
    Tensor y, z;
    {
      StreamGuard guard(s1);
      EXPECT_EQ(current_stream(npu.type), s1.handle());
      y = x * two;
      for (int i = 0; i < 9; ++i) y = y * one;
      produced.record(s1);
    }
    EXPECT_EQ(current_stream(npu.type), nullptr);  // the guard restored the default stream
    produced.wait(s2);
    {
      StreamGuard guard(s2);
      z = y + one;
    }
    s2.synchronize();
    std::vector<float> values = host_values(z);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += values[i] != static_cast<float>(2 * i + 1);
    EXPECT_EQ(wrong, 0) << "round " << round;
  }
  synchronize(npu);  // every stream of the device
  expect_error([] { PluginHost::instance().unload("npu_sim"); }, "plugin-host", {"still alive"});
  expect_error([] { Stream::create(parse_device("cpu")); }, "device", {"cpu has no streams"});
}

// Pinned memory lent by npu_sim (the SDK's host_memory_device): a copy_ asked to be
// non-blocking is queued on the current stream behind the kernels there and the host reads
// its result after synchronising. Each side is dropped as soon as its copy is queued: the
// SDK holds the blocks until the copy has run (Note [Held blocks]; the sanitizer build
// would see a use after free).
TEST(ExamplePlugin, NonBlockingCopiesThroughPinnedMemoryFollowTheStream) {
  std::string manifest = std::string("search_dirs: \"") + LOOM_PLUGIN_DIR +
                         "\"\nplugins { name: \"cpu\" }\nplugins { path: \"" +
                         LOOM_EXAMPLE_PLUGIN_DIR + "/libloom_plugin_npu_sim.so\" }\n";
  loom::Runtime runtime = loom::Runtime::load(dispatch::parse_manifest(manifest, "<test>"));
  const Device npu = parse_device("npu_sim:0");
  const int64_t n = int64_t{1} << 20;
  Tensor host = host_iota({n});
  Tensor pinned = host.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(host.is_pinned());
  EXPECT_TRUE(pinned.pin_memory().is_alias_of(pinned));           // already pinned: itself
  EXPECT_TRUE(pinned.pin_memory("npu_sim").is_alias_of(pinned));  // by npu_sim's plugin
  EXPECT_EQ(pinned.data<float>()[n - 1], static_cast<float>(n - 1));
  Tensor transposed = host.view({1024, 1024}).t().pin_memory();  // keeps the layout
  EXPECT_TRUE(transposed.is_pinned());
  EXPECT_EQ(transposed.stride(0), 1);
  Tensor one = empty({n}, TensorOptions().device(npu));
  one.fill_(1.0);
  Stream s = Stream::create(npu);
  for (int round = 0; round < 3; ++round) {
    Tensor back = empty({n}, TensorOptions().pinned_memory(true));
    {
      StreamGuard guard(s);
      Tensor y = host.pin_memory().to("npu_sim:0", /*non_blocking=*/true) + one;
      for (int i = 0; i < 4; ++i) y = y + one;
      back.copy_(y, /*non_blocking=*/true);
    }
    s.synchronize();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += back.data<float>()[i] != static_cast<float>(i + 5);
    EXPECT_EQ(wrong, 0) << "round " << round;
  }
  synchronize(npu);
}

}  // namespace
}  // namespace loom::testing
