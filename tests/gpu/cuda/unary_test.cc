// The unary family on the CUDA plugin: the parameterised ops against the CPU.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

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

}  // namespace
}  // namespace loom
