// The multi-tensor launch plan (kernels/multi_tensor_math.h, Note [Multi-tensor
// launches]): every element of every tensor in exactly one block of one launch, within the
// table's limits, empty tensors skipped, tensors continued across launches.
#include "../../plugins/gpu/kernels/multi_tensor_math.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace loom::gpu {
namespace {

// Runs the plan over tensors of `sizes` and counts how often each element is covered.
struct Coverage {
  std::vector<std::vector<int>> hits;
  int launches = 0;
  explicit Coverage(const std::vector<int64_t>& sizes, int64_t chunk) {
    std::vector<std::vector<char>> storage;
    std::vector<void*> data;
    for (int64_t n : sizes) {
      storage.emplace_back(static_cast<size_t>(std::max<int64_t>(n, 1)));
      data.push_back(storage.back().data());
      hits.emplace_back(static_cast<size_t>(n), 0);
    }
    std::map<void*, size_t> index;
    for (size_t i = 0; i < data.size(); ++i) index[data[i]] = i;
    plan_multi_tensor(data.data(), sizes.data(), static_cast<int64_t>(sizes.size()), chunk,
                      [&](const MultiTensorBatch& batch) {
                        ++launches;
                        EXPECT_GT(batch.num_blocks, 0);
                        EXPECT_LE(batch.num_blocks, kMultiTensorMaxBlocks);
                        EXPECT_LE(batch.num_tensors, kMultiTensorMaxTensors);
                        for (int b = 0; b < batch.num_blocks; ++b) {
                          ASSERT_LT(batch.block_tensor[b], batch.num_tensors);
                          int64_t begin = 0, end = 0;
                          multi_tensor_block_range(batch, b, chunk, begin, end);
                          const size_t t = index.at(batch.data[batch.block_tensor[b]]);
                          EXPECT_EQ(batch.numel[batch.block_tensor[b]], sizes[t]);
                          for (int64_t i = begin; i < end; ++i) ++hits[t][static_cast<size_t>(i)];
                        }
                      });
  }
  bool every_element_once() const {
    for (const auto& h : hits) {
      for (int v : h) {
        if (v != 1) return false;
      }
    }
    return true;
  }
};

TEST(GpuMultiTensorMath, EveryElementIsInExactlyOneBlock) {
  const Coverage small({5, 0, 17, 1, 64}, 8);
  EXPECT_TRUE(small.every_element_once());
  EXPECT_EQ(small.launches, 1);
  // A tensor of more chunks than a launch has blocks continues in the next launch.
  const Coverage long_one({kMultiTensorMaxBlocks * 3 + 5}, 1);
  EXPECT_TRUE(long_one.every_element_once());
  EXPECT_EQ(long_one.launches, 4);
}

TEST(GpuMultiTensorMath, ManyTensorsSpreadOverLaunchesWithinTheTable) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 3 * kMultiTensorMaxTensors + 7; ++i) sizes.push_back(1 + (i * 37) % 300);
  const Coverage c(sizes, 64);
  EXPECT_TRUE(c.every_element_once());
  EXPECT_GE(c.launches, 4);
}

TEST(GpuMultiTensorMath, EmptyListsLaunchNothing) {
  EXPECT_EQ(Coverage({}, 16).launches, 0);
  EXPECT_EQ(Coverage({0, 0}, 16).launches, 0);
}

TEST(GpuMultiTensorMath, TheTableFitsAKernelArgument) {
  EXPECT_LE(sizeof(MultiTensorBatch), 4096u);
  EXPECT_LE(sizeof(FusedAdamTable) + 128, 4096u);  // with the launch's hyperparameters
}

// Fused Adam's tables (Note [Fused Adam]): each entry carries its tensor's pointers and
// step, every element once, at most kMaxTensors entries a table, a tensor cut by a full
// table listed again.
TEST(GpuMultiTensorMath, FusedAdamTablesCarryEveryListOfATensor) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 2 * FusedAdamTable::kMaxTensors + 3; ++i) sizes.push_back(1 + (i * 53) % 500);
  sizes.push_back(kMultiTensorMaxBlocks * 2 * 16 + 3);  // more chunks than a table has blocks
  const int64_t chunk = 16;
  std::vector<std::vector<int>> hits;
  for (int64_t n : sizes) hits.emplace_back(static_cast<size_t>(n), 0);
  int launches = 0;
  plan_multi_tensor_tables<FusedAdamTable>(
      sizes.data(), static_cast<int64_t>(sizes.size()), chunk,
      [&](FusedAdamTable& table, int64_t i) {
        // stand-ins: the caller's index in every list, and as the step
        table.param[table.num_tensors] = reinterpret_cast<void*>(i + 1);
        table.grad[table.num_tensors] = reinterpret_cast<void*>(i + 1);
        table.step_value[table.num_tensors] = static_cast<double>(i);
      },
      [&](const FusedAdamTable& table) {
        ++launches;
        EXPECT_LE(table.num_tensors, FusedAdamTable::kMaxTensors);
        for (int b = 0; b < table.num_blocks; ++b) {
          const int t = table.block_tensor[b];
          ASSERT_LT(t, table.num_tensors);
          const auto i = static_cast<size_t>(reinterpret_cast<intptr_t>(table.param[t]) - 1);
          EXPECT_EQ(table.grad[t], table.param[t]);
          EXPECT_EQ(table.step_value[t], static_cast<double>(i));
          EXPECT_EQ(table.numel[t], sizes[i]);
          int64_t begin = 0, end = 0;
          multi_tensor_block_range(table, b, chunk, begin, end);
          for (int64_t e = begin; e < end; ++e) ++hits[i][static_cast<size_t>(e)];
        }
      });
  for (size_t i = 0; i < hits.size(); ++i) {
    for (int v : hits[i]) ASSERT_EQ(v, 1) << "tensor " << i;
  }
  EXPECT_GE(launches, 3);
}

}  // namespace
}  // namespace loom::gpu
