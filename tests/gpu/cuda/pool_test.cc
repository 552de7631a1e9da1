// The pool family on the CUDA plugin: pooling and grid sampling against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

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

}  // namespace
}  // namespace loom
