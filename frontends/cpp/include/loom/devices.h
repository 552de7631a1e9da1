// Devices from C++: how many a device type has, their properties, waiting for their work,
// and the current device of a type on this thread (Note [Current device]).
//
//   int64_t n = loom::device_count("npu_sim");
//   loom::Tensor x = loom::ones({2, 3}).to("npu_sim:1");
//   { loom::DeviceGuard guard(loom::parse_device("npu_sim:1"));
//     loom::Tensor y = loom::empty({4},
//     loom::TensorOptions().device(loom::parse_device("npu_sim")));
//   }  // y is on npu_sim:1
//   loom::synchronize(x.device());
//   loom::MemoryStats m = loom::memory_stats(loom::parse_device("cuda:0"));
//
// Streams and events (Note [Current stream]): kernels and copies of a device type are
// queued on the thread's current stream, which a StreamGuard sets.
//
//   loom::Stream s = loom::Stream::create(loom::parse_device("npu_sim:0"));
//   loom::Event done(s.device());
//   { loom::StreamGuard guard(s); y = x * 2; done.record(s); }
//   done.wait(other);            // work queued on `other` after this runs after y
//   done.synchronize();          // or s.synchronize(): the host waits
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "loom/core/device.h"
#include "loom/core/device_runtime.h"

namespace loom {

// The number of devices of a registered type: 1 for cpu and meta; throws for an unknown
// type or a plugin device type that does not say.
int64_t device_count(std::string_view device_type);
DeviceProperties device_properties(Device device);
// Waits for all work queued on `device` (a no-op for cpu and meta).
void synchronize(Device device);

// A device's memory figures from its plugin's caching allocator (the plugin's
// "loom.device_memory.<type>" table, loom/device_memory_api.h), as torch.cuda.memory_stats
// gives. Throws "[device] ..." for cpu and meta, for a type whose plugin publishes no
// table, and for an index out of range.
struct MemoryStats {
  int64_t allocated_bytes = 0;       // held by live tensors (block sizes)
  int64_t reserved_bytes = 0;        // obtained from the driver: allocated + cached
  int64_t peak_allocated_bytes = 0;  // since the start or reset_peak_memory_stats
  int64_t peak_reserved_bytes = 0;
  int64_t allocations = 0;  // requests served
  int64_t cache_hits = 0;   // of them, from cached memory
  int64_t driver_allocations = 0;
  int64_t driver_frees = 0;
};
MemoryStats memory_stats(Device device);
// The pinned host memory a device type's plugin lends (Note [Pinned host memory]), as
// torch.cuda.host_memory_stats: bytes held by pinned tensors, reserved (cached included),
// peaks, requests, cache hits and driver calls. Throws "[device] ..." for a type whose
// plugin reports none. (loom::host_memory_stats() is the core's pageable host pool.)
MemoryStats pinned_memory_stats(std::string_view device_type);
// Whether the plugin of `device_type` ("cuda", or a device such as "cuda:0") lends pinned
// host memory (Tensor::pin_memory for it works): false for cpu, meta and unknown types.
bool lends_pinned_memory(std::string_view device_type);
// Every device whose plugin publishes memory statistics, by type then index: the devices
// memory_stats reports on (the profiler samples them; none for cpu and meta).
std::vector<Device> devices_with_memory_stats();
// Returns the device's cached memory to the driver (live tensors keep theirs); a device
// without an index ("cuda") means every device of the type.
void empty_cache(Device device);
void reset_peak_memory_stats(Device device);

// Makes `device` the current device of its type on this thread while alive.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  DeviceType type_;
  int16_t previous_;
};

// A stream of a device: a handle shared by copies, destroyed with the last one. The
// default stream of a device has a null handle.
class Stream {
 public:
  // A new stream on `device` (its index resolved); throws for cpu and meta.
  static Stream create(Device device);
  static Stream default_stream(Device device);
  Device device() const { return device_; }
  void* handle() const { return handle_.get(); }
  // Waits for the work queued on this stream.
  void synchronize() const;

 private:
  Stream(Device device, std::shared_ptr<void> handle)
      : device_(device), handle_(std::move(handle)) {}
  Device device_;
  std::shared_ptr<void> handle_;
};

// Makes `stream` (and its device) current for its device type on this thread while alive.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream stream_;  // kept alive while current
  int16_t previous_index_;
  void* previous_stream_;
};

// An event of a device: records a position in a stream's queue.
class Event {
 public:
  explicit Event(Device device);
  void record(const Stream& stream);
  // Makes work queued on `stream` after this call wait for the last record.
  void wait(const Stream& stream) const;
  // The host waits for the last record.
  void synchronize() const;

 private:
  Device device_;
  std::shared_ptr<void> handle_;
};

}  // namespace loom
