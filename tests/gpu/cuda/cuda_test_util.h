// What the CUDA plugin's tests share (tests/gpu/cuda/, one file per op family): loading
// the plugin, whether a GPU is here, comparing a GPU tensor with the CPU's, and the
// CudaOps fixture, which skips without a device.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#if !defined(LOOM_GPU_EMULATED_TESTS)
#include <cuda_runtime_api.h>
#endif

#include "../../frontend/frontend_test_util.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/manifest.h"
#include "loom/loom.h"

namespace loom::test {

#if defined(LOOM_GPU_EMULATED_TESTS)
// gpu_emulated_tests: the same tests on the emulated plugin (Note [The GPU emulator] in
// plugins/gpu/emulator/block_scheduler.cc), whose one device is always there.
inline const std::string kPlugin =
    std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_cuda_emulated.so";
#else
inline const std::string kPlugin = std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cuda.so";
#endif

// Loads the CUDA plugin with `entry_options` (unloaded first when loaded with others).
inline Runtime load_cuda(const std::string& entry_options) {
  unload_if_other_options("cuda", "path: \"" + kPlugin + "\" " + entry_options);
  std::string manifest = std::string("search_dirs: \"") + LOOM_PLUGIN_DIR + "\"\n" +
                         "plugins { name: \"cpu\" }\nplugins { name: \"autograd\" }\n" +
                         "plugins { path: \"" + kPlugin + "\" " + entry_options + " }\n";
  return Runtime::load(dispatch::parse_manifest(manifest, "<gpu test>"));
}

// Asked of the runtime directly: a loaded plugin stays loaded for the process, so the
// tests below must not depend on which of them loaded it first.
inline bool gpu_present() {
#if defined(LOOM_GPU_EMULATED_TESTS)
  return true;
#else
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#endif
}

// A GPU tensor's values against the CPU's, within tol relative (NaN where the CPU has NaN).
inline void expect_close(const Tensor& gpu, const Tensor& cpu, double tol) {
  std::vector<double> g = values(gpu.to(parse_device("cpu")).to(ScalarType::Float64));
  std::vector<double> c = values(cpu.to(ScalarType::Float64));
  ASSERT_EQ(g.size(), c.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(c[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << i;
    } else {
      EXPECT_NEAR(g[i], c[i], tol * (1 + std::fabs(c[i]))) << "element " << i;
    }
  }
}

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (runs on a machine with a GPU)";
    runtime_.emplace(load_cuda(""));
  }
  Device cuda() const { return parse_device("cuda:0"); }
  std::optional<Runtime> runtime_;
};

// A [7, 300, 5] float32 tensor of small integers (many ties along every dim) holding one
// NaN: what scans and sorts must order as the CPU does.
inline Tensor ties_with_nan() {
  Tensor a = (randn({7, 300, 5}) * 3.0).round();
  a.select(0, 2).select(0, 7).select(0, 1).fill_(std::nan(""));
  return a;
}

}  // namespace loom::test
