// The GPU plugins' caching allocator: device memory freed by a tensor goes back to a bin
// of its size class, for the stream it was allocated on, and the next allocation of that
// class on that stream takes it without calling the driver. Free of any GPU runtime: the
// driver's allocate/free come in through RawDeviceMemory, so the bookkeeping is unit-tested
// on the host.
//
// Note [Caching allocator]
// ~~~~~~~~~~~~~~~~~~~~~~~~
//  - Size classes: requests round up to a multiple of 512 bytes below 1 MiB, and above
//    that to the next of the four classes between consecutive powers of two (2^k,
//    1.25*2^k, 1.5*2^k, 1.75*2^k), so a cached block wastes at most a fifth of itself and
//    a training loop's repeating shapes hit the same bins step after step.
//  - Stream-aware reuse: a block belongs to the stream current when it was allocated
//    (the host's current stream of the device type, ABI 1.5). Work queued on one stream
//    runs in order, so a block freed after its last kernel was queued may be handed to
//    the next allocation on the same stream at once; another stream never gets it, since
//    its work could overtake the old user's. Using a tensor on a stream other than its
//    allocation stream therefore needs the user to order the streams (events), as in
//    PyTorch.
//  - When the driver refuses an allocation, every cached block of that device is
//    released and the allocation tried once more before out-of-memory is reported.
//  - empty_cache() returns all cached (free) blocks to the driver; live blocks stay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace loom::gpu {

// The driver's memory functions (cudaMalloc / hipMalloc and their frees).
class RawDeviceMemory {
 public:
  virtual ~RawDeviceMemory() = default;
  // nullptr when the device has no memory left for it.
  virtual void* allocate(int device, size_t nbytes) = 0;
  virtual void release(int device, void* ptr) = 0;
};

// Figures per device, in bytes and counts (the API's memory_stats).
struct MemoryStats {
  int64_t allocated_bytes = 0;       // held by live tensors (rounded to size classes)
  int64_t reserved_bytes = 0;        // obtained from the driver: allocated + cached
  int64_t peak_allocated_bytes = 0;  // since the start or reset_peak
  int64_t peak_reserved_bytes = 0;
  int64_t allocations = 0;         // allocate calls served
  int64_t cache_hits = 0;          // of them, served from a cached block
  int64_t driver_allocations = 0;  // calls into the driver
  int64_t driver_frees = 0;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(RawDeviceMemory& raw) : raw_(raw) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least nbytes on `device` for work on `stream`; nullptr when the device
  // is out of memory even after releasing the cache. nbytes == 0 gives a 512-byte block.
  void* allocate(int device, size_t nbytes, void* stream);
  // Returns a block from allocate() to its stream's bin. Unknown pointers are ignored
  // and counted (unknown_frees), never passed to the driver.
  void free(void* ptr);
  // Releases every cached block (of `device`, or of all devices when device < 0).
  void empty_cache(int device = -1);
  MemoryStats stats(int device) const;
  void reset_peak(int device);
  int64_t unknown_frees() const;

  // The size class of a request (Note [Caching allocator]).
  static size_t size_class(size_t nbytes);

 private:
  struct Block {
    int device;
    void* stream;
    size_t size;
  };
  struct BinKey {
    int device;
    void* stream;
    size_t size;
    bool operator<(const BinKey& o) const;
  };
  MemoryStats& stats_of(int device);
  void release_cached(int device);  // mutex_ held

  RawDeviceMemory& raw_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> live_;
  std::multimap<BinKey, void*> cached_;
  std::vector<MemoryStats> stats_;
  int64_t unknown_frees_ = 0;
};

}  // namespace loom::gpu
