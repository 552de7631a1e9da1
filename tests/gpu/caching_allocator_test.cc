// The GPU caching allocator's bookkeeping on a fake driver (runtime/caching_allocator.h):
// size classes, reuse per stream, release on out-of-memory, empty_cache and the stats.
#include "../../plugins/gpu/runtime/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

namespace loom::gpu {
namespace {

class FakeDriver final : public RawDeviceMemory {
 public:
  size_t capacity = size_t{1} << 30;
  size_t used = 0;
  int allocations = 0, releases = 0;
  std::set<void*> live;
  void* allocate(int, size_t nbytes) override {
    if (used + nbytes > capacity) return nullptr;
    used += nbytes;
    ++allocations;
    void* p = std::malloc(nbytes);
    live.insert(p);
    sizes[p] = nbytes;
    return p;
  }
  void release(int, void* ptr) override {
    ASSERT_EQ(live.count(ptr), 1u) << "released twice or never allocated";
    live.erase(ptr);
    used -= sizes[ptr];
    ++releases;
    std::free(ptr);
  }
  std::map<void*, size_t> sizes;
  ~FakeDriver() {
    for (void* p : live) std::free(p);  // blocks a test left live
  }
};

TEST(GpuCachingAllocator, SizeClasses) {
  EXPECT_EQ(CachingAllocator::size_class(0), 512u);
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(1 << 20), size_t{1} << 20);
  const size_t mib = size_t{1} << 20;
  EXPECT_EQ(CachingAllocator::size_class(mib + 1), mib + mib / 4);
  EXPECT_EQ(CachingAllocator::size_class(3 * mib), 3 * mib);
  EXPECT_EQ(CachingAllocator::size_class(100 * mib), 112 * mib);  // 64 MiB + 3 * 16 MiB
  for (size_t n : {size_t{3} << 20, size_t{77777777}, size_t{1} << 33}) {
    const size_t c = CachingAllocator::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c - n, n / 4) << n;  // the waste stays under a quarter
  }
}

TEST(GpuCachingAllocator, FreedBlocksServeTheSameStreamOnly) {
  FakeDriver driver;
  int s1 = 0, s2 = 0;  // two stream handles
  CachingAllocator a(driver);
  void* p = a.allocate(0, 1000, &s1);
  a.free(p);
  EXPECT_EQ(a.allocate(0, 1000, &s2) == p, false) << "another stream must not get the block";
  void* again = a.allocate(0, 900, &s1);  // same size class (1024) on the same stream
  EXPECT_EQ(again, p);
  const MemoryStats s = a.stats(0);
  EXPECT_EQ(s.allocations, 3);
  EXPECT_EQ(s.cache_hits, 1);
  EXPECT_EQ(s.driver_allocations, 2);
  EXPECT_EQ(s.allocated_bytes, 2048);
  EXPECT_EQ(s.reserved_bytes, 2048);
}

TEST(GpuCachingAllocator, EmptyCacheReturnsOnlyFreeBlocks) {
  FakeDriver driver;
  CachingAllocator a(driver);
  void* kept = a.allocate(0, 4096, nullptr);
  void* freed = a.allocate(0, 8192, nullptr);
  a.free(freed);
  a.empty_cache();
  EXPECT_EQ(driver.releases, 1);
  EXPECT_EQ(driver.live.count(kept), 1u);
  const MemoryStats s = a.stats(0);
  EXPECT_EQ(s.reserved_bytes, 4096);
  EXPECT_EQ(s.peak_reserved_bytes, 4096 + 8192);
  a.reset_peak(0);
  EXPECT_EQ(a.stats(0).peak_reserved_bytes, 4096);
  a.free(kept);
}

TEST(GpuCachingAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeDriver driver;
  driver.capacity = 3 << 20;
  CachingAllocator a(driver);
  void* p = a.allocate(0, 2 << 20, nullptr);
  ASSERT_NE(p, nullptr);
  a.free(p);                                           // cached: the driver still holds 2 MiB
  void* q = a.allocate(0, (2 << 20) + 4096, nullptr);  // another class: needs the cache gone
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(driver.releases, 1);
  EXPECT_EQ(a.allocate(0, 8 << 20, nullptr), nullptr);  // truly out of memory
  a.free(q);
}

TEST(GpuCachingAllocator, UnknownPointersAreCountedNotFreed) {
  FakeDriver driver;
  CachingAllocator a(driver);
  int not_ours = 0;
  a.free(&not_ours);
  a.free(nullptr);
  EXPECT_EQ(a.unknown_frees(), 1);
  EXPECT_EQ(driver.releases, 0);
}

TEST(GpuCachingAllocator, DevicesKeepSeparateBinsAndStats) {
  FakeDriver driver;
  CachingAllocator a(driver);
  void* p = a.allocate(1, 512, nullptr);
  a.free(p);
  EXPECT_NE(a.allocate(0, 512, nullptr), p);
  EXPECT_EQ(a.allocate(1, 512, nullptr), p);
  EXPECT_EQ(a.stats(1).cache_hits, 1);
  EXPECT_EQ(a.stats(0).cache_hits, 0);
  EXPECT_EQ(a.stats(7).allocations, 0);  // a device never used
}

}  // namespace
}  // namespace loom::gpu
