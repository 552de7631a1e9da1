// The host memory pool behind the core's CPU allocator: its statistics, its cache limit,
// huge pages and empty_cache() (Note [Large host blocks]).
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom {

// Figures of the large-block pool: blocks of kLargeHostBlockBytes and more, which the CPU
// allocator maps from the OS and keeps for reuse when freed. Smaller blocks are served
// by per-thread free lists and glibc and are not counted here. Byte counts are block
// sizes (requests rounded up to the block's size class).
struct HostMemoryStats {
  size_t allocated_bytes = 0;       // in blocks that tensors hold now
  size_t peak_allocated_bytes = 0;  // since the start or reset_peak_host_memory_stats()
  size_t cached_bytes = 0;          // in free blocks kept for reuse
  size_t reserved_bytes = 0;        // mapped from the OS: allocated + cached
  size_t peak_reserved_bytes = 0;
  size_t cache_limit_bytes = 0;  // cached_bytes never exceeds it
  uint64_t allocations = 0;      // large blocks handed out
  uint64_t cache_hits = 0;       // ... of which came from the cache
  uint64_t os_maps = 0;          // blocks mapped from the OS
  uint64_t os_unmaps = 0;        // blocks returned to the OS
};

// Requests of this many bytes and more are served by the large-block pool.
inline constexpr size_t kLargeHostBlockBytes = size_t{128} << 10;

HostMemoryStats host_memory_stats();
// Sets the peaks to the current values.
void reset_peak_host_memory_stats();

// Returns every cached (free) block of the pool to the OS; live tensors keep theirs.
void empty_cache();

// The most bytes the pool keeps in free blocks; freeing past it returns the least
// recently freed blocks to the OS. 0 turns caching off (every free unmaps). The default
// is an eighth of the machine's memory, between 256 MiB and 4 GiB. Lowering it releases
// cached blocks at once.
void set_host_cache_limit(size_t bytes);

// Whether blocks of 2 MiB and more are 2 MiB aligned and advised as transparent huge
// pages (madvise(MADV_HUGEPAGE)), so their first touch faults once per 2 MiB instead of
// once per 4 KiB. On by default; applies to blocks mapped after the call.
void set_host_huge_pages(bool enabled);

}  // namespace loom
