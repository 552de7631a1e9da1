// The embedding family on the CUDA plugin against the CPU, and indices out of range.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

// embedding through the gather kernel: int64 and int32 indices of any shape, a strided
// weight, the gradient (index_add), and an index out of range refused as on the CPU.
TEST_F(CudaOps, EmbeddingMatchesTheCpuAndRefusesIndicesOutOfRange) {
  Tensor w = randn({10, 6}), idx = randint(0, 10, {3, 4}).to(ScalarType::Int64);
  Tensor gw = w.to(cuda()), gi = idx.to(cuda());
  expect_close(embedding(gw, gi), embedding(w, idx), 0);
  expect_close(embedding(gw, gi.to(ScalarType::Int32)), embedding(w, idx.to(ScalarType::Int32)), 0);
  Tensor wt = randn({6, 10}).t();
  expect_close(embedding(wt.to(cuda()), gi), embedding(wt, idx), 0);
  Tensor leaf = gw.clone().requires_grad_();
  embedding(leaf, gi).sum().backward();
  Tensor cpu_leaf = w.clone().requires_grad_();
  embedding(cpu_leaf, idx).sum().backward();
  expect_close(leaf.grad(), cpu_leaf.grad(), 0);
  Tensor bad = tensor({1, 10}).to(ScalarType::Int64);
  Tensor bad_on_gpu = bad.to(cuda());
  test::expect_error(
      [&] {
        (void)embedding(gw, bad_on_gpu);
        synchronize(cuda());
      },
      "loom::embedding", "index 10 is out of range for a weight of 10 rows");
  // A weight of width 0 gathers nothing but still checks its indices, as the CPU does.
  Tensor flat = empty({10, 0}).to(cuda());
  const Tensor nothing = embedding(flat, gi);
  EXPECT_EQ(std::vector<int64_t>(nothing.sizes().begin(), nothing.sizes().end()),
            (std::vector<int64_t>{3, 4, 0}));
  test::expect_error([&] { (void)embedding(flat, bad_on_gpu); }, "loom::embedding",
                     "index 10 is out of range for a weight of 10 rows");
  test::expect_error([&] { (void)embedding(flat, (bad - 2).to(cuda())); }, "loom::embedding",
                     "index -1 is out of range for a weight of 10 rows");
  // one_hot: inferred and given class counts; a class out of range at the next wait
  Tensor classes = tensor({3, 0, 2, 3, 1, 0}).reshape({2, 3}).to(ScalarType::Int64);
  expect_close(one_hot(classes.to(cuda())), one_hot(classes), 0);
  expect_close(one_hot(classes.t().to(cuda()), 6), one_hot(classes.t(), 6), 0);
  Tensor gpu_classes = classes.to(cuda());
  test::expect_error(
      [&] {
        (void)one_hot(gpu_classes, 3);
        synchronize(cuda());
      },
      "loom::one_hot", "class 3 is out of range for 3 classes");
}

}  // namespace
}  // namespace loom
