// The ROCm plugin (plugins/gpu built by hipcc) on a machine without an AMD GPU: it loads,
// reports zero devices with the HIP runtime's reason, an optional manifest entry is
// skipped with that message, a required one stops the load, and allow_no_device
// registers its "hip" device type and the kernels of the shared tree. With an AMD GPU
// (none is lent to this project yet) the kernels run through the same pointwise check as
// the CUDA plugin's, and a compiled chain runs as one kernel built by hiprtc.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <hip/hip_runtime_api.h>

#include "../frontend/frontend_test_util.h"
#include "loom/compile.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/manifest.h"
#include "loom/loom.h"

namespace loom {
namespace {

const std::string kPlugin = std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_rocm.so";

// Loads the ROCm plugin with `entry_options` (unloaded first when loaded with others).
Runtime load_rocm(const std::string& entry_options) {
  test::unload_if_other_options("rocm", "path: \"" + kPlugin + "\" " + entry_options);
  std::string manifest = std::string("search_dirs: \"") + LOOM_PLUGIN_DIR + "\"\n" +
                         "plugins { name: \"cpu\" }\n" + "plugins { path: \"" + kPlugin + "\" " +
                         entry_options + " }\n";
  return Runtime::load(dispatch::parse_manifest(manifest, "<rocm test>"));
}

// Asked of the HIP runtime directly: a loaded plugin stays loaded for the process, so the
// tests must not depend on which of them loaded it first.
int rocm_devices() {
  int count = 0;
  return hipGetDeviceCount(&count) == hipSuccess ? count : 0;
}

TEST(RocmPlugin, WithoutADeviceAnOptionalEntryIsSkippedWithTheRuntimesReason) {
  if (rocm_devices() > 0) GTEST_SKIP() << "an AMD GPU is present: nothing to skip";
  Runtime runtime = load_rocm("optional: true");
  ASSERT_EQ(runtime.report().skipped.size(), 1u);
  const std::string& message = runtime.report().skipped[0].second;
  EXPECT_NE(message.find("[rocm] no usable device (0 devices): hip"), std::string::npos) << message;
}

TEST(RocmPlugin, WithoutADeviceARequiredEntryStopsTheLoad) {
  if (rocm_devices() > 0) GTEST_SKIP() << "an AMD GPU is present";
  test::expect_error([] { load_rocm(""); }, "plugin-host",
                     {"required plugin", "[rocm] no usable device"});
}

TEST(RocmPlugin, AllowNoDeviceRegistersTheHipDeviceTypeAndKernels) {
  Runtime runtime = load_rocm("options { key: \"allow_no_device\" value: \"true\" }");
  std::optional<dispatch::PluginInfo> rocm;
  for (const auto& p : runtime.plugins()) {
    if (p.name == "rocm") rocm = p;
  }
  ASSERT_TRUE(rocm.has_value());
  ASSERT_EQ(rocm->device_types.size(), 1u);
  EXPECT_EQ(rocm->device_types[0], "hip");
  EXPECT_GT(rocm->kernels, 70);
  EXPECT_EQ(rocm->capabilities.count("loom::add.out"), 1u);
  EXPECT_EQ(rocm->capabilities.count("loom::max_pool2d_with_indices.out"), 1u);
  // loom's implicit-GEMM convolution: Debian has no MIOpen.
  EXPECT_EQ(rocm->capabilities.count("loom::conv2d.out"), 1u);
  EXPECT_EQ(rocm->capabilities.count("loom::conv2d_backward_weight.out"), 1u);
  if (rocm->device_counts[0] == 0) {
    EXPECT_FALSE(rocm->attributes.at("unavailable_reason").empty());
    test::expect_error([] { (void)zeros({4}, TensorOptions().device(parse_device("hip:0"))); },
                       "device", {"hip:0 does not exist", "0 devices"});
  }
}

TEST(RocmPlugin, PointwiseOpsMatchTheCpuOnAnAmdGpu) {
  if (rocm_devices() == 0) GTEST_SKIP() << "no AMD GPU here (runs on a machine with one)";
  Runtime runtime = load_rocm("");
  Tensor a = randn({33, 65}), b = randn({65});
  const Device hip = parse_device("hip:0");
  Tensor g = (a.to(hip) + b.to(hip) * 2.0).exp().sum({1});
  std::vector<double> got = test::values(g.to(parse_device("cpu")).to(ScalarType::Float64));
  std::vector<double> want = test::values((a + b * 2.0).exp().sum({1}).to(ScalarType::Float64));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + want[i]));
}

// loom::compile on HIP tensors: the chain becomes one kernel built by hiprtc.
TEST(RocmPlugin, ACompiledPointwiseChainRunsAsOneHipKernel) {
  if (rocm_devices() == 0) GTEST_SKIP() << "no AMD GPU here (runs on a machine with one)";
  test::unload_if_other_options("rocm", "path: \"" + kPlugin + "\" ");
  Runtime runtime = Runtime::load(
      dispatch::parse_manifest(std::string("search_dirs: \"") + LOOM_PLUGIN_DIR +
                                   "\"\nplugins { name: \"cpu\" }\nplugins { name: \"compiler\" }\n"
                                   "plugins { path: \"" +
                                   kPlugin + "\" }\n",
                               "<rocm compile test>"));
  auto chain = [](const Tensor& x, const Tensor& y) {
    return ((x * 2 + 1).sin().exp().tanh() * y + x).relu().sigmoid();
  };
  auto f = compile(chain);
  const Device hip = parse_device("hip:0");
  Tensor x = randn({1 << 16}), y = randn({1 << 16});
  Tensor gx = x.to(hip), gy = y.to(hip);
  f(gx, gy);
  std::vector<double> got = test::values(f(gx, gy).to(parse_device("cpu")).to(ScalarType::Float64));
  std::vector<double> want = test::values(chain(x, y).to(ScalarType::Float64));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + want[i]));
  EXPECT_EQ(f.explanation().kernels, 1) << f.explanation().graph;
}

}  // namespace
}  // namespace loom
