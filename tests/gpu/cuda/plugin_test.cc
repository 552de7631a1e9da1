// The CUDA plugin itself: loading with and without a device, its options, the caching
// allocator's statistics, autograd and a CNN's training steps on GPU tensors, and
// errors that reach the caller. Without a GPU (every CI machine) the loading tests run
// and the others skip.
#include <gtest/gtest.h>

#include <optional>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;
using test::gpu_present;
using test::load_cuda;

TEST(CudaPlugin, WithoutADeviceAnOptionalEntryIsSkippedWithTheDriversReason) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: nothing to skip";
  Runtime runtime = load_cuda("optional: true");
  ASSERT_EQ(runtime.report().skipped.size(), 1u);
  const std::string& message = runtime.report().skipped[0].second;
  EXPECT_NE(message.find("[cuda] no usable device (0 devices): cuda"), std::string::npos)
      << message;
}

TEST(CudaPlugin, WithoutADeviceARequiredEntryStopsTheLoad) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present";
  test::expect_error([] { load_cuda(""); }, "plugin-host",
                     {"required plugin", "[cuda] no usable device"});
}

// Before any test loads the plugin for good: a refused option fails its initialisation.
TEST(CudaPlugin, AnUnknownGemmOptionIsRefused) {
  test::expect_error(
      [] {
        load_cuda(
            "options { key: \"allow_no_device\" value: \"true\" } "
            "options { key: \"gemm\" value: \"fastest\" }");
      },
      "plugin-host", "option gemm: expected \"vendor\" or \"loom\", found \"fastest\"");
  test::expect_error(
      [] {
        load_cuda(
            "options { key: \"allow_no_device\" value: \"true\" } "
            "options { key: \"conv\" value: \"winograd\" }");
      },
      "plugin-host", "option conv: expected \"vendor\" or \"loom\", found \"winograd\"");
  test::expect_error(
      [] {
        load_cuda(
            "options { key: \"allow_no_device\" value: \"true\" } "
            "options { key: \"cudnn\" value: \"v7\" }");
      },
      "plugin-host", "option cudnn: expected \"auto\", \"graph\" or \"legacy\", found \"v7\"");
}

TEST(CudaPlugin, AllowNoDeviceRegistersTheDeviceTypeAndKernels) {
  Runtime runtime = load_cuda("options { key: \"allow_no_device\" value: \"true\" }");
  const dispatch::PluginInfo* cuda = nullptr;
  std::vector<dispatch::PluginInfo> plugins = runtime.plugins();
  for (const auto& p : plugins) {
    if (p.name == "cuda") cuda = &p;
  }
  ASSERT_NE(cuda, nullptr);
  ASSERT_EQ(cuda->device_types.size(), 1u);
  EXPECT_EQ(cuda->device_types[0], "cuda");
  EXPECT_GT(cuda->kernels, 70);
  EXPECT_EQ(cuda->capabilities.count("loom::mm.out"), 1u);
  if (cuda->device_counts[0] == 0) {
    EXPECT_FALSE(cuda->attributes.at("unavailable_reason").empty());
    // Memory on a device that is not there: a clear error, no crash.
    test::expect_error([] { (void)zeros({4}, TensorOptions().device(parse_device("cuda:0"))); },
                       "device", {"cuda:0 does not exist", "0 devices"});
    // Pinned memory: the plugin lends it only with a device, and the error says so.
    test::expect_error([] { (void)zeros({4}).pin_memory("cuda"); }, "pin_memory",
                       {"failed to allocate", "pinned host memory", "without a device"});
    test::expect_error([] { (void)zeros({4}).pin_memory(); }, "pin_memory", {"cuda (0 devices)"});
  }
}

// The caching allocator's figures through loom::memory_stats: a tensor's block is
// allocated and then cached, empty_cache returns the cache to the driver, and the peak
// holds until reset.
TEST_F(CudaOps, MemoryStatsFollowTheCachingAllocator) {
  synchronize(cuda());
  empty_cache(cuda());
  reset_peak_memory_stats(cuda());
  const MemoryStats before = memory_stats(cuda());
  { Tensor t = empty({1 << 20}, TensorOptions().device(cuda())); }
  synchronize(cuda());
  const MemoryStats after = memory_stats(cuda());
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);  // freed, so cached
  EXPECT_GE(after.reserved_bytes, before.reserved_bytes + (4 << 20));
  EXPECT_GE(after.peak_allocated_bytes, before.allocated_bytes + (4 << 20));
  EXPECT_EQ(after.allocations, before.allocations + 1);
  empty_cache(cuda());
  EXPECT_EQ(memory_stats(cuda()).reserved_bytes, after.allocated_bytes);
  reset_peak_memory_stats(cuda());
  EXPECT_EQ(memory_stats(cuda()).peak_allocated_bytes, after.allocated_bytes);
  test::expect_error([&] { memory_stats(parse_device("cuda:99")); }, "device", "cuda:99");
}

TEST_F(CudaOps, AutogradRunsOnGpuTensors) {
  Tensor w = randn({8, 4}).to(cuda()).requires_grad_();
  Tensor x = randn({16, 8}).to(cuda());
  Tensor loss = x.matmul(w).relu().sum();
  loss.backward();
  Tensor wc = w.detach().to(parse_device("cpu")).requires_grad_();
  Tensor xc = x.to(parse_device("cpu"));
  xc.matmul(wc).relu().sum().backward();
  expect_close(w.grad(), wc.grad(), 1e-4);
}

// autograd::SaveOnCpu: what backward needs waits in pinned host memory (the device holds
// only the parameters and the output meanwhile), and the gradient is the same.
TEST_F(CudaOps, SavedTensorsOffloadedToPinnedHostMemoryGiveTheSameGradient) {
  Tensor w = randn({256, 256}).to(cuda()).requires_grad_();
  Tensor x = randn({1024, 256}).to(cuda());
  auto gradient = [&](bool offload) {
    w.set_grad(Tensor());
    Tensor loss;
    {
      std::optional<autograd::SaveOnCpu> saved_on_cpu;
      if (offload) saved_on_cpu.emplace(/*pin_memory=*/true);
      loss = x.matmul(w).tanh().matmul(w).sum();
    }
    const int64_t pinned = pinned_memory_stats("cuda").allocated_bytes;
    if (offload) EXPECT_GE(pinned, 1024 * 256 * 4) << "the saved activations are in pinned memory";
    loss.backward();
    return w.grad().to(parse_device("cpu"));
  };
  expect_close(gradient(true), gradient(false), 1e-4);
}

TEST_F(CudaOps, ACnnTrainingStepMatchesTheCpu) {
  manual_seed(7);
  nn::Sequential cpu_net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(),
                         nn::MaxPool2d(2), nn::Flatten(), nn::Linear(4 * 7 * 7, 10));
  manual_seed(7);
  nn::Sequential gpu_net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(),
                         nn::MaxPool2d(2), nn::Flatten(), nn::Linear(4 * 7 * 7, 10));
  Tensor x = randn({8, 1, 14, 14}), y = randint(0, 10, {8});
  test::expect_training_matches_the_cpu(cpu_net, gpu_net, x, y, optim::AdamOptions(), 1e-5);
}

TEST_F(CudaOps, BadInputsGetClearErrors) {
  Tensor g = randn({4}).to(cuda());
  Tensor c = randn({4});
  test::expect_error([&] { (void)(g + c); }, "loom::add.Tensor", "device");
  test::expect_error([&] { (void)g.to(ScalarType::Float32).mm(g); }, "loom::mm", "2 dims");
  Tensor ints = arange(0, 6).to(ScalarType::Int32).to(cuda());
  test::expect_error(  // found by the kernel, raised at the next wait
      [&] {
        (void)ints.div(ints, "floor");
        synchronize(cuda());
      },
      "loom::div.Tensor_mode", "integer division by zero");
  test::expect_error(
      [&] {
        (void)ints.div(0, "trunc");  // the divisor by value
        synchronize(cuda());
      },
      "loom::div.Tensor_mode", "integer division by zero");
  test::expect_error([&] { (void)g.masked_fill(g > 0.0, 1.0).div(g, "round"); },
                     "loom::div.Tensor_mode", "rounding_mode");
}

}  // namespace
}  // namespace loom
