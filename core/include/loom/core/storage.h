// Storage: a refcounted block of device memory shared by a tensor and its views.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loom/core/allocator.h"
#include "loom/core/device.h"
#include "loom/core/ref_counted.h"

namespace loom {

class Storage final : public RefCounted {
 public:
  // Allocates nbytes on `device` through the device type's registered allocator.
  static Ref<Storage> allocate(size_t nbytes, Device device);
  // Allocates through `allocator` (a pinned host allocator, Note [Pinned host memory]);
  // the caller keeps the allocator alive until the storage has been created (a
  // ReadSection), after which the storage keeps its owner loaded.
  static Ref<Storage> allocate(size_t nbytes, Device device, Allocator& allocator);
  // Wraps memory owned elsewhere; `deleter(ctx, data)` runs when the storage dies
  // (DLPack import). deleter may be null for memory that outlives every tensor.
  static Ref<Storage> wrap(void* data, size_t nbytes, Device device,
                           void (*deleter)(void* ctx, void* data), void* ctx);

  // Replaces the memory with a block of `nbytes` that starts with the old bytes, when
  // nbytes is larger (PyTorch's storage resize); every tensor of the storage sees the new
  // block. Throws "[resize] ..." for memory loom does not own (wrapped, DLPack).
  void grow(size_t nbytes);

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // The allocator the memory came from; null for wrapped memory.
  Allocator* allocator() const { return allocator_; }

  // Note [Version counter]
  // ~~~~~~~~~~~~~~~~~~~~~~
  // Counts the writes to this storage, so to every view of it (PyTorch keeps one counter
  // per group of views, the same thing). The dispatcher bumps it after every op call from
  // the top that writes a tensor of it (a `Tensor(a!)` argument); autograd saves it with
  // a tensor and refuses a backward through one modified in place since.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version(uint64_t by = 1) { version_.fetch_add(by, std::memory_order_relaxed); }

  // Storage objects come from the core's per-thread small-block cache (Note [Small host
  // objects] in tensor_impl.cc).
  static void* operator new(size_t size);
  static void operator delete(void* object, size_t size);

 private:
  Storage() = default;
  ~Storage() override;

  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;  // null for wrapped memory
  void (*deleter_)(void*, void*) = nullptr;
  void* deleter_ctx_ = nullptr;
  std::atomic<uint64_t> version_{0};
};

}  // namespace loom
