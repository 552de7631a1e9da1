// The GPU plugins' pinned host allocator: the page-locked memory of pinned cpu tensors
// (Note [Pinned host memory] in loom/core/device_runtime.h), cached by size. Free of any
// GPU runtime: pinned memory and events come in through StagingRuntime, so the
// bookkeeping is unit-tested on the host.
//
// Note [Caching pinned host blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Page-locking memory takes the driver far longer than a copy of a batch (it maps and
// locks every page), so freed blocks are kept, as PyTorch's caching host allocator keeps
// them: a request rounds up to a power of two from 4 KiB and takes a cached block of
// exactly that size, else a new one. A copy that returns once queued (copy_async) records
// an event on its stream for the host block it reads or writes (record_use), and a freed
// block goes back to the cache but is handed out again only once every such event has
// completed: the host may drop a pinned tensor right after queuing its copy. A use whose
// event cannot be recorded (a stream of another device, no event) is reported, and the
// caller waits for its stream instead. Events are pooled per device. empty_cache returns
// the idle blocks whose copies have run; the plugin's shutdown waits for its devices first,
// so every block goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "caching_allocator.h"
#include "pinned_staging.h"

namespace loom::gpu {

class PinnedHostAllocator {
 public:
  static constexpr size_t kMinBlock = size_t{4} << 10;

  explicit PinnedHostAllocator(StagingRuntime& runtime) : runtime_(runtime) {}
  ~PinnedHostAllocator();
  PinnedHostAllocator(const PinnedHostAllocator&) = delete;
  PinnedHostAllocator& operator=(const PinnedHostAllocator&) = delete;

  // A block of at least nbytes (a cached one whose copies have run, or a new one); nullptr
  // when the runtime refuses to pin more memory.
  void* allocate(size_t nbytes);
  // Gives back a block from allocate(); it is reused once its recorded copies have run.
  void deallocate(void* ptr);

  enum class Use {
    NotPinned,  // ptr is in no block of this allocator
    Recorded,   // the block is held until the copy queued on the stream has run
    Failed,     // no event could be recorded: the caller waits for the stream
  };
  // The block `ptr` points into is read or written by a copy just queued on `stream` of
  // `device`.
  Use record_use(const void* ptr, int device, void* stream);
  // Returns the cached blocks whose copies have run to the runtime.
  void empty_cache();

  // The caching allocator's figures for pinned memory: held by tensors, reserved (cached
  // included), peaks, requests, cache hits, driver calls.
  MemoryStats stats() const;

  // The block size for nbytes (Note [Caching pinned host blocks]).
  static size_t block_size(size_t nbytes);

 private:
  struct Event {
    int device;
    void* event;
  };
  struct Block {
    size_t size;
    bool allocated;
    std::vector<Event> pending;  // recorded after copies that may not have run
  };
  // True when every copy of `b` has run; its completed events go back to the pool.
  bool idle(Block& b);           // mutex_ held
  void* take_event(int device);  // mutex_ held; nullptr when none can be made

  StagingRuntime& runtime_;
  mutable std::mutex mutex_;
  std::map<uintptr_t, Block> blocks_;  // by start address
  std::vector<Event> free_events_;
  MemoryStats stats_;
};

}  // namespace loom::gpu
