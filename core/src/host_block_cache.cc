// Host blocks by size: the small classes with their per-thread free lists, larger ones
// from glibc, and from 128 KiB the large-block pool (Note [Large host blocks]).
#include "host_block_cache.h"

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "large_host_blocks.h"
#include "loom/core/host_memory.h"

namespace loom::host_blocks {

// Note [Small host blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Every new tensor allocates its data, and for the small tensors of eager code (scalars,
// a few elements) glibc's aligned_alloc is a large share of an op's cost: aligned
// requests bypass its per-thread cache and split chunks that later need consolidating.
// So blocks up to 4 KiB are rounded to a power-of-two class (64 B .. 4 KiB), and a
// freed block goes onto a free list of the freeing thread, to serve that thread's next
// request of its class. Each list holds at most kMaxBlocksPerClass blocks (so a thread
// keeps at most ~256 KiB), the rest go back to glibc. Every block comes from
// aligned_alloc, so a block allocated on one thread and freed on another is fine either
// way. A thread's lists are freed when it exits; frees that arrive after that (static
// destructors at process exit) go straight to glibc. Allocation observers see each
// storage's own byte count, as before: the cache is invisible above the allocator.

namespace {

constexpr size_t kMinClassBytes = 64;
constexpr size_t kNumClasses = 7;  // 64, 128, ..., 4096
constexpr size_t kMaxBytes = kMinClassBytes << (kNumClasses - 1);
constexpr int kMaxBlocksPerClass = 32;

struct FreeBlock {
  FreeBlock* next;
};

// The smallest class holding nbytes (at most kMaxBytes): 64 B is class 0.
size_t class_of(size_t nbytes) {
  return nbytes <= kMinClassBytes ? 0 : static_cast<size_t>(std::bit_width(nbytes - 1)) - 6;
}
static_assert(kMinClassBytes == 64, "class_of counts classes from 2^6");

// Plain data with constant initialisation, so reaching it is one TLS offset (no
// per-access initialisation check); the Drainer below frees it when the thread exits.
struct ThreadCache {
  FreeBlock* heads[kNumClasses];
  int counts[kNumClasses];
  bool drainer_armed;
  bool gone;  // the thread's destructors ran: no more caching
};

thread_local ThreadCache tls_cache __attribute__((tls_model("initial-exec"))) = {};

struct Drainer {
  void arm() { tls_cache.drainer_armed = true; }
  ~Drainer() {
    for (size_t c = 0; c < kNumClasses; ++c) {
      while (FreeBlock* block = tls_cache.heads[c]) {
        tls_cache.heads[c] = block->next;
        std::free(block);
      }
      tls_cache.counts[c] = 0;
    }
    tls_cache.gone = true;
  }
};

thread_local Drainer tls_drainer;  // constructed (and its destructor registered) on arm()

}  // namespace

void* allocate(size_t nbytes) {
  if (nbytes >= kLargeHostBlockBytes) [[unlikely]]
    return large_host_blocks::allocate(nbytes);
  if (nbytes > kMaxBytes) return std::aligned_alloc(64, (nbytes + 63) & ~size_t{63});
  size_t c = class_of(nbytes);
  ThreadCache& cache = tls_cache;
  if (FreeBlock* block = cache.heads[c]) {
    cache.heads[c] = block->next;
    --cache.counts[c];
    return block;
  }
  return std::aligned_alloc(64, kMinClassBytes << c);
}

namespace {

void push_block(ThreadCache& cache, void* block, size_t c) {
  auto* free_block = static_cast<FreeBlock*>(block);
  free_block->next = cache.heads[c];
  cache.heads[c] = free_block;
  ++cache.counts[c];
}

// A thread's first cached block arms its drainer (out of line: deallocate's common path
// then makes no calls but tail calls and saves no registers).
__attribute__((noinline)) void arm_and_push(void* block, size_t c) {
  tls_drainer.arm();
  push_block(tls_cache, block, c);
}

}  // namespace

void deallocate(void* block, size_t nbytes) {
  if (block == nullptr) return;
  if (nbytes >= kLargeHostBlockBytes) [[unlikely]]
    return large_host_blocks::deallocate(block, nbytes);
  ThreadCache& cache = tls_cache;
  if (nbytes > kMaxBytes || cache.gone) return std::free(block);
  const size_t c = class_of(nbytes);
  if (cache.counts[c] >= kMaxBlocksPerClass) return std::free(block);
  if (!cache.drainer_armed) [[unlikely]]
    return arm_and_push(block, c);
  push_block(cache, block, c);
}

void* allocate_object(size_t size) {
  void* block = allocate(size);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}

}  // namespace loom::host_blocks
