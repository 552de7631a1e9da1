// The example vendor plugin (sdk/examples/vendor_backend), built out of tree against the
// installed SDK, loaded with manifest options and used end to end on its device.
#include <gtest/gtest.h>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/core/device.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/runtime.h"

namespace loom::testing {
namespace {

using dispatch::Dispatcher;
using dispatch::PluginHost;

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
  EXPECT_EQ(info.kernels, 4);
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
  }
  PluginHost::instance().unload("npu_sim");
  expect_error([] { parse_device("npu_sim:0"); }, "device", {"unknown device type 'npu_sim'"});
}

}  // namespace
}  // namespace loom::testing
