// The GPU plugins' pinned staging blocks for copies to the device: a copy's source is
// copied into a block of page-locked host memory and the DMA reads the block, so the copy
// returns without waiting for the stream. Free of any GPU runtime: pinned memory and
// events come in through StagingRuntime, so the bookkeeping is unit-tested on the host.
//
// Note [Pinned staging]
// ~~~~~~~~~~~~~~~~~~~~~
// The runtime's own path for a copy from pageable memory stages through its pinned
// buffers in chunks and returns only when all but the last chunk have been moved, and
// those moves wait behind the kernels already queued on the stream: a training loop's
// batch copy waits for the previous step to finish. A copy from pinned memory is truly
// asynchronous but its source must outlive the DMA, which the host does not promise (it
// frees a temporary at once), so such a copy used to wait for the stream. Staging serves
// both: copy() takes a block, copies the source into it with memcpy, queues the DMA from
// the block and records an event after it; the block goes back to the pool and is handed
// out again only once its event has completed, so its bytes are never overwritten under
// a pending DMA. Only copies from 64 KiB to 16 MiB are staged: below, the runtime's path
// from pageable memory already returns at once (a training step's scalars cost no pool
// traffic; a small pinned source still waits), above, the memcpy would cost more than the
// wait it saves. Blocks are powers of two from 64 KiB, one pool per process, at most
// 256 MiB of them (idle blocks are returned to make room); a copy that finds every block
// busy and no room takes the runtime's path as before, and one whose event cannot be
// recorded waits for its stream. empty_cache returns idle blocks; the plugin's shutdown
// waits for its devices first, so every block goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace loom::gpu {

// The runtime calls the pool needs (cudaHostAlloc, events; hip* on ROCm).
class StagingRuntime {
 public:
  virtual ~StagingRuntime() = default;
  virtual void* allocate_pinned(size_t nbytes) = 0;  // nullptr when refused
  virtual void release_pinned(void* ptr) = 0;
  virtual void* create_event(int device) = 0;  // nullptr when refused
  virtual void destroy_event(int device, void* event) = 0;
  virtual bool record_event(int device, void* event, void* stream) = 0;  // false on failure
  virtual bool event_done(int device, void* event) = 0;                  // every work before it ran
};

class PinnedStaging {
 public:
  static constexpr size_t kMinBlock = size_t{64} << 10;
  static constexpr size_t kMinCopy = kMinBlock;
  static constexpr size_t kMaxCopy = size_t{16} << 20;
  static constexpr size_t kMaxPooled = size_t{256} << 20;

  explicit PinnedStaging(StagingRuntime& runtime) : runtime_(runtime) {}
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // A block of at least nbytes for a copy on `device`, no longer read by any earlier
  // copy; nullptr when the copy is too small or too large to stage, or every block is
  // busy and the pool is full (the caller then copies without staging).
  void* acquire(int device, size_t nbytes);
  // Gives back a block from acquire() after its copy was queued on `stream`: it is reused
  // once that copy has run. `queued` false (the copy failed, or the caller waited for
  // it): reusable at once. False when the event could not be recorded: the block stays
  // leased, and the caller waits for the stream and gives it back with queued false.
  bool release_after(void* block, void* stream, bool queued);
  // Returns every idle block (and those whose copies have run) to the runtime.
  void empty_cache();
  size_t pooled_bytes() const;
  size_t block_count() const;

  // The block size for nbytes (Note [Pinned staging]).
  static size_t block_size(size_t nbytes);

 private:
  struct Block {
    void* ptr;
    size_t size;
    int device;
    void* event;   // recorded after the block's last copy, on `device`
    bool leased;   // between acquire and release_after
    bool pending;  // its event was recorded and may not have completed
  };
  bool reusable(Block& b);  // mutex_ held
  // Returns idle blocks (any device, any size) until `needed` more bytes fit under
  // kMaxPooled; mutex_ held.
  void release_idle(size_t needed);

  StagingRuntime& runtime_;
  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
  size_t pooled_ = 0;
};

}  // namespace loom::gpu
