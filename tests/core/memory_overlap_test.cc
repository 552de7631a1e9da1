// Tests of the memory-overlap checks (Note [Overlapping writes]): internal overlap of
// expanded and irregular views, and Full / Partial / No / TooHard between two tensors.
#include <vector>

#include "gtest/gtest.h"
#include "loom/core/memory_overlap.h"
#include "loom/core/tensor_base.h"

namespace loom {
namespace {

TEST(MemoryOverlap, InternalOverlap) {
  TensorBase base = empty(std::vector<int64_t>{4, 6}, ScalarType::Float32);
  EXPECT_EQ(internal_overlap(*base.impl()), InternalOverlap::No);
  EXPECT_EQ(internal_overlap(*base.t().impl()), InternalOverlap::No);  // dense, permuted
  EXPECT_EQ(internal_overlap(*base.slice(0, 0, 1).expand({5, 6}).impl()), InternalOverlap::Yes);
  // Size-1 dims place nothing, so a stride 0 there is harmless.
  EXPECT_EQ(internal_overlap(*base.as_strided({1, 6}, {0, 1}).impl()), InternalOverlap::No);
  // Strided but disjoint: not dense, too hard to decide cheaply (PyTorch lets it through).
  EXPECT_EQ(internal_overlap(*base.slice(1, 0, 6, 2).impl()), InternalOverlap::TooHard);
  // Overlapping without a zero stride: also too hard.
  EXPECT_EQ(internal_overlap(*base.as_strided({3, 3}, {1, 1}).impl()), InternalOverlap::TooHard);
}

TEST(MemoryOverlap, BetweenTwoTensors) {
  TensorBase base = empty(std::vector<int64_t>{8}, ScalarType::Float32);
  TensorBase other = empty(std::vector<int64_t>{8}, ScalarType::Float32);
  EXPECT_EQ(overlap(*base.impl(), *base.impl()), Overlap::Full);
  EXPECT_EQ(overlap(*base.impl(), *base.view({2, 4}).impl()), Overlap::Full);
  EXPECT_EQ(overlap(*base.view({2, 4}).impl(), *base.view({2, 4}).t().impl()), Overlap::Full);
  EXPECT_EQ(overlap(*base.impl(), *other.impl()), Overlap::No);
  EXPECT_EQ(overlap(*base.slice(0, 0, 4).impl(), *base.slice(0, 4, 8).impl()), Overlap::No);
  EXPECT_EQ(overlap(*base.slice(0, 0, 7).impl(), *base.slice(0, 1, 8).impl()), Overlap::Partial);
  EXPECT_EQ(overlap(*base.impl(), *base.slice(0, 2, 3).impl()), Overlap::Partial);
  EXPECT_EQ(overlap(*base.slice(0, 0, 0).impl(), *base.impl()), Overlap::No);  // empty
  EXPECT_EQ(overlap(*base.slice(0, 0, 8, 2).impl(), *base.impl()), Overlap::TooHard);
  EXPECT_TRUE(is_non_overlapping_and_dense(*base.view({2, 4}).permute({1, 0}).impl()));
  EXPECT_FALSE(is_non_overlapping_and_dense(*base.view({2, 4}).slice(1, 0, 2).impl()));
}

}  // namespace
}  // namespace loom
