// The pinned staging pool's bookkeeping on a fake runtime (runtime/pinned_staging.h, Note
// [Pinned staging]): a block is handed out again only after the event of its last copy
// has completed, the smallest free block serves, the pool stays within its cap, copies
// too small, too large or without a free block take the runtime's path, and a failed event keeps
// the block until the caller has waited.
#include "../../plugins/gpu/runtime/pinned_staging.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "fake_pinned_runtime.h"

namespace loom::gpu {
namespace {

using test::FakeRuntime;

void* const kStream = reinterpret_cast<void*>(0x10);
constexpr size_t kSmall = PinnedStaging::kMinCopy;  // the smallest staged copy

TEST(GpuPinnedStaging, BlockSizesArePowersOfTwoFrom64KiB) {
  EXPECT_EQ(PinnedStaging::block_size(1), size_t{64} << 10);
  EXPECT_EQ(PinnedStaging::block_size(size_t{64} << 10), size_t{64} << 10);
  EXPECT_EQ(PinnedStaging::block_size((size_t{64} << 10) + 1), size_t{128} << 10);
  EXPECT_EQ(PinnedStaging::block_size(size_t{3} << 20), size_t{4} << 20);
}

TEST(GpuPinnedStaging, ABlockIsReusedOnlyAfterItsCopyHasRun) {
  FakeRuntime runtime;
  {
    PinnedStaging pool(runtime);
    void* a = pool.acquire(0, kSmall + 1000);
    ASSERT_NE(a, nullptr);
    EXPECT_TRUE(pool.release_after(a, kStream, true));
    void* b = pool.acquire(0, kSmall + 1000);  // a's copy is still pending: a new block
    ASSERT_NE(b, nullptr);
    EXPECT_NE(b, a);
    EXPECT_TRUE(pool.release_after(b, kStream, true));
    runtime.complete_all();
    EXPECT_EQ(pool.acquire(0, kSmall + 1000), a);  // both done: the first fitting block
    EXPECT_EQ(pool.block_count(), 2u);
  }
  EXPECT_TRUE(runtime.pinned.empty());  // the pool's destructor returned every block
  EXPECT_TRUE(runtime.events.empty());
}

TEST(GpuPinnedStaging, TheSmallestFreeBlockOfTheDeviceServes) {
  FakeRuntime runtime;
  PinnedStaging pool(runtime);
  void* big = pool.acquire(0, size_t{1} << 20);
  void* small = pool.acquire(0, kSmall);
  pool.release_after(big, kStream, false);
  pool.release_after(small, kStream, false);
  EXPECT_EQ(pool.acquire(0, kSmall), small);
  EXPECT_EQ(pool.acquire(0, kSmall + 1), big);  // the small one is leased
  void* other = pool.acquire(1, kSmall);        // another device's copy gets its own block
  EXPECT_NE(other, nullptr);
  EXPECT_NE(other, small);
  EXPECT_EQ(pool.pooled_bytes(), (size_t{1} << 20) + 2 * PinnedStaging::kMinBlock);
}

TEST(GpuPinnedStaging, TooSmallTooLargeOrAFullPoolTakesTheRuntimesPath) {
  FakeRuntime runtime;
  PinnedStaging pool(runtime);
  EXPECT_EQ(pool.acquire(0, PinnedStaging::kMaxCopy + 1), nullptr);
  EXPECT_EQ(pool.acquire(0, kSmall - 1), nullptr);  // the runtime's path returns at once
  std::vector<void*> leased;
  for (size_t used = 0; used < PinnedStaging::kMaxPooled; used += PinnedStaging::kMaxCopy) {
    leased.push_back(pool.acquire(0, PinnedStaging::kMaxCopy));
    ASSERT_NE(leased.back(), nullptr);
  }
  EXPECT_EQ(pool.pooled_bytes(), PinnedStaging::kMaxPooled);
  EXPECT_EQ(pool.acquire(0, kSmall), nullptr);  // every block busy, no room for another
  pool.release_after(leased[0], kStream, true);
  EXPECT_EQ(pool.acquire(0, kSmall), nullptr);  // its copy has not run yet
  runtime.complete_all();
  EXPECT_EQ(pool.acquire(0, kSmall), leased[0]);
}

TEST(GpuPinnedStaging, AFullPoolReturnsIdleBlocksToMakeRoom) {
  FakeRuntime runtime;
  PinnedStaging pool(runtime);
  std::vector<void*> blocks;
  for (size_t used = 0; used < PinnedStaging::kMaxPooled; used += PinnedStaging::kMaxCopy) {
    blocks.push_back(pool.acquire(0, PinnedStaging::kMaxCopy));
  }
  for (void* b : blocks) pool.release_after(b, kStream, false);  // all idle, on device 0
  void* other = pool.acquire(1, kSmall);  // device 1: an idle block of device 0 makes room
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(pool.block_count(), blocks.size());  // one returned, one made
  EXPECT_LE(pool.pooled_bytes(), PinnedStaging::kMaxPooled);
  EXPECT_EQ(runtime.pinned.size(), blocks.size());
}

TEST(GpuPinnedStaging, AFailedEventKeepsTheBlockUntilTheCallerWaited) {
  FakeRuntime runtime;
  PinnedStaging pool(runtime);
  void* a = pool.acquire(0, kSmall);
  runtime.refuse_record = true;
  EXPECT_FALSE(pool.release_after(a, kStream, true));
  EXPECT_NE(pool.acquire(0, kSmall), a);               // still leased
  EXPECT_TRUE(pool.release_after(a, kStream, false));  // the caller waited
  EXPECT_EQ(pool.acquire(0, kSmall), a);
  EXPECT_TRUE(pool.release_after(reinterpret_cast<void*>(0x1234), kStream, true));  // not ours
}

TEST(GpuPinnedStaging, EmptyCacheReturnsOnlyBlocksNoCopyReads) {
  FakeRuntime runtime;
  PinnedStaging pool(runtime);
  void* idle = pool.acquire(0, kSmall);
  void* pending = pool.acquire(0, kSmall);
  void* leased = pool.acquire(0, kSmall);
  pool.release_after(idle, kStream, false);
  pool.release_after(pending, kStream, true);
  pool.empty_cache();
  EXPECT_EQ(pool.block_count(), 2u);
  EXPECT_EQ(runtime.pinned.count(idle), 0u);
  runtime.complete_all();
  pool.release_after(leased, kStream, false);
  pool.empty_cache();
  EXPECT_EQ(pool.block_count(), 0u);
  EXPECT_EQ(pool.pooled_bytes(), 0u);
  EXPECT_TRUE(runtime.pinned.empty());
}

}  // namespace
}  // namespace loom::gpu
