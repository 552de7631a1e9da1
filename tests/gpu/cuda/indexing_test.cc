// The indexing family on the CUDA plugin: gathers, scatters, nonzero and advanced
// indexing against the CPU, and indices out of range.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

TEST_F(CudaOps, IndexingOpsMatchTheCpuAndRefuseIndicesOutOfRange) {
  Tensor a = randn({6, 9});
  Tensor g = a.to(cuda());
  Tensor rows = tensor({5, 0, 0, 3}).to(ScalarType::Int64);
  Tensor rows32 = rows.to(ScalarType::Int32);
  expect_close(g.index_select(0, rows.to(cuda())), a.index_select(0, rows), 0);
  expect_close(g.t().index_select(1, rows32.to(cuda())), a.t().index_select(1, rows32), 0);
  Tensor idx = randint(0, 9, {6, 4});
  expect_close(g.gather(1, idx.to(cuda())), a.gather(1, idx), 0);
  Tensor src = randn({6, 4});
  Tensor distinct = arange(0, 24).reshape({6, 4}) % 9;  // no repeats within a row
  expect_close(g.scatter(1, distinct.to(cuda()), src.to(cuda())), a.scatter(1, distinct, src), 0);
  expect_close(g.scatter(1, distinct.to(cuda()), 7.0), a.scatter(1, distinct, 7.0), 0);
  expect_close(g.scatter_add(1, idx.to(cuda()), src.to(cuda())), a.scatter_add(1, idx, src), 1e-6);
  Tensor bad = tensor({0, 6}).to(ScalarType::Int64);
  // Found by the kernel, raised at the next wait for the device as that op's error (Note
  // [Input errors found by kernels]); a copy to the host is such a wait, and its error
  // names the ops it ran in first.
  Tensor bad_on_gpu = bad.to(cuda());
  test::expect_error(
      [&] { (void)g.index_select(0, bad_on_gpu).to(parse_device("cpu")); }, "loom::to.device",
      {"[loom::index_select] index 6 is out of range for dim 0 of size 6", "found by its kernel"});
  Tensor bad_rows = tensor({0, 1, 9, 2}).reshape({2, 2}).to(ScalarType::Int64).to(cuda());
  Tensor after = g.gather(1, bad_rows.narrow(0, 0, 1));  // fine, queued before
  (void)g.scatter_add(0, bad_rows, g.narrow(0, 0, 2).narrow(1, 0, 2));
  Tensor fine = g.neg();  // queued after the bad launch: runs, not affected
  test::expect_error([] { synchronize(parse_device("cuda:0")); }, "loom::scatter_add",
                     "index 9 is out of range for dim 0 of size 6");
  synchronize(parse_device("cuda:0"));  // reported once
  expect_close(fine, a.neg(), 0);
  expect_close(after, a.gather(1, tensor({0, 1}).reshape({1, 2}).to(ScalarType::Int64)), 0);
}

// nonzero (two passes over chunks of 2048 elements; a tensor of several chunks, a
// transposed one, float16) and index.Tensor (int64 indices broadcast, negative ones, bool
// masks, adjacent and separated indexed dims, None): the CPU's results, and masked_select
// built on them; an index out of range at the next wait.
TEST_F(CudaOps, NonzeroAndAdvancedIndexingMatchTheCpu) {
  Tensor big = randn({3, 2000, 2}) > 0.5;
  expect_close(big.to(cuda()).nonzero(), big.nonzero(), 0);
  Tensor f = (randn({6, 5}) * 2.0).round();
  expect_close(f.to(cuda()).t().nonzero(), f.t().nonzero(), 0);
  Tensor h = f.to(ScalarType::Float16);
  expect_close(h.to(cuda()).nonzero(), h.nonzero(), 0);
  expect_close((f > 100.0).to(cuda()).nonzero(), (f > 100.0).nonzero(), 0);  // none
  expect_close(f.to(cuda()).masked_select(f.to(cuda()) > 0.0), f.masked_select(f > 0.0), 0);

  Tensor a = randn({4, 5, 6});
  Tensor g = a.to(cuda());
  Tensor rows = tensor({3, -1, 0}).to(ScalarType::Int64);
  Tensor cols = tensor({4, 2, 2, 0, 1, 3}).reshape({2, 3}).to(ScalarType::Int64);
  using Indices = std::vector<std::optional<Tensor>>;
  auto both = [&](const Indices& cpu_indices) {
    Indices gpu_indices;
    for (const auto& t : cpu_indices) {
      gpu_indices.push_back(t ? std::optional<Tensor>(t->to(cuda())) : std::nullopt);
    }
    expect_close(g.index(gpu_indices), a.index(cpu_indices), 0);
  };
  both({rows});
  both({rows, cols});                // adjacent, broadcast to [2, 3]
  both({std::nullopt, cols});        // after a None: in place
  both({rows, std::nullopt, rows});  // separated: B first
  both({a.select(2, 0) > 0.0});      // a mask over two dims
  both({std::nullopt, std::nullopt, tensor({5, 0}).to(ScalarType::Int64)});
  Tensor bad = tensor({0, 4}).to(ScalarType::Int64).to(cuda());
  test::expect_error(
      [&] {
        (void)g.index({bad});
        synchronize(cuda());
      },
      "loom::index.Tensor", "index 4 is out of range for dim 0 of size 4");
}

}  // namespace
}  // namespace loom
