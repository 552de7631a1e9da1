// Large host blocks: mapped from the OS in size classes, cached when freed, released
// past the cache limit or on empty_cache().
#include "large_host_blocks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <vector>

#include "loom/core/host_memory.h"

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_ASAN 1
#endif
#endif
#ifdef LOOM_ASAN
#include <sanitizer/asan_interface.h>
#define LOOM_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define LOOM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define LOOM_POISON(p, n) ((void)(p), (void)(n))
#define LOOM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace loom {
namespace large_host_blocks {

// Note [Large host blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// glibc maps every block of 128 KiB and more (its default mmap threshold, raised up to
// 32 MiB as it sees such blocks freed) and unmaps it on free, so every new large tensor
// page-faults on its first touch: a fresh 64 MiB output costs 16384 faults, which takes
// longer than the add that fills it. Like a GPU caching allocator, the pool keeps freed
// blocks for the next request of the same size class instead:
// - Classes: a request is rounded up to a whole page and then to an eighth of its power
//   of two (128 KiB, 144 KiB, 160 KiB, ..., 64 MiB, 72 MiB, ...), so at most 12.5% is
//   wasted and sizes that differ a little (the last batch of an epoch) share blocks.
// - Reuse is exact-class and last-freed-first (its pages are the likeliest in cache).
// - The cached bytes are capped (set_host_cache_limit). Freeing past the cap returns
//   the least recently freed blocks to the OS first; a block larger than the cap is
//   returned at once. A failed map empties the cache and tries once more.
// - Blocks of 2 MiB and more are 2 MiB aligned and advised as transparent huge pages
//   (MADV_HUGEPAGE, used when THP is in "madvise" mode), so a new block's first touch
//   faults 32x less often; see tools/bench/README.md for the measurement.
// - One mutex guards the pool: a large request is followed by at least 128 KiB of work.
// - Under AddressSanitizer cached blocks are poisoned, so a use after free still reports.
// The pool is never destroyed: tensors freed by static destructors at exit still return
// their blocks to it.

namespace {

constexpr size_t kPageBytes = 4096;
constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t default_cache_limit() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  size_t memory = pages > 0 && page_size > 0
                      ? static_cast<size_t>(pages) * static_cast<size_t>(page_size)
                      : size_t{8} << 30;
  return std::clamp(memory / 8, size_t{256} << 20, size_t{4} << 30);
}

struct CachedBlock {
  void* ptr;
  size_t bytes;
};

class Pool {
 public:
  Pool() { stats_.cache_limit_bytes = default_cache_limit(); }

  void* allocate(size_t class_bytes) {
    std::unique_lock<std::mutex> lock(mutex_);
    ++stats_.allocations;
    void* block = take_cached(class_bytes);
    if (block != nullptr) {
      ++stats_.cache_hits;
    } else {
      block = map(class_bytes);
      if (block == nullptr && stats_.cached_bytes > 0) {
        release_until(0);
        block = map(class_bytes);
      }
      if (block == nullptr) {
        --stats_.allocations;
        return nullptr;
      }
      ++stats_.os_maps;
      stats_.reserved_bytes += class_bytes;
      stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    }
    stats_.allocated_bytes += class_bytes;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return block;
  }

  void deallocate(void* block, size_t class_bytes) {
    std::unique_lock<std::mutex> lock(mutex_);
    stats_.allocated_bytes -= class_bytes;
    if (class_bytes > stats_.cache_limit_bytes) {
      unmap(block, class_bytes);
      return;
    }
    release_until(stats_.cache_limit_bytes - class_bytes);
    LOOM_POISON(block, class_bytes);
    lru_.push_back({block, class_bytes});
    by_class_[class_bytes].push_back(std::prev(lru_.end()));
    stats_.cached_bytes += class_bytes;
  }

  HostMemoryStats stats() {
    std::unique_lock<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peaks() {
    std::unique_lock<std::mutex> lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
  }

  void set_limit(size_t bytes) {
    std::unique_lock<std::mutex> lock(mutex_);
    stats_.cache_limit_bytes = bytes;
    release_until(bytes);
  }

  void empty() {
    std::unique_lock<std::mutex> lock(mutex_);
    release_until(0);
  }

  void set_huge_pages(bool enabled) {
    std::unique_lock<std::mutex> lock(mutex_);
    huge_pages_ = enabled;
  }

 private:
  using LruPosition = std::list<CachedBlock>::iterator;

  void* take_cached(size_t class_bytes) {
    auto it = by_class_.find(class_bytes);
    if (it == by_class_.end() || it->second.empty()) return nullptr;
    LruPosition position = it->second.back();
    it->second.pop_back();
    void* block = position->ptr;
    lru_.erase(position);
    stats_.cached_bytes -= class_bytes;
    LOOM_UNPOISON(block, class_bytes);
    return block;
  }

  // Returns the least recently freed blocks to the OS until at most `bytes` are cached.
  void release_until(size_t bytes) {
    while (stats_.cached_bytes > bytes) {
      CachedBlock oldest = lru_.front();
      std::vector<LruPosition>& same_class = by_class_[oldest.bytes];
      same_class.erase(std::find(same_class.begin(), same_class.end(), lru_.begin()));
      lru_.pop_front();
      stats_.cached_bytes -= oldest.bytes;
      LOOM_UNPOISON(oldest.ptr, oldest.bytes);
      unmap(oldest.ptr, oldest.bytes);
    }
  }

  // A fresh mapping of `bytes` (a multiple of the page size), 2 MiB aligned and advised
  // as huge pages when large enough; null when the OS refuses.
  void* map(size_t bytes) {
    const bool huge = huge_pages_ && bytes >= kHugePageBytes;
    const size_t slack = huge ? kHugePageBytes - kPageBytes : 0;
    void* raw =
        mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    auto start = reinterpret_cast<uintptr_t>(raw);
    if (!huge) return raw;
    uintptr_t aligned = (start + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
    if (aligned > start) munmap(raw, aligned - start);
    uintptr_t end = start + bytes + slack;
    if (end > aligned + bytes)
      munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
    madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(aligned);
  }

  void unmap(void* block, size_t bytes) {
    munmap(block, bytes);
    ++stats_.os_unmaps;
    stats_.reserved_bytes -= bytes;
  }

  std::mutex mutex_;
  std::list<CachedBlock> lru_;  // cached blocks, least recently freed first
  std::map<size_t, std::vector<LruPosition>> by_class_;
  HostMemoryStats stats_;
  bool huge_pages_ = true;
};

Pool& pool() {
  static Pool* pool = new Pool();  // never destroyed (see the Note)
  return *pool;
}

}  // namespace

size_t class_bytes(size_t nbytes) {
  size_t pages = (nbytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  size_t power = size_t{1} << (63 - __builtin_clzll(pages));
  size_t step = std::max(power / 8, kPageBytes);
  return (pages + step - 1) / step * step;
}

void* allocate(size_t nbytes) {
  return pool().allocate(class_bytes(nbytes));
}

void deallocate(void* block, size_t nbytes) {
  pool().deallocate(block, class_bytes(nbytes));
}

}  // namespace large_host_blocks

HostMemoryStats host_memory_stats() {
  return large_host_blocks::pool().stats();
}

void reset_peak_host_memory_stats() {
  large_host_blocks::pool().reset_peaks();
}

void empty_cache() {
  large_host_blocks::pool().empty();
}

void set_host_cache_limit(size_t bytes) {
  large_host_blocks::pool().set_limit(bytes);
}

void set_host_huge_pages(bool enabled) {
  large_host_blocks::pool().set_huge_pages(enabled);
}

}  // namespace loom
