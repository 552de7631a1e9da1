// Per-device-type allocators, registered at run time, and the observers that see every
// allocation (the profiler counts bytes through them).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "loom/core/device.h"

namespace loom {

class DeviceRuntime;

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory for nbytes (nbytes may be 0: return any non-null or null pointer).
  // Throws loom::Error when out of memory.
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
  // Who provides it, for messages: "core", "plugin 'npu'".
  virtual std::string owner() const = 0;
  // Called when a storage of this allocator is created or destroyed; plugins count
  // live objects through it (see PluginRecord).
  virtual void on_storage_created() {}
  virtual void on_storage_destroyed() {}
  // The device type's runtime (count, properties, copies), for plugin device types.
  virtual const DeviceRuntime* runtime() const { return nullptr; }
  // True for a device type's allocator of pinned host memory (Note [Pinned host memory]):
  // its cpu storages are what Tensor::is_pinned() reports.
  virtual bool pins_host_memory() const { return false; }
};

struct AllocationEvent {
  Device device;
  const void* ptr;
  size_t nbytes;
  bool is_free;  // false: allocation
};
using AllocationObserver = std::function<void(const AllocationEvent&)>;

// Note [Allocator registry]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// One slot per device type holding a stack of registrations; the top is published in
// an atomic pointer read inside a ReadSection, so allocation never locks. Removing a
// registration republishes the one below it and waits for readers before the
// allocator can be destroyed by its owner. The core registers a CPU allocator (aligned
// host memory) so tensors exist before any plugin loads; a CPU plugin may override it.
class AllocatorRegistry {
 public:
  static AllocatorRegistry& instance();

  // `allocator` must outlive the returned registration id's removal. Returns an id.
  uint64_t add(DeviceType type, Allocator* allocator);
  void remove(uint64_t registration_id);

  // Throws loom::Error when the type has no allocator.
  Allocator& get(DeviceType type) const;
  Allocator* find(DeviceType type) const;

  uint64_t add_observer(AllocationObserver observer);
  void remove_observer(uint64_t id);
  bool has_observers() const;
  void notify(const AllocationEvent& event) const;

 private:
  AllocatorRegistry();
  struct Impl;
  Impl* impl_;
};

// The core's host-memory allocator (64-byte aligned).
Allocator& cpu_allocator();

}  // namespace loom
