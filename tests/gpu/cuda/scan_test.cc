// The scan family on the CUDA plugin against the CPU: ties, NaN, every dim, integer and
// bfloat16 inputs.
#include <gtest/gtest.h>

#include <tuple>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

// layer_norm by passes: output, mean and rstd, with and without weight and bias, over one
// and two normalized dims, float16 and a transposed input; and its gradients through the
// autograd formulas.
// The scans (a thread a short line, a block a long one) and sort/topk (Note [Bitonic sort]): exact
// values and indices beside the CPU's, NaN and ties included, along every dim, a line
// longer than a shared-memory chunk, and dtypes converted by cumsum.
TEST_F(CudaOps, ScansMatchTheCpu) {
  Tensor a = test::ties_with_nan();
  Tensor g = a.to(cuda());
  for (int64_t dim : {0, 1, 2, -1}) {
    expect_close(g.cumsum(dim), a.cumsum(dim), 1e-12);
    expect_close(g.cumprod(dim), a.cumprod(dim), 1e-12);
    for (bool is_max : {true, false}) {
      auto [gv, gi] = is_max ? g.cummax(dim) : g.cummin(dim);
      auto [cv, ci] = is_max ? a.cummax(dim) : a.cummin(dim);
      expect_close(gv, cv, 0);
      expect_close(gi, ci, 0);
    }
  }
  Tensor ints = randint(-4, 5, {3, 40}).to(ScalarType::Int32);
  expect_close(ints.to(cuda()).cumsum(1), ints.cumsum(1), 0);  // to int64
  expect_close(ints.to(cuda()).cumsum(1, ScalarType::Float64), ints.cumsum(1, ScalarType::Float64),
               0);
  Tensor half = randn({4, 33}).to(ScalarType::BFloat16);
  expect_close(half.to(cuda()).cumsum(1), half.cumsum(1), 0);
}

// Lines past kScanSerialLength are scanned by a block each (Note [Block scans]): several
// tiles a line, a partial last tile, strided lines, ties and NaN in the running extremes.
TEST_F(CudaOps, LongLinesScanByBlockAndMatchTheCpu) {
  for (int64_t length : {257, 1024, 3001, 100000}) {
    Tensor a = (randn({3, length}) * 3.0).round();
    a.select(0, 1).select(0, length / 2).fill_(std::nan(""));
    Tensor g = a.to(cuda());
    expect_close(g.cumsum(1), a.cumsum(1), 1e-9);
    expect_close(g.t().cumsum(0), a.t().cumsum(0), 1e-9);  // lines strided in memory
    for (bool is_max : {true, false}) {
      auto [gv, gi] = is_max ? g.cummax(1) : g.cummin(1);
      auto [cv, ci] = is_max ? a.cummax(1) : a.cummin(1);
      expect_close(gv, cv, 0);
      expect_close(gi, ci, 0);
    }
    Tensor small = randn({2, length}) * 0.001 + 1.0;
    expect_close(small.to(cuda()).cumprod(1), small.cumprod(1), 1e-6);  // float32 rounding
    Tensor ints = randint(-4, 5, {2, length}).to(ScalarType::Int64);
    expect_close(ints.to(cuda()).cumsum(1), ints.cumsum(1), 0);
  }
}

}  // namespace
}  // namespace loom
