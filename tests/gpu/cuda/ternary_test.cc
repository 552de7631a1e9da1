// The ternary family on the CUDA plugin, and division with a rounding mode.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

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

}  // namespace
}  // namespace loom
