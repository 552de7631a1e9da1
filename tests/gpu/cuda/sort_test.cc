// The sort family on the CUDA plugin against the CPU: ties, NaN, every dim, bfloat16,
// a line long enough for the global passes.
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
// The scans (one thread a line, in order) and sort/topk (Note [Bitonic sort]): exact
// values and indices beside the CPU's, NaN and ties included, along every dim, a line
// longer than a shared-memory chunk, and dtypes converted by cumsum.
TEST_F(CudaOps, SortsMatchTheCpu) {
  Tensor a = test::ties_with_nan();
  Tensor g = a.to(cuda());
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool descending : {false, true}) {
      auto [gv, gi] = g.sort(dim, descending);
      auto [cv, ci] = a.sort(dim, descending);
      expect_close(gv, cv, 0);
      expect_close(gi, ci, 0);
    }
    auto [gv, gi] = g.topk(3, dim, /*largest=*/dim != 1);
    auto [cv, ci] = a.topk(3, dim, dim != 1);
    expect_close(gv, cv, 0);
    expect_close(gi, ci, 0);
  }
  Tensor half = randn({4, 33}).to(ScalarType::BFloat16);
  Tensor hv = std::get<0>(half.to(cuda()).sort(1)), hc = std::get<0>(half.sort(1));
  expect_close(hv, hc, 0);
  Tensor long_line = (randn({2, 5000}) * 50.0).round();  // global passes, then chunks
  auto [lv, li] = long_line.to(cuda()).sort(1, true);
  auto [cv, ci] = long_line.sort(1, true);
  expect_close(lv, cv, 0);
  expect_close(li, ci, 0);
  test::expect_error([&] { (void)g.topk(301, 1); }, "loom::topk", "expected k in [0, 300]");
}

}  // namespace
}  // namespace loom
