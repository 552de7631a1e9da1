// loom::compile on CUDA tensors: fused kernels generated as CUDA C++, built by NVRTC and
// launched on the caller's stream, against eager code on the CPU.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "loom/compile.h"

namespace loom {
namespace {

using test::expect_close;
using test::gpu_present;

class CudaCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (runs on a machine with a GPU)";
    test::unload_if_other_options("cuda", "path: \"" + test::kPlugin + "\"");
    runtime_.emplace(Runtime::load(dispatch::parse_manifest(
        std::string("search_dirs: \"") + LOOM_PLUGIN_DIR +
            "\"\nplugins { name: \"cpu\" }\nplugins { name: \"autograd\" }\n"
            "plugins { name: \"compiler\" }\nplugins { path: \"" +
            test::kPlugin + "\" }\n",
        "<cuda compile test>")));
  }
  Device cuda() const { return parse_device("cuda:0"); }
  std::optional<Runtime> runtime_;
};

Tensor chain(const Tensor& x, const Tensor& y) {
  return ((x * 2 + 1).sin().exp().tanh() * y + x).relu().sigmoid();
}

TEST_F(CudaCompile, APointwiseChainRunsAsOneCudaKernel) {
  Tensor x = randn({1 << 20}), y = randn({1 << 20});
  auto f = compile(chain);
  Tensor gx = x.to(cuda()), gy = y.to(cuda());
  f(gx, gy);
  for (int i = 0; i < 2; ++i) expect_close(f(gx, gy), chain(x, y), 1e-5);
  EXPECT_EQ(f.explanation().kernels, 1) << f.explanation().graph;
}

TEST_F(CudaCompile, BroadcastsScalarsAndInPlaceWritesOnTheGpu) {
  Tensor held = randn({64, 32}).to(cuda());
  Tensor want = held.to(parse_device("cpu"));
  Tensor row = randn({32}), column = randn({64, 1}).t().t();
  auto f = compile([&](const Tensor& r, const Tensor& c) {
    held.mul_(0.5).add_(r);
    return where(held > 0, held * c + 2, c.expand({64, 32}) * 0);
  });
  Tensor gr = row.to(cuda()), gc = column.to(cuda());
  for (int i = 0; i < 3; ++i) {
    Tensor got = f(gr, gc);
    want = want * 0.5 + row;
    expect_close(held, want, 1e-5);
    expect_close(got, where(want > 0, want * column + 2, column.expand({64, 32}) * 0), 1e-5);
  }
  EXPECT_GE(f.explanation().kernels, 1) << f.explanation().graph;
}

}  // namespace
}  // namespace loom
