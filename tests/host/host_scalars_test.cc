// Host scalars by value (Note [Host scalars by value]): a device whose plugin sets
// LOOM_DEVICE_TAKES_HOST_SCALARS gets a C++ number used with its tensors as the 0-dim CPU
// tensor it is, cast to the compute dtype and never copied to the device; other devices
// get it copied and expanded as before.
#include <gtest/gtest.h>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/core/device.h"
#include "loom/dispatcher/extensions.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"
#include "test_device_counters.h"

namespace loom::testing {
namespace {

using dispatch::PluginHost;

class HostScalars : public ::testing::Test {
 protected:
  void SetUp() override {
    ops::load_standard_library();
    if (!PluginHost::instance().is_loaded("cpu")) {  // conversions on the host
      PluginHost::instance().load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so");
    }
    PluginHost::instance().load(
        std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_test_device.so",
        {{"host_scalars", "1"}});
    dev_ = parse_device("scalardev:0");
  }
  void TearDown() override { PluginHost::instance().unload("test_device"); }
  Device dev_;
};

std::vector<float> values(const Tensor& t) {
  Tensor host = t.to(parse_device("cpu")).contiguous();
  return std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
}

TEST_F(HostScalars, ANumberReachesTheKernelByValueWithoutACopy) {
  Tensor x = tensor({1.0, 2.0, 3.0}).to(ScalarType::Float32).to(dev_);
  const int64_t copies = test_device_counter("copy"), scalars = test_device_counter("host_scalars");
  Tensor y = x * 2.5;
  EXPECT_EQ(test_device_counter("copy"), copies);  // nothing went to the device
  EXPECT_EQ(test_device_counter("host_scalars"), scalars + 1);
  EXPECT_EQ(y.device(), dev_);
  EXPECT_EQ(values(y), (std::vector<float>{2.5f, 5.0f, 7.5f}));
  // an integer number promotes like a wrapped number: float32 stays float32, and the
  // element the kernel reads is already float32
  EXPECT_EQ(values(x * 3), (std::vector<float>{3.0f, 6.0f, 9.0f}));
  // any 0-dim CPU tensor mixes with device tensors, on either side
  Tensor two = scalar_tensor(2.0, TensorOptions().dtype(ScalarType::Float64));
  EXPECT_EQ(values(two * x), (std::vector<float>{2.0f, 4.0f, 6.0f}));
  EXPECT_EQ((two * x).dtype(), ScalarType::Float32);
  // in place
  Tensor z = x * 1.0;
  z.mul_(-1);
  EXPECT_EQ(values(z), (std::vector<float>{-1.0f, -2.0f, -3.0f}));
  EXPECT_EQ(test_device_counter("host_scalars"), scalars + 6);
}

TEST_F(HostScalars, MasksAndBroadcastsKeepTheirRules) {
  Tensor x = tensor({1.0, -2.0, -3.0, 4.0}).to(ScalarType::Float32).reshape({2, 2}).to(dev_);
  Tensor yes = scalar_tensor(true, TensorOptions().dtype(ScalarType::Bool));
  Tensor no = scalar_tensor(false, TensorOptions().dtype(ScalarType::Bool));
  Tensor zero = scalar_tensor(0.0, TensorOptions().dtype(ScalarType::Float64));
  const int64_t scalars = test_device_counter("host_scalars");
  Tensor kept = where(yes, x, zero);  // the condition and other by value
  EXPECT_EQ(values(kept), (std::vector<float>{1.0f, -2.0f, -3.0f, 4.0f}));
  EXPECT_EQ(test_device_counter("host_scalars"), scalars + 2);
  Tensor zeroed = where(no, x, zero);
  EXPECT_EQ(values(zeroed), (std::vector<float>(4, 0.0f)));
  // a number decides neither the device nor the shape nor, against a float32 tensor, the dtype
  EXPECT_EQ(zeroed.device(), dev_);
  EXPECT_EQ(std::vector<int64_t>(zeroed.sizes().begin(), zeroed.sizes().end()),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(zeroed.dtype(), ScalarType::Float32);
  // a dimensioned CPU tensor is still refused, naming both devices
  expect_error(
      [&] {
        (void)(x * tensor({2.0, 3.0}).to(ScalarType::Float32));
      },
      "loom::mul.Tensor", {"expected all tensors on one device", "scalardev:0"});
}

}  // namespace
}  // namespace loom::testing
