// The loss family on the CUDA plugin: nll_loss against the CPU and bad targets (with
// argmax's ties).
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

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

}  // namespace
}  // namespace loom
