// The large-block pool behind the CPU allocator (Note [Large host blocks]): reuse of a
// freed block, size classes, the cache limit and its least-recently-freed eviction,
// empty_cache, huge-page alignment, concurrent use and its statistics. The pool is
// process-wide, so every check compares against figures taken at the test's start.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "loom/core/allocator.h"
#include "loom/core/host_memory.h"

namespace loom {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
const Device kHost{kCPU, -1};

// Restores the cache limit and huge-page setting a test changes.
class HostMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    limit_ = host_memory_stats().cache_limit_bytes;
    empty_cache();
  }
  void TearDown() override {
    set_host_cache_limit(limit_);
    set_host_huge_pages(true);
  }
  void* allocate(size_t n) { return cpu_allocator().allocate(n, kHost); }
  void free(void* p, size_t n) { cpu_allocator().deallocate(p, n, kHost); }

 private:
  size_t limit_ = 0;
};

TEST_F(HostMemoryTest, AFreedLargeBlockServesTheNextRequestOfItsClass) {
  HostMemoryStats before = host_memory_stats();
  void* first = allocate(3 * kMiB);
  std::memset(first, 1, 3 * kMiB);
  free(first, 3 * kMiB);
  EXPECT_EQ(host_memory_stats().cached_bytes, before.cached_bytes + 3 * kMiB);

  void* again = allocate(3 * kMiB - 1000);  // same class
  EXPECT_EQ(again, first);
  HostMemoryStats after = host_memory_stats();
  EXPECT_EQ(after.allocations, before.allocations + 2);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  EXPECT_EQ(after.os_maps, before.os_maps + 1);
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
  free(again, 3 * kMiB - 1000);
}

TEST_F(HostMemoryTest, RequestsAreRoundedToAnEighthOfTheirPowerOfTwo) {
  size_t base = host_memory_stats().allocated_bytes;
  struct Case {
    size_t request, block;
  };
  for (Case c : {Case{128 << 10, 128 << 10}, Case{130 << 10, 144 << 10},
                 Case{(1 << 20) + 1, (1 << 20) + (128 << 10)}, Case{64 * kMiB, 64 * kMiB},
                 Case{64 * kMiB + 1, 72 * kMiB}}) {
    void* p = allocate(c.request);
    EXPECT_EQ(host_memory_stats().allocated_bytes, base + c.block) << c.request;
    free(p, c.request);
  }
  // Below the pool's threshold blocks come from elsewhere and are not counted.
  void* small = allocate(kLargeHostBlockBytes - 1);
  EXPECT_EQ(host_memory_stats().allocated_bytes, base);
  free(small, kLargeHostBlockBytes - 1);
}

TEST_F(HostMemoryTest, FreeingPastTheLimitReturnsTheLeastRecentlyFreedBlocks) {
  set_host_cache_limit(3 * kMiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(allocate(kMiB));
  HostMemoryStats before = host_memory_stats();
  for (void* b : blocks) free(b, kMiB);
  HostMemoryStats after = host_memory_stats();
  EXPECT_EQ(after.cached_bytes, 3 * kMiB);
  EXPECT_EQ(after.os_unmaps, before.os_unmaps + 1);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes - kMiB);
  // The last freed comes back first; the first freed was returned to the OS.
  void* p = allocate(kMiB);
  EXPECT_EQ(p, blocks[3]);
  free(p, kMiB);

  // A block larger than the limit is never cached.
  void* big = allocate(4 * kMiB);
  before = host_memory_stats();
  free(big, 4 * kMiB);
  after = host_memory_stats();
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
  EXPECT_EQ(after.os_unmaps, before.os_unmaps + 1);

  // Lowering the limit releases at once; 0 turns caching off.
  set_host_cache_limit(kMiB);
  EXPECT_EQ(host_memory_stats().cached_bytes, kMiB);
  set_host_cache_limit(0);
  EXPECT_EQ(host_memory_stats().cached_bytes, 0u);
  void* q = allocate(kMiB);
  free(q, kMiB);
  EXPECT_EQ(host_memory_stats().cached_bytes, 0u);
}

TEST_F(HostMemoryTest, EmptyCacheReturnsEveryFreeBlockAndKeepsLiveOnes) {
  void* live = allocate(2 * kMiB);
  std::memset(live, 7, 2 * kMiB);
  free(allocate(5 * kMiB), 5 * kMiB);
  free(allocate(kMiB), kMiB);
  HostMemoryStats before = host_memory_stats();
  EXPECT_GE(before.cached_bytes, 6 * kMiB);
  empty_cache();
  HostMemoryStats after = host_memory_stats();
  EXPECT_EQ(after.cached_bytes, 0u);
  EXPECT_EQ(after.reserved_bytes, after.allocated_bytes);
  EXPECT_EQ(static_cast<unsigned char*>(live)[2 * kMiB - 1], 7);
  free(live, 2 * kMiB);
}

TEST_F(HostMemoryTest, BlocksOfTwoMiBAndMoreAreHugePageAligned) {
  auto address = [](void* p) { return reinterpret_cast<uintptr_t>(p); };
  void* huge = allocate(6 * kMiB);
  EXPECT_EQ(address(huge) % (2 * kMiB), 0u);
  std::memset(huge, 1, 6 * kMiB);
  free(huge, 6 * kMiB);
  set_host_huge_pages(false);
  empty_cache();
  void* plain = allocate(6 * kMiB);
  EXPECT_EQ(address(plain) % 4096, 0u);
  std::memset(plain, 1, 6 * kMiB);
  free(plain, 6 * kMiB);
}

TEST_F(HostMemoryTest, ThreadsShareThePoolAndTheFiguresBalance) {
  HostMemoryStats before = host_memory_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 200; ++i) {
        size_t n = (size_t(1 + (i + t) % 5)) * 256 * 1024;
        auto* p = static_cast<unsigned char*>(allocate(n));
        p[0] = p[n - 1] = static_cast<unsigned char>(i);
        EXPECT_EQ(p[n - 1], static_cast<unsigned char>(i));
        free(p, n);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  HostMemoryStats after = host_memory_stats();
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.allocations, before.allocations + 800);
  EXPECT_EQ(after.reserved_bytes, after.allocated_bytes + after.cached_bytes);
  EXPECT_GT(after.cache_hits, before.cache_hits + 700);  // at most 4 threads x 5 classes miss
}

TEST_F(HostMemoryTest, PeaksFollowTheLiveBlocksAndReset) {
  reset_peak_host_memory_stats();
  HostMemoryStats start = host_memory_stats();
  EXPECT_EQ(start.peak_allocated_bytes, start.allocated_bytes);
  void* a = allocate(8 * kMiB);
  void* b = allocate(8 * kMiB);
  free(a, 8 * kMiB);
  free(b, 8 * kMiB);
  HostMemoryStats after = host_memory_stats();
  EXPECT_EQ(after.peak_allocated_bytes, start.allocated_bytes + 16 * kMiB);
  EXPECT_EQ(after.peak_reserved_bytes, start.reserved_bytes + 16 * kMiB);
  reset_peak_host_memory_stats();
  EXPECT_EQ(host_memory_stats().peak_allocated_bytes, start.allocated_bytes);
}

}  // namespace
}  // namespace loom
