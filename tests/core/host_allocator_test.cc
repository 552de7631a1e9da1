// The core's CPU allocator and its per-thread cache of small blocks (Note [Small host
// blocks]): alignment, reuse within a thread, blocks freed on another thread, sizes on
// both sides of the cache limit, and the one-pass `empty` built on it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "loom/core/allocator.h"
#include "loom/core/error.h"
#include "loom/core/tensor_base.h"

namespace loom {
namespace {

bool aligned64(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST(HostAllocator, BlocksAreAlignedAndWritableAcrossTheCacheLimit) {
  Allocator& a = cpu_allocator();
  for (size_t n : {1, 63, 64, 65, 100, 1000, 4095, 4096, 4097, 100000}) {
    void* p = a.allocate(n, Device{kCPU, -1});
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(aligned64(p)) << n;
    std::memset(p, 0xAB, n);  // the whole request is usable (ASan checks the bounds)
    a.deallocate(p, n, Device{kCPU, -1});
  }
  EXPECT_EQ(a.allocate(0, Device{kCPU, -1}), nullptr);
}

TEST(HostAllocator, AFreedSmallBlockServesTheNextRequestOfItsClass) {
  Allocator& a = cpu_allocator();
  void* first = a.allocate(100, Device{kCPU, -1});
  a.deallocate(first, 100, Device{kCPU, -1});
  void* again = a.allocate(120, Device{kCPU, -1});  // same 128-byte class
  EXPECT_EQ(again, first);
  a.deallocate(again, 120, Device{kCPU, -1});
}

TEST(HostAllocator, BlocksMayBeFreedOnAnotherThreadAndThreadsExitCleanly) {
  Allocator& a = cpu_allocator();
  std::vector<void*> blocks;
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i) blocks.push_back(a.allocate(64 * (i % 8 + 1), Device{kCPU, -1}));
    // Cache some blocks on this thread too; they are freed when it exits.
    for (int i = 0; i < 50; ++i)
      a.deallocate(a.allocate(256, Device{kCPU, -1}), 256, Device{kCPU, -1});
  });
  producer.join();
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::memset(blocks[i], 1, 64 * (i % 8 + 1));
    a.deallocate(blocks[i], 64 * (i % 8 + 1), Device{kCPU, -1});
  }
}

TensorBase empty_cpu(std::vector<int64_t> sizes, ScalarType dtype) {
  return empty(sizes, dtype, Device{kCPU, -1});
}

TEST(HostAllocator, EmptyGivesContiguousTensorsAndReportsBadSizes) {
  TensorBase t = empty_cpu({2, 3, 4}, ScalarType::Float32);
  EXPECT_EQ(std::vector<int64_t>(t.strides().begin(), t.strides().end()),
            (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.impl()->storage()->nbytes(), 24u * 4u);
  TensorBase z = empty_cpu({0, 5}, ScalarType::Float64);
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(std::vector<int64_t>(z.strides().begin(), z.strides().end()),
            (std::vector<int64_t>{5, 1}));
  EXPECT_THROW(empty_cpu({2, -1}, ScalarType::Float32), Error);
  EXPECT_THROW(empty_cpu({int64_t{1} << 40, int64_t{1} << 40}, ScalarType::Float32), Error);
  // The element count fits but the bytes do not.
  EXPECT_THROW(empty_cpu({int64_t{1} << 62}, ScalarType::Float64), Error);
}

}  // namespace
}  // namespace loom
