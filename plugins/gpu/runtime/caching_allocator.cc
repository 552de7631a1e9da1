// The caching allocator's bookkeeping (Note [Caching allocator]).
#include "caching_allocator.h"

#include <algorithm>
#include <bit>
#include <tuple>

namespace loom::gpu {

namespace {
constexpr size_t kSmallAlignment = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;
}  // namespace

bool CachingAllocator::BinKey::operator<(const BinKey& o) const {
  return std::tie(device, stream, size) < std::tie(o.device, o.stream, o.size);
}

size_t CachingAllocator::size_class(size_t nbytes) {
  if (nbytes <= kSmallLimit) {
    const size_t n = std::max<size_t>(nbytes, 1);
    return (n + kSmallAlignment - 1) / kSmallAlignment * kSmallAlignment;
  }
  // Quarter steps between powers of two: the step is a quarter of the power below.
  const size_t power = std::bit_floor(nbytes);
  const size_t step = power / 4;
  return (nbytes + step - 1) / step * step;
}

CachingAllocator::~CachingAllocator() {
  // Blocks still live belong to tensors the host has not freed (it frees every tensor
  // before unloading the plugin); only the cache is ours to return.
  empty_cache();
}

MemoryStats& CachingAllocator::stats_of(int device) {
  if (device >= static_cast<int>(stats_.size())) stats_.resize(device + 1);
  return stats_[device];
}

void* CachingAllocator::allocate(int device, size_t nbytes, void* stream) {
  const size_t size = size_class(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats& s = stats_of(device);
  void* ptr = nullptr;
  auto it = cached_.find(BinKey{device, stream, size});
  if (it != cached_.end()) {
    ptr = it->second;
    cached_.erase(it);
    ++s.cache_hits;
  } else {
    ptr = raw_.allocate(device, size);
    if (ptr == nullptr) {
      release_cached(device);
      ptr = raw_.allocate(device, size);
      if (ptr == nullptr) return nullptr;
    }
    ++s.driver_allocations;
    s.reserved_bytes += static_cast<int64_t>(size);
    s.peak_reserved_bytes = std::max(s.peak_reserved_bytes, s.reserved_bytes);
  }
  live_.emplace(ptr, Block{device, stream, size});
  ++s.allocations;
  s.allocated_bytes += static_cast<int64_t>(size);
  s.peak_allocated_bytes = std::max(s.peak_allocated_bytes, s.allocated_bytes);
  return ptr;
}

void CachingAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    ++unknown_frees_;
    return;
  }
  const Block block = it->second;
  live_.erase(it);
  stats_of(block.device).allocated_bytes -= static_cast<int64_t>(block.size);
  cached_.emplace(BinKey{block.device, block.stream, block.size}, ptr);
}

void CachingAllocator::release_cached(int device) {
  for (auto it = cached_.begin(); it != cached_.end();) {
    if (device >= 0 && it->first.device != device) {
      ++it;
      continue;
    }
    raw_.release(it->first.device, it->second);
    MemoryStats& s = stats_of(it->first.device);
    s.reserved_bytes -= static_cast<int64_t>(it->first.size);
    ++s.driver_frees;
    it = cached_.erase(it);
  }
}

void CachingAllocator::empty_cache(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached(device);
}

MemoryStats CachingAllocator::stats(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return device >= 0 && device < static_cast<int>(stats_.size()) ? stats_[device] : MemoryStats{};
}

void CachingAllocator::reset_peak(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats& s = stats_of(device);
  s.peak_allocated_bytes = s.allocated_bytes;
  s.peak_reserved_bytes = s.reserved_bytes;
}

int64_t CachingAllocator::unknown_frees() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unknown_frees_;
}

}  // namespace loom::gpu
