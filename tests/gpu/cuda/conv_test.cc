// The conv family on the CUDA plugin: cuDNN's and loom's convolutions and their
// gradients against the CPU.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;
using test::gpu_present;
using test::load_cuda;

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
  // float16 and bfloat16 (tensor cores), against the CPU in float32: 27-element weight rows,
  // and 72-element ones that loom's kernels read in 16-byte runs (Note [Vector operand
  // loads])
  Tensor wide_x = randn({2, 8, 9, 10}), wide_w = randn({6, 8, 3, 3});
  for (ScalarType dtype : {ScalarType::Float16, ScalarType::BFloat16}) {
    const double tol = dtype == ScalarType::Float16 ? 5e-3 : 3e-2;
    auto in_float = [&](const Tensor& t) { return t.to(dtype).to(ScalarType::Float32); };
    Tensor y = conv2d(x.to(dtype).to(gpu), w.to(dtype).to(gpu));
    expect_close(y.to(ScalarType::Float32), conv2d(in_float(x), in_float(w)), tol);
    Tensor wide_y = conv2d(wide_x.to(dtype).to(gpu), wide_w.to(dtype).to(gpu), std::nullopt, 1, 1);
    expect_close(wide_y.to(ScalarType::Float32),
                 conv2d(in_float(wide_x), in_float(wide_w), std::nullopt, 1, 1), tol);
  }
}

TEST_F(CudaOps, ConvolutionAndItsGradientsMatchTheCpu) {
  expect_convolution_matches_the_cpu(cuda());
}

// loom's implicit-GEMM convolution (the ROCm plugin's), chosen by the manifest's "conv"
// option, against the CPU and against cuDNN on a larger problem.
// Note [cuDNN graph plans]: the graph API's cached plans ("cudnn": "graph" raises any
// refusal instead of taking the legacy plan) give what the legacy calls give, for each
// pass, with bias, stride, dilation and groups, in float32 and float16.
TEST(CudaCudnnGraph, PlansMatchTheLegacyCalls) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (runs on a machine with a GPU)";
#if defined(LOOM_GPU_EMULATED_TESTS)
  GTEST_SKIP() << "cuDNN's plans: the emulated plugin convolves on loom's kernels";
#endif
  std::vector<int64_t> kernel = {12, 3, 3, 3}, stride = {2, 1}, padding = {1, 2}, dilation = {1, 2};
  Tensor x, w, b;
  auto passes = [&](ScalarType dtype) {
    const Device gpu = parse_device("cuda:0"), cpu = parse_device("cpu");  // once loaded
    if (!x.defined()) x = randn({3, 6, 17, 15}), w = randn({12, 3, 3, 3}), b = randn({12});
    const Tensor xg = x.to(dtype).to(gpu), wg = w.to(dtype).to(gpu), bg = b.to(dtype).to(gpu);
    Tensor y = conv2d(xg, wg, bg, stride, padding, dilation, 2);
    Tensor dy = y.detach().clone();
    return std::vector<Tensor>{
        y.to(cpu), conv2d_backward_input(dy, wg, x.sizes(), stride, padding, dilation, 2).to(cpu),
        conv2d_backward_weight(dy, xg, kernel, stride, padding, dilation, 2).to(cpu)};
  };
  for (const ScalarType dtype : {ScalarType::Float32, ScalarType::Float16}) {
    std::vector<Tensor> legacy, graph;
    {
      Runtime runtime = load_cuda("options { key: \"cudnn\" value: \"legacy\" }");
      legacy = passes(dtype);
    }
    {
      Runtime runtime = load_cuda("options { key: \"cudnn\" value: \"graph\" }");
      graph = passes(dtype);
      graph = passes(dtype);  // the second call runs the cached plan
    }
    const double tol = dtype == ScalarType::Float32 ? 1e-4 : 2e-2;
    for (size_t i = 0; i < legacy.size(); ++i) {
      SCOPED_TRACE(testing::Message() << "pass " << i);
      expect_close(graph[i].to(ScalarType::Float32), legacy[i].to(ScalarType::Float32), tol);
    }
  }
}

TEST(CudaLoomConv, MatchesTheCpuAndCudnn) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (runs on a machine with a GPU)";
  Tensor x, w, b, vendor;
  {
    Runtime runtime = load_cuda("");
    const Device gpu = parse_device("cuda:0");  // known once the plugin is loaded
    x = randn({4, 16, 30, 30}), w = randn({32, 16, 3, 3}), b = randn({32});
    vendor = conv2d(x.to(gpu), w.to(gpu), b.to(gpu), 2, 1).to(parse_device("cpu"));
  }
  Runtime runtime = load_cuda("options { key: \"conv\" value: \"loom\" }");
  const Device gpu = parse_device("cuda:0");
  expect_convolution_matches_the_cpu(gpu);
  expect_close(conv2d(x.to(gpu), w.to(gpu), b.to(gpu), 2, 1), vendor, 1e-4);
  // 128 output channels over 64 x 64 planes of 8 images: 256 tiles of 128 x 128, the large
  // tile (Note [Tiled GEMM]) on the 32-bit matrices (Note [32-bit convolution addressing])
  Tensor wide_x = randn({8, 8, 64, 64}), wide_w = randn({128, 8, 3, 3});
  {
    Tensor want = conv2d(wide_x, wide_w, std::nullopt, 1, 1);
    expect_close(conv2d(wide_x.to(gpu), wide_w.to(gpu), std::nullopt, 1, 1), want, 1e-3);
  }
  // A first layer's weight gradient: its 50,176-term sum split over blocks (Note [Split
  // weight gradient]); in float64, so the two summation orders agree closely.
  Tensor images = randn({64, 1, 28, 28}).to(ScalarType::Float64);
  Tensor dy = randn({64, 32, 28, 28}).to(ScalarType::Float64);
  std::vector<int64_t> kernel = {32, 1, 3, 3}, one = {1, 1};
  expect_close(conv2d_backward_weight(dy.to(gpu), images.to(gpu), kernel, one, one, one, 1),
               conv2d_backward_weight(dy, images, kernel, one, one, one, 1), 1e-10);
}

}  // namespace
}  // namespace loom
