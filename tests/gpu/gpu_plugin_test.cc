// The CUDA plugin end to end. Without a GPU (every CI machine): it loads, reports zero
// devices with the driver's reason, an optional manifest entry is skipped with that
// message, and allow_no_device registers its device type and kernels. With a GPU (the
// device tool): its kernels agree with the CPU plugin's (convolution, pooling and the
// loss included, and a CNN's training steps), random tensors equal the CPU's for the same
// seed, and the caching allocator reuses memory.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "../frontend/frontend_test_util.h"
#include "loom/dispatcher/manifest.h"
#include "loom/loom.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace loom {
namespace {

const std::string kPlugin = std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cuda.so";

// Loads the CUDA plugin with `entry_options` (unloaded first when loaded with others).
Runtime load_cuda(const std::string& entry_options) {
  test::unload_if_other_options("cuda", "path: \"" + kPlugin + "\" " + entry_options);
  std::string manifest = std::string("search_dirs: \"") + LOOM_PLUGIN_DIR + "\"\n" +
                         "plugins { name: \"cpu\" }\nplugins { name: \"autograd\" }\n" +
                         "plugins { path: \"" + kPlugin + "\" " + entry_options + " }\n";
  return Runtime::load(dispatch::parse_manifest(manifest, "<gpu test>"));
}

// Asked of the runtime directly: a loaded plugin stays loaded for the process, so the
// tests below must not depend on which of them loaded it first.
bool gpu_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

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

// --- with a GPU ---

// A GPU tensor's values against the CPU's, within tol relative (NaN where the CPU has NaN).
void expect_close(const Tensor& gpu, const Tensor& cpu, double tol) {
  std::vector<double> g = test::values(gpu.to(parse_device("cpu")).to(ScalarType::Float64));
  std::vector<double> c = test::values(cpu.to(ScalarType::Float64));
  ASSERT_EQ(g.size(), c.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(c[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << i;
    } else {
      EXPECT_NEAR(g[i], c[i], tol * (1 + std::fabs(c[i]))) << "element " << i;
    }
  }
}

// conv2d and its gradients on `gpu` against the CPU: groups, stride, padding, dilation,
// float32 and float64, a transposed and an unbatched input, float16 and bfloat16.
void expect_convolution_matches_the_cpu(Device gpu) {
  struct Case {
    std::vector<int64_t> stride, padding, dilation;  // owned: IntList only borrows
    int64_t groups;
  };
  const std::vector<Case> cases = {{{1, 1}, {1, 1}, {1, 1}, 1}, {{2, 1}, {0, 2}, {1, 2}, 2}};
  for (const Case& c : cases) {
    for (ScalarType dtype : {ScalarType::Float32, ScalarType::Float64}) {
      Tensor x = randn({3, 4, 11, 9}).to(dtype), w = randn({6, 4 / c.groups, 3, 3}).to(dtype);
      Tensor b = randn({6}).to(dtype);
      Tensor gx = x.to(gpu).requires_grad_(), gw = w.to(gpu).requires_grad_();
      Tensor gb = b.to(gpu).requires_grad_();
      Tensor cx = x.clone().requires_grad_(), cw = w.clone().requires_grad_();
      Tensor cb = b.clone().requires_grad_();
      Tensor gy = conv2d(gx, gw, gb, c.stride, c.padding, c.dilation, c.groups);
      Tensor cy = conv2d(cx, cw, cb, c.stride, c.padding, c.dilation, c.groups);
      const double tol = dtype == ScalarType::Float32 ? 1e-4 : 1e-10;
      expect_close(gy, cy, tol);
      Tensor g = randn(cy.sizes()).to(dtype);
      (gy * g.to(gpu)).sum().backward();
      (cy * g).sum().backward();
      expect_close(gx.grad(), cx.grad(), tol);
      expect_close(gw.grad(), cw.grad(), tol);
      expect_close(gb.grad(), cb.grad(), tol);
    }
  }
  // A transposed (non-contiguous) input and an unbatched one.
  Tensor x = randn({2, 3, 8, 8}), w = randn({5, 3, 3, 3});
  expect_close(conv2d(x.transpose(2, 3).to(gpu), w.to(gpu)), conv2d(x.transpose(2, 3), w), 1e-4);
  expect_close(conv2d(x.select(0, 0).to(gpu), w.to(gpu)), conv2d(x.select(0, 0), w), 1e-4);
  // float16 and bfloat16 (tensor cores on cuDNN), against the CPU in float32.
  for (ScalarType dtype : {ScalarType::Float16, ScalarType::BFloat16}) {
    Tensor y = conv2d(x.to(dtype).to(gpu), w.to(dtype).to(gpu));
    expect_close(y.to(ScalarType::Float32),
                 conv2d(x.to(dtype).to(ScalarType::Float32), w.to(dtype).to(ScalarType::Float32)),
                 dtype == ScalarType::Float16 ? 5e-3 : 3e-2);
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

// Note [Pinned staging]: an 800 KB batch copied from pageable host memory is staged, so
// the copy returns while a long product queued before it still runs (the runtime's own
// path would wait for it), and the batch arrives intact.
TEST_F(CudaOps, ACopyToTheDeviceDoesNotWaitForKernelsQueuedBeforeIt) {
  Tensor a = randn({8192, 8192}, TensorOptions().device(cuda()));
  Tensor batch = randn({256, 1, 28, 28});
  synchronize(cuda());
  Tensor product = a.mm(a);  // about 20 ms on an H100
  Tensor on_device = batch.to(cuda());
  const bool product_still_running = cudaStreamQuery(nullptr) == cudaErrorNotReady;
  EXPECT_TRUE(product_still_running) << "the copy waited for the product queued before it";
  expect_close(on_device, batch, 0);
}

// Note [Pinned host memory]: pinned tensors come from the plugin's cache; a non-blocking
// copy either way returns while a product queued before it still runs, and the host
// reads the copy back after synchronising. The pinned source is dropped at once: its
// block is held until the copy has run (Note [Caching pinned host blocks]).
//
// Note [No first use in a timed window]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// What is checked is the steady state, as in a training loop: the first use of a size
// may wait for the device for reasons of the driver's, not loom's. Pinning a new block
// (cudaHostAlloc; HIP's hipHostMalloc synchronises the device every time), a device
// segment from cudaMalloc, a kernel's lazy module load or the driver's first staging
// buffer for a pageable upload (the `* 2.0`) can each wait for the product, and in the
// full suite whether one happens depends on what earlier tests left cached. So the round
// trip runs once before the product is queued, and the window asserts its precondition:
// neither cache asked the driver for memory in it.
TEST_F(CudaOps, NonBlockingCopiesOfPinnedMemoryDoNotWait) {
  Tensor batch = randn({256, 1, 28, 28});
  Tensor pinned = batch.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(batch.is_pinned());
  expect_close(pinned, batch, 0);
  EXPECT_GE(pinned_memory_stats("cuda").allocated_bytes, 256 * 28 * 28 * 4);
  auto round_trip = [&] {
    Tensor on_device = batch.pin_memory().to(cuda(), /*non_blocking=*/true);
    Tensor back = empty({256, 1, 28, 28}, TensorOptions().pinned_memory(true));
    back.copy_(on_device * 2.0, /*non_blocking=*/true);
    return std::pair<Tensor, Tensor>(on_device, back);
  };
  {
    auto [on_device, back] = round_trip();  // caches what the window reuses
    synchronize(cuda());
    expect_close(back, batch * 2.0, 0);
  }
  Tensor a = randn({8192, 8192}, TensorOptions().device(cuda()));
  synchronize(cuda());
  Tensor product = a.mm(a);  // about 20 ms on an H100
  const MemoryStats pinned_before = pinned_memory_stats("cuda");
  const MemoryStats device_before = memory_stats(cuda());
  auto [on_device, back] = round_trip();
  const bool product_still_running = cudaStreamQuery(nullptr) == cudaErrorNotReady;
  EXPECT_EQ(pinned_memory_stats("cuda").driver_allocations, pinned_before.driver_allocations)
      << "the window pinned new memory (Note [No first use in a timed window])";
  EXPECT_EQ(memory_stats(cuda()).driver_allocations, device_before.driver_allocations)
      << "the window took a new device segment (Note [No first use in a timed window])";
  EXPECT_TRUE(product_still_running) << "a non-blocking copy waited for the product";
  synchronize(cuda());
  expect_close(back, batch * 2.0, 0);
  // a blocking copy into pinned memory waits
  Tensor again = empty({256, 1, 28, 28}, TensorOptions().pinned_memory(true));
  again.copy_(on_device);
  expect_close(again, batch, 0);
}

TEST_F(CudaOps, PointwiseOpsMatchTheCpu) {
  Tensor a = randn({33, 65}), b = randn({65});
  Tensor ga = a.to(cuda()), gb = b.to(cuda());
  expect_close(ga + gb * 2.0, a + b * 2.0, 1e-6);
  expect_close((ga / (gb.abs() + 1.0)).exp(), (a / (b.abs() + 1.0)).exp(), 1e-5);
  expect_close(ga.t().sigmoid(), a.t().sigmoid(), 1e-6);
  expect_close(ga.relu() - ga.tanh(), a.relu() - a.tanh(), 1e-6);
  expect_close((ga > gb).to(ScalarType::Float32), (a > b).to(ScalarType::Float32), 0);
  expect_close(ga.to(ScalarType::Float16).exp(), a.to(ScalarType::Float16).exp(),
               0);  // same bits, float16 rounding
  expect_close(ga.to(ScalarType::BFloat16) * 3.0, a.to(ScalarType::BFloat16) * 3.0, 0);
  Tensor i = arange(0, 100).to(ScalarType::Int64);
  expect_close(i.to(cuda()) * 7 % 5, i * 7 % 5, 0);
}

TEST_F(CudaOps, ReductionsAndSoftmaxMatchTheCpu) {
  Tensor a = randn({7, 300, 5});
  Tensor g = a.to(cuda());
  expect_close(g.sum(), a.sum(), 1e-5);
  expect_close(g.sum({1}), a.sum({1}), 1e-5);
  expect_close(g.sum({0, 2}, true), a.sum({0, 2}, true), 1e-5);
  expect_close(g.amax({1}), a.amax({1}), 0);
  expect_close(g.softmax(1), a.softmax(1), 1e-6);
  expect_close(g.log_softmax(-1), a.log_softmax(-1), 1e-6);
  Tensor ints = arange(0, 1000).to(ScalarType::Int32);
  expect_close(ints.to(cuda()).sum(), ints.sum(), 0);
}

TEST_F(CudaOps, LongReductionsSplitAndLongSoftmaxLinesMatchTheCpu) {
  Tensor a = randn({3, 70001});  // Note [Split reductions]: few long rows
  Tensor g = a.to(cuda());
  expect_close(g.sum(), a.sum(), 1e-4);
  expect_close(g.sum({1}), a.sum({1}), 1e-5);
  expect_close(g.amax(), a.amax(), 0);
  expect_close(g.softmax(1), a.softmax(1), 1e-6);  // lines too long for shared memory
  Tensor ints = arange(0, 200000).to(ScalarType::Int64);
  expect_close(ints.to(cuda()).sum(), ints.sum(), 0);
}

TEST_F(CudaOps, TernaryOpsAndRoundingDivisionMatchTheCpu) {
  Tensor a = randn({17, 33}), b = randn({33}), w = rand({17, 1});
  Tensor ga = a.to(cuda()), gb = b.to(cuda()), gw = w.to(cuda());
  expect_close(ga.masked_fill(ga > 0.5, -2.0), a.masked_fill(a > 0.5, -2.0), 0);
  expect_close(ga.lerp(gb, 0.3), a.lerp(b, 0.3), 1e-6);
  expect_close(ga.lerp(gb, gw), a.lerp(b, w), 1e-6);
  expect_close(ga.addcmul(gb, ga, 0.5), a.addcmul(b, a, 0.5), 1e-6);
  expect_close(ga.addcdiv(gb, ga.abs() + 1.0, 2.0), a.addcdiv(b, a.abs() + 1.0, 2.0), 1e-6);
  expect_close(ga.div(gb, "floor"), a.div(b, "floor"), 1e-6);
  expect_close(ga.div(gb, "trunc"), a.div(b, "trunc"), 1e-6);
  Tensor i = arange(-20, 20).to(ScalarType::Int32), d = full({40}, -3).to(ScalarType::Int32);
  expect_close(i.to(cuda()).div(d.to(cuda()), "floor"), i.div(d, "floor"), 0);
  expect_close(i.to(cuda()).div(d.to(cuda()), "trunc"), i.div(d, "trunc"), 0);
  expect_close(i.to(cuda()).addcmul(i.to(cuda()), d.to(cuda()), 2), i.addcmul(i, d, 2), 0);
}

TEST_F(CudaOps, ParameterisedUnaryOpsMatchTheCpu) {
  Tensor a = randn({100}) * 4.0;
  Tensor g = a.to(cuda());
  expect_close(g.elu(), a.elu(), 1e-6);
  expect_close(g.softplus(2.0, 5.0), a.softplus(2.0, 5.0), 1e-6);
  Tensor specials = (a / 0.0).to(cuda());  // +-inf, and nan for 0 / 0 if any
  expect_close(specials.nan_to_num(1.0, 2.0, -2.0), (a / 0.0).nan_to_num(1.0, 2.0, -2.0), 0);
  // Integer clamps with one bound: the other is the dtype's own limit.
  for (ScalarType t : {ScalarType::Int8, ScalarType::UInt8, ScalarType::Int64}) {
    Tensor x = arange(-5, 5).to(t);
    expect_close(x.to(cuda()).clamp_min(0), x.clamp_min(0), 0);
    expect_close(x.to(cuda()).clamp(Scalar(1), Scalar(3)), x.clamp(Scalar(1), Scalar(3)), 0);
  }
  expect_close(g.clamp(Scalar(std::nan("")), Scalar(1.0)),
               a.clamp(Scalar(std::nan("")), Scalar(1.0)), 0);
}

TEST_F(CudaOps, IndexingOpsMatchTheCpuAndRefuseIndicesOutOfRange) {
  Tensor a = randn({6, 9});
  Tensor g = a.to(cuda());
  Tensor rows = tensor({5, 0, 0, 3}).to(ScalarType::Int64);
  Tensor rows32 = rows.to(ScalarType::Int32);
  expect_close(g.index_select(0, rows.to(cuda())), a.index_select(0, rows), 0);
  expect_close(g.t().index_select(1, rows32.to(cuda())), a.t().index_select(1, rows32), 0);
  Tensor idx = randint(0, 9, {6, 4});
  expect_close(g.gather(1, idx.to(cuda())), a.gather(1, idx), 0);
  Tensor src = randn({6, 4});
  Tensor distinct = arange(0, 24).reshape({6, 4}) % 9;  // no repeats within a row
  expect_close(g.scatter(1, distinct.to(cuda()), src.to(cuda())), a.scatter(1, distinct, src), 0);
  expect_close(g.scatter(1, distinct.to(cuda()), 7.0), a.scatter(1, distinct, 7.0), 0);
  expect_close(g.scatter_add(1, idx.to(cuda()), src.to(cuda())), a.scatter_add(1, idx, src), 1e-6);
  Tensor bad = tensor({0, 6}).to(ScalarType::Int64);
  // Found by the kernel, raised at the next wait for the device as that op's error (Note
  // [Input errors found by kernels]); a copy to the host is such a wait, and its error
  // names the ops it ran in first.
  Tensor bad_on_gpu = bad.to(cuda());
  test::expect_error(
      [&] { (void)g.index_select(0, bad_on_gpu).to(parse_device("cpu")); }, "loom::to.device",
      {"[loom::index_select] index 6 is out of range for dim 0 of size 6", "found by its kernel"});
  Tensor bad_rows = tensor({0, 1, 9, 2}).reshape({2, 2}).to(ScalarType::Int64).to(cuda());
  Tensor after = g.gather(1, bad_rows.narrow(0, 0, 1));  // fine, queued before
  (void)g.scatter_add(0, bad_rows, g.narrow(0, 0, 2).narrow(1, 0, 2));
  Tensor fine = g.neg();  // queued after the bad launch: runs, not affected
  test::expect_error([] { synchronize(parse_device("cuda:0")); }, "loom::scatter_add",
                     "index 9 is out of range for dim 0 of size 6");
  synchronize(parse_device("cuda:0"));  // reported once
  expect_close(fine, a.neg(), 0);
  expect_close(after, a.gather(1, tensor({0, 1}).reshape({1, 2}).to(ScalarType::Int64)), 0);
}

// The shape ops as copy blocks (Note [Shape ops as copies]): cat with a transposed input
// and another dtype, flip, roll along dims and flattened (from a transposed self), repeat
// with new leading dims; tril and triu, also of a transposed batch.
TEST_F(CudaOps, ShapeOpsMatchTheCpu) {
  Tensor a = randn({4, 6}), b = randn({6, 4}).t(), c = randn({4, 2}).to(ScalarType::Float64);
  Tensor ga = a.to(cuda()), gb = b.to(cuda()), gc = c.to(cuda());
  expect_close(cat({ga, gb}, 0), cat({a, b}, 0), 0);
  expect_close(cat({ga, gc, gb}, 1), cat({a, c, b}, 1), 0);
  expect_close(cat({ga, empty({0}).to(cuda())}, 0), a, 0);  // the legacy empty tensor
  expect_close(flip(ga, {0}), flip(a, {0}), 0);
  expect_close(flip(gb, {0, -1}), flip(b, {0, -1}), 0);
  expect_close(roll(ga, {1, -2}, {0, 1}), roll(a, {1, -2}, {0, 1}), 0);
  expect_close(roll(gb, {5}), roll(b, {5}), 0);  // flattened, non-contiguous self
  expect_close(repeat(gb, {2, 1, 3}), repeat(b, {2, 1, 3}), 0);
  Tensor i = arange(0, 6).to(ScalarType::Int64).reshape({2, 3});
  expect_close(repeat(flip(i.to(cuda()), {1}), {2, 2}), repeat(flip(i, {1}), {2, 2}), 0);
  Tensor m = randn({2, 5, 4});
  for (int64_t diagonal : {-2, 0, 1}) {
    expect_close(tril(m.to(cuda()), diagonal), tril(m, diagonal), 0);
    expect_close(triu(m.to(cuda()).transpose(1, 2), diagonal), triu(m.transpose(1, 2), diagonal),
                 0);
  }
  expect_close(tril(i.to(cuda())), tril(i), 0);
}

// var by passes (Note [Variance by passes]): dims, keepdim, corrections, a transposed and a
// float16 input, float64, an empty reduction (NaN); and batch_norm's training statistics,
// a var_mean decomposition over it.
TEST_F(CudaOps, VarianceAndBatchNormStatisticsMatchTheCpu) {
  Tensor a = randn({6, 5, 7});
  Tensor g = a.to(cuda());
  expect_close(var(g), var(a), 1e-5);
  expect_close(var(g, std::vector<int64_t>{1}), var(a, std::vector<int64_t>{1}), 1e-5);
  expect_close(var(g, std::vector<int64_t>{0, 2}, Scalar(0), true),
               var(a, std::vector<int64_t>{0, 2}, Scalar(0), true), 1e-5);
  expect_close(var(g.transpose(0, 2), std::vector<int64_t>{-1}),
               var(a.transpose(0, 2), std::vector<int64_t>{-1}), 1e-5);
  expect_close(var(g.to(ScalarType::Float16), std::vector<int64_t>{2}),
               var(a.to(ScalarType::Float16), std::vector<int64_t>{2}), 2e-3);
  expect_close(var(g.to(ScalarType::Float64), std::vector<int64_t>{1}, Scalar(2.5)),
               var(a.to(ScalarType::Float64), std::vector<int64_t>{1}, Scalar(2.5)), 1e-12);
  expect_close(var(empty({3, 0}).to(cuda()), std::vector<int64_t>{1}),
               var(empty({3, 0}), std::vector<int64_t>{1}), 0);  // NaN on both
  Tensor x = randn({4, 3, 5, 5}), w = randn({3}), b = randn({3});
  expect_close(batch_norm(x.to(cuda()), w.to(cuda()), b.to(cuda()), std::nullopt, std::nullopt,
                          true, 0.1, 1e-5),
               batch_norm(x, w, b, std::nullopt, std::nullopt, true, 0.1, 1e-5), 1e-4);
}

// layer_norm by passes: output, mean and rstd, with and without weight and bias, over one
// and two normalized dims, float16 and a transposed input; and its gradients through the
// autograd formulas.
// The scans (one thread a line, in order) and sort/topk (Note [Bitonic sort]): exact
// values and indices beside the CPU's, NaN and ties included, along every dim, a line
// longer than a shared-memory chunk, and dtypes converted by cumsum.
TEST_F(CudaOps, ScansAndSortsMatchTheCpu) {
  Tensor a = (randn({7, 300, 5}) * 3.0).round();  // many ties
  a.select(0, 2).select(0, 7).select(0, 1).fill_(std::nan(""));
  Tensor g = a.to(cuda());
  for (int64_t dim : {0, 1, 2, -1}) {
    expect_close(g.cumsum(dim), a.cumsum(dim), 1e-12);
    expect_close(g.cumprod(dim), a.cumprod(dim), 1e-12);
    for (bool is_max : {true, false}) {
      auto [gv, gi] = is_max ? g.cummax(dim) : g.cummin(dim);
      auto [cv, ci] = is_max ? a.cummax(dim) : a.cummin(dim);
      expect_close(gv, cv, 0);
      expect_close(gi, ci, 0);
    }
    for (bool descending : {false, true}) {
      auto [gv, gi] = g.sort(dim, descending);
      auto [cv, ci] = a.sort(dim, descending);
      expect_close(gv, cv, 0);
      expect_close(gi, ci, 0);
    }
    auto [gv, gi] = g.topk(3, dim, /*largest=*/dim != 1);
    auto [cv, ci] = a.topk(3, dim, dim != 1);
    expect_close(gv, cv, 0);
    expect_close(gi, ci, 0);
  }
  Tensor ints = randint(-4, 5, {3, 40}).to(ScalarType::Int32);
  expect_close(ints.to(cuda()).cumsum(1), ints.cumsum(1), 0);  // to int64
  expect_close(ints.to(cuda()).cumsum(1, ScalarType::Float64), ints.cumsum(1, ScalarType::Float64),
               0);
  Tensor half = randn({4, 33}).to(ScalarType::BFloat16);
  expect_close(half.to(cuda()).cumsum(1), half.cumsum(1), 0);
  Tensor hv = std::get<0>(half.to(cuda()).sort(1)), hc = std::get<0>(half.sort(1));
  expect_close(hv, hc, 0);
  Tensor long_line = (randn({2, 5000}) * 50.0).round();  // global passes, then chunks
  auto [lv, li] = long_line.to(cuda()).sort(1, true);
  auto [cv, ci] = long_line.sort(1, true);
  expect_close(lv, cv, 0);
  expect_close(li, ci, 0);
  test::expect_error([&] { (void)g.topk(301, 1); }, "loom::topk", "expected k in [0, 300]");
}

// nonzero (two passes over chunks of 2048 elements; a tensor of several chunks, a
// transposed one, float16) and index.Tensor (int64 indices broadcast, negative ones, bool
// masks, adjacent and separated indexed dims, None): the CPU's results, and masked_select
// built on them; an index out of range at the next wait.
TEST_F(CudaOps, NonzeroAndAdvancedIndexingMatchTheCpu) {
  Tensor big = randn({3, 2000, 2}) > 0.5;
  expect_close(big.to(cuda()).nonzero(), big.nonzero(), 0);
  Tensor f = (randn({6, 5}) * 2.0).round();
  expect_close(f.to(cuda()).t().nonzero(), f.t().nonzero(), 0);
  Tensor h = f.to(ScalarType::Float16);
  expect_close(h.to(cuda()).nonzero(), h.nonzero(), 0);
  expect_close((f > 100.0).to(cuda()).nonzero(), (f > 100.0).nonzero(), 0);  // none
  expect_close(f.to(cuda()).masked_select(f.to(cuda()) > 0.0), f.masked_select(f > 0.0), 0);

  Tensor a = randn({4, 5, 6});
  Tensor g = a.to(cuda());
  Tensor rows = tensor({3, -1, 0}).to(ScalarType::Int64);
  Tensor cols = tensor({4, 2, 2, 0, 1, 3}).reshape({2, 3}).to(ScalarType::Int64);
  using Indices = std::vector<std::optional<Tensor>>;
  auto both = [&](const Indices& cpu_indices) {
    Indices gpu_indices;
    for (const auto& t : cpu_indices) {
      gpu_indices.push_back(t ? std::optional<Tensor>(t->to(cuda())) : std::nullopt);
    }
    expect_close(g.index(gpu_indices), a.index(cpu_indices), 0);
  };
  both({rows});
  both({rows, cols});                // adjacent, broadcast to [2, 3]
  both({std::nullopt, cols});        // after a None: in place
  both({rows, std::nullopt, rows});  // separated: B first
  both({a.select(2, 0) > 0.0});      // a mask over two dims
  both({std::nullopt, std::nullopt, tensor({5, 0}).to(ScalarType::Int64)});
  Tensor bad = tensor({0, 4}).to(ScalarType::Int64).to(cuda());
  test::expect_error(
      [&] {
        (void)g.index({bad});
        synchronize(cuda());
      },
      "loom::index.Tensor", "index 4 is out of range for dim 0 of size 4");
}

TEST_F(CudaOps, LayerNormMatchesTheCpu) {
  Tensor x = randn({6, 4, 8}), w = randn({8}), b = randn({8}), w2 = randn({4, 8});
  Tensor g = x.to(cuda());
  auto [out, mean, rstd] = native_layer_norm(g, {8}, w.to(cuda()), b.to(cuda()), 1e-5);
  auto [cpu_out, cpu_mean, cpu_rstd] = native_layer_norm(x, {8}, w, b, 1e-5);
  expect_close(out, cpu_out, 1e-5);
  expect_close(mean, cpu_mean, 1e-5);
  expect_close(rstd, cpu_rstd, 1e-5);
  expect_close(layer_norm(g, {4, 8}, w2.to(cuda())), layer_norm(x, {4, 8}, w2), 1e-5);
  expect_close(layer_norm(g.transpose(0, 2), {6}), layer_norm(x.transpose(0, 2), {6}), 1e-5);
  expect_close(layer_norm(g.to(ScalarType::Float16), {8}),
               layer_norm(x.to(ScalarType::Float16), {8}), 2e-3);
  Tensor leaf = g.clone().requires_grad_();
  layer_norm(leaf, {8}, w.to(cuda()), b.to(cuda())).sum().backward();
  Tensor cpu_leaf = x.clone().requires_grad_();
  layer_norm(cpu_leaf, {8}, w, b).sum().backward();
  expect_close(leaf.grad(), cpu_leaf.grad(), 1e-4);
}

// embedding through the gather kernel: int64 and int32 indices of any shape, a strided
// weight, the gradient (index_add), and an index out of range refused as on the CPU.
TEST_F(CudaOps, EmbeddingMatchesTheCpuAndRefusesIndicesOutOfRange) {
  Tensor w = randn({10, 6}), idx = randint(0, 10, {3, 4}).to(ScalarType::Int64);
  Tensor gw = w.to(cuda()), gi = idx.to(cuda());
  expect_close(embedding(gw, gi), embedding(w, idx), 0);
  expect_close(embedding(gw, gi.to(ScalarType::Int32)), embedding(w, idx.to(ScalarType::Int32)), 0);
  Tensor wt = randn({6, 10}).t();
  expect_close(embedding(wt.to(cuda()), gi), embedding(wt, idx), 0);
  Tensor leaf = gw.clone().requires_grad_();
  embedding(leaf, gi).sum().backward();
  Tensor cpu_leaf = w.clone().requires_grad_();
  embedding(cpu_leaf, idx).sum().backward();
  expect_close(leaf.grad(), cpu_leaf.grad(), 0);
  Tensor bad = tensor({1, 10}).to(ScalarType::Int64);
  Tensor bad_on_gpu = bad.to(cuda());
  test::expect_error(
      [&] {
        (void)embedding(gw, bad_on_gpu);
        synchronize(cuda());
      },
      "loom::embedding", "index 10 is out of range for a weight of 10 rows");
  // one_hot: inferred and given class counts; a class out of range at the next wait
  Tensor classes = tensor({3, 0, 2, 3, 1, 0}).reshape({2, 3}).to(ScalarType::Int64);
  expect_close(one_hot(classes.to(cuda())), one_hot(classes), 0);
  expect_close(one_hot(classes.t().to(cuda()), 6), one_hot(classes.t(), 6), 0);
  Tensor gpu_classes = classes.to(cuda());
  test::expect_error(
      [&] {
        (void)one_hot(gpu_classes, 3);
        synchronize(cuda());
      },
      "loom::one_hot", "class 3 is out of range for 3 classes");
}

// arange and linspace written on the device: the SDK's sequence, so the CPU's values.
TEST_F(CudaOps, ArangeAndLinspaceEqualTheCpus) {
  for (ScalarType dtype :
       {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64, ScalarType::BFloat16}) {
    TensorOptions on_gpu = TensorOptions().dtype(dtype).device(cuda());
    TensorOptions on_cpu = TensorOptions().dtype(dtype);
    expect_close(arange(-3, 17, 3, on_gpu), arange(-3, 17, 3, on_cpu), 0);
    expect_close(linspace(-1.5, 2.0, 9, on_gpu), linspace(-1.5, 2.0, 9, on_cpu), 0);
  }
  expect_close(arange(0.25, 4.0, 0.35, TensorOptions().device(cuda())), arange(0.25, 4.0, 0.35), 0);
  test::expect_error([&] { (void)arange(0, 5, 0, TensorOptions().device(cuda())); }, "arange",
                     "step must be nonzero");
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

TEST_F(CudaOps, MatmulMatchesTheCpu) {
  Tensor a = randn({64, 48}), b = randn({48, 80}), c = randn({80});
  expect_close(a.to(cuda()).matmul(b.to(cuda())), a.matmul(b), 1e-4);
  expect_close(a.t().to(cuda()).t().matmul(b.to(cuda())), a.matmul(b), 1e-4);
  expect_close(c.to(cuda()).addmm(a.to(cuda()), b.to(cuda())), c.addmm(a, b), 1e-4);
  Tensor x = randn({3, 16, 24}), y = randn({3, 24, 8});
  expect_close(x.to(cuda()).bmm(y.to(cuda())), x.bmm(y), 1e-4);
  Tensor u = randn({300}), v = randn({600});
  Tensor v2 = v.reshape({300, 2}).select(1, 0);  // strided
  expect_close(dot(u.to(cuda()), v2.to(cuda())), dot(u, v2), 1e-5);
  expect_close(dot(u.to(ScalarType::BFloat16).to(cuda()), u.to(ScalarType::BFloat16).to(cuda())),
               dot(u.to(ScalarType::BFloat16), u.to(ScalarType::BFloat16)), 1e-2);
  Tensor n = arange(0, 50).to(ScalarType::Int32);
  expect_close(dot(n.to(cuda()), n.to(cuda())), dot(n, n), 0);
  expect_close(a.to(ScalarType::BFloat16).to(cuda()).matmul(b.to(ScalarType::BFloat16).to(cuda())),
               a.to(ScalarType::BFloat16).matmul(b.to(ScalarType::BFloat16)), 2e-2);
}

// loom's own tiled GEMM (the ROCm plugin's matmul), chosen by the manifest's "gemm"
// option, against the CPU (and so against cuBLAS, which MatmulMatchesTheCpu checks).
TEST(CudaLoomGemm, MatchesTheCpuForEveryLayoutAndDtype) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (runs on a machine with a GPU)";
  Runtime runtime = load_cuda("options { key: \"gemm\" value: \"loom\" }");
  const Device cuda = parse_device("cuda:0");
  Tensor a = randn({67, 130}), b = randn({130, 71}), c = randn({71});
  expect_close(a.to(cuda).matmul(b.to(cuda)), a.matmul(b), 1e-4);
  expect_close(a.t().to(cuda).t().matmul(b.t().to(cuda).t()), a.matmul(b),
               1e-4);  // transposed views
  expect_close(c.to(cuda).addmm(a.to(cuda), b.to(cuda), 0.5, 2.0), c.addmm(a, b, 0.5, 2.0), 1e-4);
  Tensor x = randn({3, 33, 20}), y = randn({1, 20, 9});
  expect_close(x.to(cuda).matmul(y.to(cuda)), x.matmul(y), 1e-4);
  expect_close(a.to(ScalarType::Float64).to(cuda).matmul(b.to(ScalarType::Float64).to(cuda)),
               a.to(ScalarType::Float64).matmul(b.to(ScalarType::Float64)), 1e-12);
  Tensor ha = a.to(ScalarType::BFloat16), hb = b.to(ScalarType::BFloat16);
  expect_close(ha.to(cuda).matmul(hb.to(cuda)),
               ha.to(ScalarType::Float32).matmul(hb.to(ScalarType::Float32)), 2e-2);
}

TEST_F(CudaOps, RandomTensorsEqualTheCpusForTheSameSeed) {
  manual_seed(1234);
  Tensor cpu = rand({1000});
  Tensor cpu_normal = randn({999});
  manual_seed(1234);
  Tensor gpu = rand({1000}, TensorOptions().device(cuda()));
  Tensor gpu_normal = randn({999}, TensorOptions().device(cuda()));
  expect_close(gpu, cpu, 0);
  expect_close(gpu_normal, cpu_normal, 1e-6);
}

// bernoulli of a tensor, dropout, random_ over a range (randint) and randperm (its keys
// sorted by the sort kernel): the CPU's values for the same seed; a probability outside
// [0, 1] refused at the next wait.
TEST_F(CudaOps, RandomOpsOfTensorsAndIntegersEqualTheCpus) {
  Tensor p = rand({40, 7}), x = randn({40, 7});  // made before seeding
  auto draw = [](const Tensor& probs, const Tensor& in, Device dev) {
    manual_seed(99);
    std::vector<Tensor> r;
    r.push_back(probs.bernoulli());
    r.push_back(dropout(in, 0.3, true));
    r.push_back(randint(-5, 17, {300}, TensorOptions().device(dev)));
    r.push_back(randint(0, 100, {64}, TensorOptions().dtype(ScalarType::Float32).device(dev)));
    r.push_back(randperm(1000, TensorOptions().dtype(ScalarType::Int64).device(dev)));
    r.push_back(randperm(5, TensorOptions().dtype(ScalarType::Int32).device(dev)));
    return r;
  };
  const std::vector<Tensor> cpu = draw(p, x, parse_device("cpu"));
  const std::vector<Tensor> gpu = draw(p.to(cuda()), x.to(cuda()), cuda());
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(i);
    expect_close(gpu[i], cpu[i], 1e-6);
  }
  expect_close(dropout(x.to(cuda()), 0.3, false), x, 0);
  Tensor bad = (p * 2.0).to(cuda());
  test::expect_error(
      [&] {
        (void)bad.bernoulli();
        synchronize(cuda());
      },
      "loom::bernoulli", "expected probabilities in [0, 1]");
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

TEST_F(CudaOps, ConvolutionAndItsGradientsMatchTheCpu) {
  expect_convolution_matches_the_cpu(cuda());
}

// loom's implicit-GEMM convolution (the ROCm plugin's), chosen by the manifest's "conv"
// option, against the CPU and against cuDNN on a larger problem.
TEST(CudaLoomConv, MatchesTheCpuAndCudnn) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (runs on a machine with a GPU)";
  const Device gpu = parse_device("cuda:0");
  Tensor x = randn({4, 16, 30, 30}), w = randn({32, 16, 3, 3}), b = randn({32});
  Tensor vendor;
  {
    Runtime runtime = load_cuda("");
    vendor = conv2d(x.to(gpu), w.to(gpu), b.to(gpu), 2, 1).to(parse_device("cpu"));
  }
  Runtime runtime = load_cuda("options { key: \"conv\" value: \"loom\" }");
  expect_convolution_matches_the_cpu(gpu);
  expect_close(conv2d(x.to(gpu), w.to(gpu), b.to(gpu), 2, 1), vendor, 1e-4);
  // A first layer's weight gradient: its 50,176-term sum split over blocks (Note [Split
  // weight gradient]); in float64, so the two summation orders agree closely.
  Tensor images = randn({64, 1, 28, 28}).to(ScalarType::Float64);
  Tensor dy = randn({64, 32, 28, 28}).to(ScalarType::Float64);
  std::vector<int64_t> kernel = {32, 1, 3, 3}, one = {1, 1};
  expect_close(conv2d_backward_weight(dy.to(gpu), images.to(gpu), kernel, one, one, one, 1),
               conv2d_backward_weight(dy, images, kernel, one, one, one, 1), 1e-10);
}

TEST_F(CudaOps, PoolingMatchesTheCpu) {
  Tensor x = randn({2, 3, 13, 10});
  x.select(0, 0).select(0, 1).select(0, 2).select(0, 3).fill_(std::nan(""));  // wins its windows
  Tensor g = x.to(cuda());
  using Ints = std::vector<int64_t>;  // owned: IntList only borrows
  const std::vector<std::tuple<Ints, Ints, Ints, Ints>> windows = {
      {{2, 2}, {}, {0, 0}, {1, 1}},
      {{3, 2}, {2, 1}, {1, 1}, {1, 1}},
      {{3, 3}, {2, 2}, {1, 0}, {2, 1}}};
  for (const auto& [kernel, stride, padding, dilation] : windows) {
    auto [gv, gi] = g.max_pool2d_with_indices(kernel, stride, padding, dilation);
    auto [cv, ci] = x.max_pool2d_with_indices(kernel, stride, padding, dilation);
    expect_close(gv, cv, 0);
    expect_close(gi, ci, 0);
  }
  expect_close(g.avg_pool2d({3, 3}, {2, 2}, {1, 1}), x.avg_pool2d({3, 3}, {2, 2}, {1, 1}), 1e-6);
  expect_close(g.avg_pool2d({3, 2}, {2, 2}, {1, 1}, false, false),
               x.avg_pool2d({3, 2}, {2, 2}, {1, 1}, false, false), 1e-6);
  expect_close(g.avg_pool2d({2, 2}, {}, {0, 0}, false, true, 3),
               x.avg_pool2d({2, 2}, {}, {0, 0}, false, true, 3), 1e-6);
  expect_close(g.adaptive_avg_pool2d({4, 3}), x.adaptive_avg_pool2d({4, 3}), 1e-6);
  auto [av, ai] = g.adaptive_max_pool2d({5, 4});
  auto [cav, cai] = x.adaptive_max_pool2d({5, 4});
  expect_close(av, cav, 0);
  expect_close(ai, cai, 0);
  // max_pool2d's gradient on the GPU, through its indices.
  Tensor gx = x.abs().to(cuda()).requires_grad_(), cx = x.abs().requires_grad_();
  std::get<0>(gx.max_pool2d_with_indices({2, 2})).sum().backward();
  std::get<0>(cx.max_pool2d_with_indices({2, 2})).sum().backward();
  expect_close(gx.grad(), cx.grad(), 0);
}

// grid_sampler_2d and its gradients (the SDK's Note [Grid sampling] arithmetic on both
// sides) for every interpolation and padding mode, with and without align_corners,
// points outside the input included.
TEST_F(CudaOps, GridSamplingAndItsGradientsMatchTheCpu) {
  Tensor input = randn({2, 3, 5, 7});
  Tensor grid = rand({2, 4, 6, 2}) * 2.4 - 1.2;
  for (int64_t interpolation : {0, 1, 2}) {
    for (int64_t padding : {0, 1, 2}) {
      for (bool align_corners : {false, true}) {
        SCOPED_TRACE(std::to_string(interpolation) + " " + std::to_string(padding) + " " +
                     std::to_string(align_corners));
        Tensor gi = input.to(cuda()).requires_grad_(), gg = grid.to(cuda()).requires_grad_();
        Tensor ci = input.clone().requires_grad_(), cg = grid.clone().requires_grad_();
        Tensor gout = grid_sampler_2d(gi, gg, interpolation, padding, align_corners);
        Tensor cout = grid_sampler_2d(ci, cg, interpolation, padding, align_corners);
        expect_close(gout, cout, 1e-5);
        (gout * gout).sum().backward();
        (cout * cout).sum().backward();
        expect_close(gi.grad(), ci.grad(), 1e-4);
        expect_close(gg.grad(), cg.grad(), 1e-4);
      }
    }
  }
}

TEST_F(CudaOps, NllLossAndArgmaxMatchTheCpuAndRefuseBadTargets) {
  Tensor logp = randn({9, 5}).log_softmax(1), weight = rand({5}) + 0.5;
  Tensor target = tensor({0, 4, 2, 2, -100, 1, 3, 4, 0}).to(ScalarType::Int64);
  Tensor g = logp.to(cuda()), gt = target.to(cuda()), gw = weight.to(cuda());
  for (int64_t reduction : {0, 1, 2}) {
    expect_close(g.nll_loss(gt, gw, reduction), logp.nll_loss(target, weight, reduction), 1e-6);
    expect_close(g.nll_loss(gt, std::nullopt, reduction),
                 logp.nll_loss(target, std::nullopt, reduction), 1e-6);
  }
  Tensor spatial = randn({2, 3, 4, 5}).log_softmax(1), st = randint(0, 3, {2, 4, 5});
  expect_close(spatial.to(cuda()).nll_loss(st.to(cuda())), spatial.nll_loss(st), 1e-6);
  Tensor bad_target = full({9}, 5).to(ScalarType::Int64).to(cuda());
  test::expect_error(
      [&] {
        (void)g.nll_loss(bad_target);
        synchronize(cuda());
      },
      "loom::nll_loss", "target 5 is out of bounds for 5 classes");

  Tensor a = randn({7, 40, 3});
  a.select(0, 2).select(0, 7).select(0, 1).fill_(std::nan(""));
  Tensor ga = a.to(cuda());
  for (int64_t dim : {0, 1, 2}) {
    auto [gv, gi] = max(ga, dim);
    auto [cv, ci] = max(a, dim);
    expect_close(gv, cv, 0);
    expect_close(gi, ci, 0);
    auto [gmv, gmi] = min(ga, dim, true);
    auto [cmv, cmi] = min(a, dim, true);
    expect_close(gmv, cmv, 0);
    expect_close(gmi, cmi, 0);
  }
  Tensor ties = tensor({1, 3, 3, 2, 3}).to(ScalarType::Int32);
  expect_close(ties.to(cuda()).argmax(), ties.argmax(), 0);  // the first of equal maxima
}

TEST_F(CudaOps, ACnnTrainingStepMatchesTheCpu) {
  manual_seed(7);
  nn::Sequential cpu_net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(),
                         nn::MaxPool2d(2), nn::Flatten(), nn::Linear(4 * 7 * 7, 10));
  manual_seed(7);
  nn::Sequential gpu_net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(),
                         nn::MaxPool2d(2), nn::Flatten(), nn::Linear(4 * 7 * 7, 10));
  gpu_net->to("cuda:0");
  Tensor x = randn({8, 1, 14, 14}), y = randint(0, 10, {8});
  optim::Adam cpu_adam(cpu_net->parameters(), optim::AdamOptions(1e-2));
  optim::Adam gpu_adam(gpu_net->parameters(), optim::AdamOptions(1e-2));
  nn::CrossEntropyLoss criterion;
  for (int step = 0; step < 3; ++step) {
    cpu_adam.zero_grad();
    gpu_adam.zero_grad();
    Tensor cpu_loss = criterion(cpu_net(x), y);
    Tensor gpu_loss = criterion(gpu_net(x.to(cuda())), y.to(cuda()));
    expect_close(gpu_loss, cpu_loss, 1e-5);
    cpu_loss.backward();
    gpu_loss.backward();
    cpu_adam.step();
    gpu_adam.step();
  }
  std::vector<Tensor> cpu_params = cpu_net->parameters(), gpu_params = gpu_net->parameters();
  ASSERT_EQ(cpu_params.size(), gpu_params.size());
  for (size_t i = 0; i < cpu_params.size(); ++i) expect_close(gpu_params[i], cpu_params[i], 1e-4);
}

TEST_F(CudaOps, BadInputsGetClearErrors) {
  Tensor g = randn({4}).to(cuda());
  Tensor c = randn({4});
  test::expect_error([&] { (void)(g + c); }, "loom::add.Tensor", "device");
  test::expect_error([&] { (void)g.to(ScalarType::Float32).mm(g); }, "loom::mm", "2 dims");
  Tensor ints = arange(0, 6).to(ScalarType::Int32).to(cuda());
  test::expect_error([&] { (void)ints.div(ints, "floor"); }, "loom::div.Tensor_mode",
                     "integer division by zero");
  test::expect_error([&] { (void)g.masked_fill(g > 0.0, 1.0).div(g, "round"); },
                     "loom::div.Tensor_mode", "rounding_mode");
}

}  // namespace
}  // namespace loom
