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
#include "loom/nn.h"
#include "loom/optim.h"

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

// Three Adam steps (lr 1e-2) of cpu_net and gpu_net, built with the same initial
// parameters, on (x, target): each step's losses agree within loss_tol and the final
// parameters, on cuda:0, within 1e-4.
inline void expect_training_matches_the_cpu(nn::Sequential& cpu_net, nn::Sequential& gpu_net,
                                            const Tensor& x, const Tensor& target,
                                            optim::AdamOptions gpu_options, double loss_tol) {
  const Device gpu = parse_device("cuda:0");
  gpu_net->to("cuda:0");
  optim::Adam cpu_adam(cpu_net->parameters(), optim::AdamOptions(1e-2));
  optim::Adam gpu_adam(gpu_net->parameters(), gpu_options.lr(1e-2));
  nn::CrossEntropyLoss criterion;
  for (int step = 0; step < 3; ++step) {
    cpu_adam.zero_grad();
    gpu_adam.zero_grad();
    Tensor cpu_loss = criterion(cpu_net(x), target);
    Tensor gpu_loss = criterion(gpu_net(x.to(gpu)), target.to(gpu));
    expect_close(gpu_loss, cpu_loss, loss_tol);
    cpu_loss.backward();
    gpu_loss.backward();
    cpu_adam.step();
    gpu_adam.step();
  }
  const std::vector<Tensor> cpu_params = cpu_net->parameters(), gpu_params = gpu_net->parameters();
  ASSERT_EQ(gpu_params.size(), cpu_params.size());
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "parameter " << i);
    EXPECT_EQ(gpu_params[i].device(), gpu);
    expect_close(gpu_params[i], cpu_params[i], 1e-4);
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
