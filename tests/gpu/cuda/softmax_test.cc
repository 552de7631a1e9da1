// The softmax family on the CUDA plugin against the CPU, lines short and too long for
// shared memory.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

TEST_F(CudaOps, SoftmaxMatchesTheCpu) {
  Tensor a = randn({7, 300, 5});
  Tensor g = a.to(cuda());
  expect_close(g.softmax(1), a.softmax(1), 1e-6);
  expect_close(g.log_softmax(-1), a.log_softmax(-1), 1e-6);
  Tensor long_lines = randn({3, 70001});
  expect_close(long_lines.to(cuda()).softmax(1), long_lines.softmax(1), 1e-6);
}

}  // namespace
}  // namespace loom
