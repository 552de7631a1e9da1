// The pinned staging pool's bookkeeping (Note [Pinned staging]).
#include "pinned_staging.h"

#include <algorithm>
#include <bit>

namespace loom::gpu {

size_t PinnedStaging::block_size(size_t nbytes) {
  return std::bit_ceil(std::max(nbytes, kMinBlock));
}

PinnedStaging::~PinnedStaging() {
  // Only at unload, after the host has waited for its copies: every block goes.
  for (Block& b : blocks_) {
    runtime_.destroy_event(b.device, b.event);
    runtime_.release_pinned(b.ptr);
  }
}

bool PinnedStaging::reusable(Block& b) {
  if (b.leased) return false;
  if (b.pending && runtime_.event_done(b.device, b.event)) b.pending = false;
  return !b.pending;
}

void* PinnedStaging::acquire(int device, size_t nbytes) {
  if (nbytes < kMinCopy || nbytes > kMaxCopy) return nullptr;
  const size_t size = block_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  Block* best = nullptr;
  for (Block& b : blocks_) {
    if (b.device != device || b.size < size || (best != nullptr && b.size >= best->size)) continue;
    if (reusable(b)) best = &b;
  }
  if (best == nullptr) {
    if (pooled_ + size > kMaxPooled) release_idle(size);
    if (pooled_ + size > kMaxPooled) return nullptr;
    void* event = runtime_.create_event(device);
    if (event == nullptr) return nullptr;
    void* ptr = runtime_.allocate_pinned(size);
    if (ptr == nullptr) {
      runtime_.destroy_event(device, event);
      return nullptr;
    }
    pooled_ += size;
    blocks_.push_back({ptr, size, device, event, false, false});
    best = &blocks_.back();
  }
  best->leased = true;
  return best->ptr;
}

bool PinnedStaging::release_after(void* block, void* stream, bool queued) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Block& b : blocks_) {
    if (b.ptr != block) continue;
    if (queued) {
      if (!runtime_.record_event(b.device, b.event, stream)) return false;  // stays leased
      b.pending = true;
    }
    b.leased = false;
    return true;
  }
  return true;  // not a block of this pool: nothing to keep
}

void PinnedStaging::release_idle(size_t needed) {
  std::erase_if(blocks_, [&](Block& b) {
    if (pooled_ + needed <= kMaxPooled || !reusable(b)) return false;
    runtime_.destroy_event(b.device, b.event);
    runtime_.release_pinned(b.ptr);
    pooled_ -= b.size;
    return true;
  });
}

void PinnedStaging::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_idle(kMaxPooled + 1);  // never fits: every idle block goes
}

size_t PinnedStaging::pooled_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pooled_;
}

size_t PinnedStaging::block_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blocks_.size();
}

}  // namespace loom::gpu
