// What the host asks of a device type beyond memory: how many devices it has, their
// properties, synchronisation and raw copies between host and device memory; and which
// device of each type is current on a thread. A plugin's device type provides it through
// its LoomDeviceInterface (the dispatcher's PluginDeviceAllocator); cpu and meta have none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "loom/core/device.h"

namespace loom {

struct DeviceProperties {
  std::string name;
  int64_t total_memory_bytes = 0;
  int32_t compute_units = 0;
};

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };

class Allocator;

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  // -1 when the device type does not say.
  virtual int32_t device_count() const = 0;
  // Each throws loom::Error("device", ...) when the plugin fails or lacks the function.
  virtual DeviceProperties properties(int16_t index) const = 0;
  virtual void synchronize(int16_t index) const = 0;
  // Copies nbytes between host memory and device `index` (or within it), on its current
  // stream, and waits for the copy to finish (a copy to a device whose plugin releases
  // the source on return is not waited for: LOOM_DEVICE_COPY_TO_DEVICE_RELEASES_SOURCE).
  virtual void copy(CopyKind kind, int16_t index, void* dst, const void* src,
                    size_t nbytes) const = 0;
  // Whether copy() can move bytes: false for a plugin whose device interface has no copy,
  // as the ABI 1.0 and 1.1 guides taught (its copy_ kernel moves them; Note [Copies
  // through a backend's copy_ kernel] in ops/src/device_copy.cc).
  virtual bool has_copy() const { return true; }
  // Whether the backend's pointwise kernels take a 0-dim CPU input as it is and read it
  // by value (LOOM_DEVICE_TAKES_HOST_SCALARS; Note [Host scalars by value] in
  // ops/src/structured_ops.cc): then a C++ number used with the device's tensors is never
  // copied to the device.
  virtual bool takes_host_scalars() const { return false; }
  // Who serves the device type, for messages: "plugin 'acme'".
  virtual std::string provider() const = 0;
  // Note [Pinned host memory]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~
  // A device type whose plugin has host_allocate (ABI 1.8) lends page-locked host memory:
  // pinned_host_allocator() makes cpu storages of it, which Tensor::is_pinned() reports
  // and Tensor::pin_memory() or TensorOptions::pinned_memory(true) create. A copy_ asked
  // to be non-blocking between such a tensor and that type's device goes through
  // copy_async: queued on the current stream and not waited for, so the host goes on
  // while the DMA runs (the caller synchronises before reading a copy to the host, as in
  // PyTorch). The plugin keeps a freed block from being handed out again until the
  // copies queued on it have run, so dropping the tensor early is safe. Every other copy
  // (pageable host memory, another type's pinned memory, a copy through a temporary)
  // waits as copy() does.
  //
  // Null when the plugin lends no pinned memory.
  virtual Allocator* pinned_host_allocator() const { return nullptr; }
  // As copy(), but returns once the copy is queued (the plugin's copy_async), or copies
  // and waits when the plugin has none. The host side must be memory of
  // pinned_host_allocator().
  virtual void copy_async(CopyKind kind, int16_t index, void* dst, const void* src,
                          size_t nbytes) const {
    copy(kind, index, dst, src, nbytes);
  }
  // Streams and events: opaque handles of the plugin; a stream or event alive keeps its
  // plugin loaded. A null stream is the device's default stream.
  virtual void* stream_create(int16_t index) const = 0;
  virtual void stream_destroy(int16_t index, void* stream) const = 0;
  virtual void stream_synchronize(int16_t index, void* stream) const = 0;
  virtual void* event_create(int16_t index) const = 0;
  virtual void event_destroy(int16_t index, void* event) const = 0;
  virtual void event_record(int16_t index, void* event, void* stream) const = 0;
  // Work queued on `stream` after this waits for the event's last record.
  virtual void event_wait(int16_t index, void* event, void* stream) const = 0;
  virtual void event_synchronize(int16_t index, void* event) const = 0;
};

// The pinned host allocator of device type `type` (Note [Pinned host memory]), or with
// `type` -1 that of the first plugin device type, by id, that lends pinned memory and has
// a device (PyTorch pins for its one accelerator). Throws "[<op>] ..." when there is none.
// Valid inside a ReadSection.
Allocator& pinned_host_allocator(DeviceType type, std::string_view op);

// The device runtime of `type`, or nullptr (cpu, meta, unknown types). Valid inside a
// ReadSection or while a storage of that type is alive (the plugin cannot unload then).
const DeviceRuntime* find_device_runtime(DeviceType type);

// Note [Current device]
// ~~~~~~~~~~~~~~~~~~~~~
// Each thread has a current device index per device type, 0 until a DeviceGuard changes
// it. A device given without an index ("npu_sim") means that device: tensors made on it
// get the resolved index, so they mix with tensors made on "npu_sim:0". An index beyond
// the type's device count is refused when memory is allocated on it.
int16_t current_device_index(DeviceType type);
void set_current_device_index(DeviceType type, int16_t index);
// Note [Current stream]
// ~~~~~~~~~~~~~~~~~~~~~
// Each thread has a current stream per device type (null: the default stream), set with a
// stream guard together with the current device. Every kernel call for that type's backend
// carries it (LoomKernelCall::stream), and copies on and off the device are queued on it.
void* current_stream(DeviceType type);
void set_current_stream(DeviceType type, void* stream);
// The current stream of the device type a backend key serves (null for cpu and meta): the
// kernel call's fast path.
void* current_stream_of_backend(DispatchKey backend);

// `device` with index -1 replaced by the current index (cpu and meta keep -1), checked
// against the type's device count; throws "[device] npu_sim:5 does not exist ...".
Device resolve_device(Device device);

}  // namespace loom
