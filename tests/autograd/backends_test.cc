// Autograd on other backends and without the plugin: backward on the example vendor
// backend (npu_sim, built out of tree against the SDK, which registers nothing for
// autograd) equals the CPU's, with its saved tensors offloaded to the cpu too; without the autograd
// plugin the autograd calls fail clearly and ops run as before.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

#include "../frontend/frontend_test_util.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

// x * w + x / w, then exp, backpropagated with an explicit output gradient: every formula
// involved uses only ops npu_sim implements (add, sub, mul, div, neg, exp, fill_, copy_).
// With `offload`, the saved tensors wait in host memory (autograd::SaveOnCpu).
std::pair<std::vector<double>, std::vector<double>> gradients_on(Device device,
                                                                 bool offload = false) {
  Tensor x = tensor({0.5, -1.0, 2.0}).to(device).requires_grad_();
  Tensor w = tensor({1.5, 2.0, -0.5}).to(device).requires_grad_();
  Tensor y;
  {
    std::optional<autograd::SaveOnCpu> saved_on_cpu;
    if (offload) saved_on_cpu.emplace(/*pin_memory=*/true);
    y = exp(x * w + x / w);
  }
  y.backward(tensor({1.0, 0.5, 0.25}).to(device));
  EXPECT_EQ(x.grad().device(), device);
  return {values(x.grad().to("cpu")), values(w.grad().to("cpu"))};
}

TEST(AutogradBackends, VendorBackendGetsTheCpusGradientsWithoutRegisteringAnything) {
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
  Runtime runtime = test::load_plugins(
      {"cpu", "autograd"}, {std::string(LOOM_EXAMPLE_PLUGIN_DIR) + "/libloom_plugin_npu_sim.so"});
  ASSERT_EQ(runtime.report().loaded.size(), 3u);
  auto [cpu_x, cpu_w] = gradients_on(Device{kCPU, -1});
  for (bool offload : {false, true}) {
    SCOPED_TRACE(offload ? "saved tensors on the cpu" : "saved tensors on the device");
    auto [npu_x, npu_w] = gradients_on(parse_device("npu_sim:0"), offload);
    ASSERT_EQ(cpu_x.size(), npu_x.size());
    for (size_t i = 0; i < cpu_x.size(); ++i) {
      EXPECT_NEAR(npu_x[i], cpu_x[i], 1e-5 * (1 + std::abs(cpu_x[i])));
      EXPECT_NEAR(npu_w[i], cpu_w[i], 1e-5 * (1 + std::abs(cpu_w[i])));
    }
  }
}

}  // namespace
}  // namespace loom
