// The pinned host allocator's bookkeeping (Note [Caching pinned host blocks]).
#include "pinned_host_allocator.h"

#include <algorithm>
#include <bit>

namespace loom::gpu {

size_t PinnedHostAllocator::block_size(size_t nbytes) {
  return std::bit_ceil(std::max(nbytes, kMinBlock));
}

PinnedHostAllocator::~PinnedHostAllocator() {
  // Only at unload, after the host has waited for the devices: every block goes.
  for (auto& [address, block] : blocks_) {
    for (const Event& e : block.pending) runtime_.destroy_event(e.device, e.event);
    runtime_.release_pinned(reinterpret_cast<void*>(address));
  }
  for (const Event& e : free_events_) runtime_.destroy_event(e.device, e.event);
}

bool PinnedHostAllocator::idle(Block& b) {
  std::erase_if(b.pending, [&](const Event& e) {
    if (!runtime_.event_done(e.device, e.event)) return false;
    free_events_.push_back(e);
    return true;
  });
  return b.pending.empty();
}

void* PinnedHostAllocator::take_event(int device) {
  for (auto it = free_events_.begin(); it != free_events_.end(); ++it) {
    if (it->device != device) continue;
    void* event = it->event;
    free_events_.erase(it);
    return event;
  }
  return runtime_.create_event(device);
}

void* PinnedHostAllocator::allocate(size_t nbytes) {
  const size_t size = block_size(nbytes);
  const auto bytes = static_cast<int64_t>(size);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.allocations;
  for (auto& [address, block] : blocks_) {
    if (block.allocated || block.size != size || !idle(block)) continue;
    block.allocated = true;
    stats_.allocated_bytes += bytes;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    ++stats_.cache_hits;
    return reinterpret_cast<void*>(address);
  }
  void* ptr = runtime_.allocate_pinned(size);
  if (ptr == nullptr) {
    --stats_.allocations;
    return nullptr;
  }
  blocks_.emplace(reinterpret_cast<uintptr_t>(ptr), Block{size, true, {}});
  ++stats_.driver_allocations;
  stats_.allocated_bytes += bytes;
  stats_.reserved_bytes += bytes;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  return ptr;
}

void PinnedHostAllocator::deallocate(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == blocks_.end() || !it->second.allocated) return;  // not a live block of ours
  it->second.allocated = false;
  stats_.allocated_bytes -= static_cast<int64_t>(it->second.size);
}

PinnedHostAllocator::Use PinnedHostAllocator::record_use(const void* ptr, int device,
                                                         void* stream) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) return Use::NotPinned;
  --it;
  if (address >= it->first + it->second.size) return Use::NotPinned;
  void* event = take_event(device);
  if (event == nullptr) return Use::Failed;
  if (!runtime_.record_event(device, event, stream)) {
    free_events_.push_back({device, event});
    return Use::Failed;
  }
  it->second.pending.push_back({device, event});
  return Use::Recorded;
}

void PinnedHostAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    Block& block = it->second;
    if (block.allocated || !idle(block)) {
      ++it;
      continue;
    }
    runtime_.release_pinned(reinterpret_cast<void*>(it->first));
    stats_.reserved_bytes -= static_cast<int64_t>(block.size);
    ++stats_.driver_frees;
    it = blocks_.erase(it);
  }
  for (const Event& e : free_events_) runtime_.destroy_event(e.device, e.event);
  free_events_.clear();
}

MemoryStats PinnedHostAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace loom::gpu
