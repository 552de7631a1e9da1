// The reduction family on the CUDA plugin: sums and extrema, split reductions (Note
// [Split reductions]) and variance against the CPU.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

TEST_F(CudaOps, ReductionsMatchTheCpu) {
  Tensor a = randn({7, 300, 5});
  Tensor g = a.to(cuda());
  expect_close(g.sum(), a.sum(), 1e-5);
  expect_close(g.sum({1}), a.sum({1}), 1e-5);
  expect_close(g.sum({0, 2}, true), a.sum({0, 2}, true), 1e-5);
  expect_close(g.amax({1}), a.amax({1}), 0);
  Tensor ints = arange(0, 1000).to(ScalarType::Int32);
  expect_close(ints.to(cuda()).sum(), ints.sum(), 0);
}

TEST_F(CudaOps, LongReductionsSplitAndMatchTheCpu) {
  Tensor a = randn({3, 70001});  // Note [Split reductions]: few long rows
  Tensor g = a.to(cuda());
  expect_close(g.sum(), a.sum(), 1e-4);
  expect_close(g.sum({1}), a.sum({1}), 1e-5);
  expect_close(g.amax(), a.amax(), 0);
  Tensor ints = arange(0, 200000).to(ScalarType::Int64);
  expect_close(ints.to(cuda()).sum(), ints.sum(), 0);
}

// The layouts of Note [Reduction layout]: dense rows read as vectors (aligned and not, a
// row length no vector divides), columns (Note [Reductions over outer dims]) with and without a
// split over grid.y, and the warp-shuffle combines of short and long rows.
TEST_F(CudaOps, RowAndColumnLayoutsMatchTheCpu) {
  for (auto shape : {std::vector<int64_t>{64, 4096}, std::vector<int64_t>{33, 1001},
                     std::vector<int64_t>{4096, 64}, std::vector<int64_t>{70001, 40},
                     std::vector<int64_t>{5, 3}}) {
    Tensor a = randn(shape);
    Tensor g = a.to(cuda());
    for (int64_t dim : {0, 1}) {
      expect_close(g.sum({dim}), a.sum({dim}), 1e-4);
      expect_close(g.amax({dim}), a.amax({dim}), 0);
      expect_close(g.amin({dim}), a.amin({dim}), 0);
    }
    expect_close(g.sum(), a.sum(), 1e-3);
    // an input that starts one element into its storage: no row is 16-byte aligned
    Tensor offset = randn({shape[0] * shape[1] + 1});
    Tensor view = offset.narrow(0, 1, shape[0] * shape[1]).view(shape);
    expect_close(offset.to(cuda()).narrow(0, 1, shape[0] * shape[1]).view(shape).sum({1}),
                 view.sum({1}), 1e-4);
  }
  Tensor nan = randn({64, 300});
  nan.select(0, 5).select(0, 200).fill_(std::nan(""));
  expect_close(nan.to(cuda()).amax({0}), nan.amax({0}), 0);  // NaN through a column
  Tensor ints = randint(-50, 50, {3000, 64}).to(ScalarType::Int32);
  expect_close(ints.to(cuda()).sum({0}), ints.sum({0}), 0);
  Tensor flags = randn({300, 64}) > 2.5;
  expect_close(flags.to(cuda()).any({0}).to(ScalarType::Float32),
               flags.any({0}).to(ScalarType::Float32), 0);
  expect_close(flags.to(cuda()).all({1}).to(ScalarType::Float32),
               flags.all({1}).to(ScalarType::Float32), 0);
}

// var by passes (Note [Variance by passes]): dims, keepdim, corrections, a transposed and a
// float16 input, float64, an empty reduction (NaN); and batch_norm's training statistics,
// a var_mean decomposition over it.
TEST_F(CudaOps, VarianceAndBatchNormStatisticsMatchTheCpu) {
  Tensor a = randn({6, 5, 7});
  Tensor g = a.to(cuda());
  expect_close(var(g), var(a), 1e-5);
  expect_close(var(g, std::vector<int64_t>{1}), var(a, std::vector<int64_t>{1}), 1e-5);
  expect_close(var(g, std::vector<int64_t>{0, 2}, Scalar(0), true),
               var(a, std::vector<int64_t>{0, 2}, Scalar(0), true), 1e-5);
  expect_close(var(g.transpose(0, 2), std::vector<int64_t>{-1}),
               var(a.transpose(0, 2), std::vector<int64_t>{-1}), 1e-5);
  expect_close(var(g.to(ScalarType::Float16), std::vector<int64_t>{2}),
               var(a.to(ScalarType::Float16), std::vector<int64_t>{2}), 2e-3);
  expect_close(var(g.to(ScalarType::Float64), std::vector<int64_t>{1}, Scalar(2.5)),
               var(a.to(ScalarType::Float64), std::vector<int64_t>{1}, Scalar(2.5)), 1e-12);
  expect_close(var(empty({3, 0}).to(cuda()), std::vector<int64_t>{1}),
               var(empty({3, 0}), std::vector<int64_t>{1}), 0);  // NaN on both
  Tensor x = randn({4, 3, 5, 5}), w = randn({3}), b = randn({3});
  expect_close(batch_norm(x.to(cuda()), w.to(cuda()), b.to(cuda()), std::nullopt, std::nullopt,
                          true, 0.1, 1e-5),
               batch_norm(x, w, b, std::nullopt, std::nullopt, true, 0.1, 1e-5), 1e-4);
}

}  // namespace
}  // namespace loom
