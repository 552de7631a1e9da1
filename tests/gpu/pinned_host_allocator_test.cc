// The pinned host allocator's bookkeeping on a fake runtime (runtime/pinned_host_allocator.h,
// Note [Caching pinned host blocks]): sizes round to powers of two, a freed block is handed
// out again only once the copies recorded on it have run, a use outside every block or
// without an event is reported, events are pooled, and empty_cache keeps busy blocks.
#include "../../plugins/gpu/runtime/pinned_host_allocator.h"

#include <gtest/gtest.h>

#include "fake_pinned_runtime.h"

namespace loom::gpu {
namespace {

using test::FakeRuntime;
using Use = PinnedHostAllocator::Use;

void* const kStream = reinterpret_cast<void*>(0x10);

char* bytes(void* p) {
  return static_cast<char*>(p);
}

TEST(GpuPinnedHostAllocator, BlockSizesArePowersOfTwoFrom4KiB) {
  EXPECT_EQ(PinnedHostAllocator::block_size(0), size_t{4} << 10);
  EXPECT_EQ(PinnedHostAllocator::block_size(4096), size_t{4} << 10);
  EXPECT_EQ(PinnedHostAllocator::block_size(4097), size_t{8} << 10);
  EXPECT_EQ(PinnedHostAllocator::block_size(size_t{3} << 20), size_t{4} << 20);
}

TEST(GpuPinnedHostAllocator, AFreedBlockIsReusedOnlyAfterItsCopiesHaveRun) {
  FakeRuntime runtime;
  PinnedHostAllocator pinned(runtime);
  void* a = pinned.allocate(10000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(pinned.record_use(bytes(a) + 100, 0, kStream), Use::Recorded);  // a view's data
  pinned.deallocate(a);
  void* b = pinned.allocate(9000);  // the same size class, but a's copy is pending
  EXPECT_NE(b, a);
  EXPECT_EQ(runtime.pinned.size(), 2u);
  runtime.complete_all();
  void* c = pinned.allocate(16384);
  EXPECT_EQ(c, a);  // cached and idle now
  const MemoryStats s = pinned.stats();
  EXPECT_EQ(s.allocations, 3);
  EXPECT_EQ(s.cache_hits, 1);
  EXPECT_EQ(s.allocated_bytes, 2 * (int64_t{16} << 10));
  EXPECT_EQ(s.reserved_bytes, 2 * (int64_t{16} << 10));
  EXPECT_EQ(s.peak_allocated_bytes, 2 * (int64_t{16} << 10));
  EXPECT_EQ(s.driver_allocations, 2);
  // another size class never takes a cached block of this one
  pinned.deallocate(c);
  void* d = pinned.allocate(40000);
  EXPECT_NE(d, a);
  EXPECT_EQ(runtime.pinned.size(), 3u);
}

TEST(GpuPinnedHostAllocator, UsesOutsideItsBlocksOrWithoutAnEventAreReported) {
  FakeRuntime runtime;
  PinnedHostAllocator pinned(runtime);
  void* a = pinned.allocate(4096);
  int on_stack = 0;
  EXPECT_EQ(pinned.record_use(&on_stack, 0, kStream), Use::NotPinned);
  EXPECT_EQ(pinned.record_use(bytes(a) + 4096, 0, kStream), Use::NotPinned);  // one past
  runtime.refuse_record = true;
  EXPECT_EQ(pinned.record_use(a, 0, kStream), Use::Failed);
  pinned.deallocate(a);  // nothing recorded: reusable at once (the caller waited)
  EXPECT_EQ(pinned.allocate(100), a);
}

TEST(GpuPinnedHostAllocator, EventsArePooledPerDevice) {
  FakeRuntime runtime;
  PinnedHostAllocator pinned(runtime);
  void* a = pinned.allocate(4096);
  ASSERT_EQ(pinned.record_use(a, 0, kStream), Use::Recorded);
  ASSERT_EQ(pinned.record_use(a, 0, kStream), Use::Recorded);  // two copies pending
  EXPECT_EQ(runtime.events.size(), 2u);
  runtime.complete_all();
  pinned.deallocate(a);
  EXPECT_EQ(pinned.allocate(4096), a);  // idle: both events back in the pool
  ASSERT_EQ(pinned.record_use(a, 0, kStream), Use::Recorded);
  ASSERT_EQ(pinned.record_use(a, 1, kStream), Use::Recorded);  // another device: a new one
  EXPECT_EQ(runtime.events.size(), 3u);
}

TEST(GpuPinnedHostAllocator, EmptyCacheKeepsLiveAndBusyBlocks) {
  FakeRuntime runtime;
  {
    PinnedHostAllocator pinned(runtime);
    void* live = pinned.allocate(4096);
    void* busy = pinned.allocate(4096);
    void* idle = pinned.allocate(4096);
    ASSERT_EQ(pinned.record_use(busy, 0, kStream), Use::Recorded);
    pinned.deallocate(busy);
    pinned.deallocate(idle);
    pinned.empty_cache();
    EXPECT_EQ(runtime.pinned.size(), 2u);
    EXPECT_EQ(runtime.pinned.count(idle), 0u);
    EXPECT_EQ(pinned.stats().reserved_bytes, 2 * int64_t{4096});
    EXPECT_EQ(pinned.stats().peak_reserved_bytes, 3 * int64_t{4096});
    EXPECT_EQ(pinned.stats().driver_frees, 1);
    runtime.complete_all();
    pinned.empty_cache();
    EXPECT_EQ(runtime.pinned.size(), 1u);
    EXPECT_EQ(runtime.pinned.count(live), 1u);
    EXPECT_TRUE(runtime.events.empty());  // pooled events go with the cache
    pinned.deallocate(live);
  }
  EXPECT_TRUE(runtime.pinned.empty());  // the destructor returns the rest
}

}  // namespace
}  // namespace loom::gpu
