// The binary family on the CUDA plugin (with the unary ops around it): broadcasting,
// comparisons, float16, bfloat16 and integer arithmetic against the CPU.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

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

}  // namespace
}  // namespace loom
