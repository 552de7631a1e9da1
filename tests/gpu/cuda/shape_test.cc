// The shape family on the CUDA plugin against the CPU.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

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

}  // namespace
}  // namespace loom
