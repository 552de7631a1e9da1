// The binary family on the CUDA plugin (with the unary ops around it): broadcasting,
// comparisons, float16, bfloat16, integer arithmetic and integer pow against the CPU.
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
  // Integer pow, as the CPU's: wrapping powers, and for negative exponents 1, +-1 or 0.
  for (ScalarType dt : {ScalarType::Int8, ScalarType::Int16, ScalarType::Int32, ScalarType::Int64,
                        ScalarType::UInt8}) {
    Tensor base = (arange(0, 60) % 7 - (dt == ScalarType::UInt8 ? 0 : 3)).to(dt);
    Tensor exponent = (arange(0, 60) % 11 - (dt == ScalarType::UInt8 ? 0 : 3)).to(dt);
    expect_close(pow(base.to(cuda()), exponent.to(cuda())), pow(base, exponent), 0);
  }
  Tensor truth = arange(0, 4).remainder(2).to(ScalarType::Bool);
  expect_close(pow(truth.to(cuda()), truth.flip({0}).to(cuda())), pow(truth, truth.flip({0})), 0);
}

// Numbers reach the kernels by value (Note [Host scalars by value]): on either side, as a
// where condition or branch, through dense (vectorised) and strided launches, in every
// dtype class.
TEST_F(CudaOps, HostScalarsAreReadByValue) {
  Tensor a = randn({7, 33});
  Tensor ga = a.to(cuda());
  auto number = [](double v, ScalarType t) { return scalar_tensor(v, TensorOptions().dtype(t)); };
  expect_close(ga * 2.5, a * 2.5, 0);
  expect_close(number(3.0, ScalarType::Float64) - ga, number(3.0, ScalarType::Float64) - a, 0);
  expect_close(ga.t() / 4.0, a.t() / 4.0, 0);  // strided
  expect_close(ga.to(ScalarType::Float16) + 1.0, a.to(ScalarType::Float16) + 1.0, 0);
  expect_close(ga.to(ScalarType::BFloat16) * 0.5, a.to(ScalarType::BFloat16) * 0.5, 0);
  Tensor zero = number(0.0, ScalarType::Float64);
  expect_close(where(ga > 0.0, ga, zero), where(a > 0.0, a, zero), 0);
  Tensor yes = scalar_tensor(true, TensorOptions().dtype(ScalarType::Bool));
  expect_close(where(yes, zero, ga), where(yes, zero, a), 0);
  expect_close(ga.masked_fill(ga < 0.0, 7.0), a.masked_fill(a < 0.0, 7.0), 0);
  expect_close(lerp(ga, zero, 0.25), lerp(a, zero, 0.25), 1e-6);
  Tensor i = arange(-20, 20).to(ScalarType::Int32);
  expect_close(i.to(cuda()).div(3, "floor"), i.div(3, "floor"), 0);
  expect_close(i.to(cuda()) * 3 - 1, i * 3 - 1, 0);
  expect_close(logical_and(i.to(cuda()) > 0, yes), logical_and(i > 0, yes), 0);
}

}  // namespace
}  // namespace loom
