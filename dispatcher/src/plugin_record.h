// PluginRecord: the host's state for one loaded plugin (it is the ABI's
// LoomPluginContext). Private to the plugin host and the host services.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "loom/core/allocator.h"
#include "loom/core/device_runtime.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/plugin.h"

namespace loom::dispatch {

struct PluginRecord;

// Note [Plugin lifetime]
// ~~~~~~~~~~~~~~~~~~~~~~
// Objects whose destruction runs plugin code keep the plugin loaded: a storage from a
// plugin's device allocator increments the plugin's live_objects, and unload() is
// refused while it is non-zero. Kernels do not need counting: unload first removes
// every registration of the plugin, then waits for readers
// (Note [Lock-free dispatch and safe unload]), so no call can be inside the plugin
// when the library is closed. Errors a plugin returns are destroyed by the host as
// soon as it has copied their message.
// The pinned host memory a device type's plugin lends (Note [Pinned host memory]): cpu
// storages made through host_allocate, each counted as an object of the plugin.
class PluginPinnedHostAllocator final : public Allocator {
 public:
  PluginPinnedHostAllocator(PluginRecord* plugin, const LoomDeviceInterface* device,
                            const std::string* device_type_name)
      : plugin_(plugin), device_(device), device_type_name_(device_type_name) {}
  void* allocate(size_t nbytes, Device device) override;
  void deallocate(void* ptr, size_t nbytes, Device device) override;
  std::string owner() const override;
  void on_storage_created() override;
  void on_storage_destroyed() override;
  bool pins_host_memory() const override { return true; }

 private:
  PluginRecord* plugin_;
  const LoomDeviceInterface* device_;
  const std::string* device_type_name_;
};

class PluginDeviceAllocator final : public Allocator, public DeviceRuntime {
 public:
  PluginDeviceAllocator(PluginRecord* plugin, const LoomDeviceInterface* device,
                        std::string device_type_name)
      : plugin_(plugin),
        device_(device),
        device_type_name_(std::move(device_type_name)),
        pinned_(plugin, device, &device_type_name_) {}
  void* allocate(size_t nbytes, Device device) override;
  void deallocate(void* ptr, size_t nbytes, Device device) override;
  std::string owner() const override;
  void on_storage_created() override;
  void on_storage_destroyed() override;
  const DeviceRuntime* runtime() const override { return this; }
  // The device interface's device_count (asked once), or -1 when it has none or it fails.
  int32_t device_count() const override;
  DeviceProperties properties(int16_t index) const override;
  void synchronize(int16_t index) const override;
  void copy(CopyKind kind, int16_t index, void* dst, const void* src, size_t nbytes) const override;
  bool has_copy() const override;
  bool takes_host_scalars() const override;
  std::string provider() const override { return owner(); }
  void* stream_create(int16_t index) const override;
  void stream_destroy(int16_t index, void* stream) const override;
  void stream_synchronize(int16_t index, void* stream) const override;
  void* event_create(int16_t index) const override;
  void event_destroy(int16_t index, void* event) const override;
  void event_record(int16_t index, void* event, void* stream) const override;
  void event_wait(int16_t index, void* event, void* stream) const override;
  void event_synchronize(int16_t index, void* event) const override;
  // Pinned host memory and copies that return once queued (ABI 1.8).
  Allocator* pinned_host_allocator() const override;
  void copy_async(CopyKind kind, int16_t index, void* dst, const void* src,
                  size_t nbytes) const override;

 private:
  // LOOM_COPY_HOST_TO_DEVICE and the others.
  static LoomCopyKind abi_copy_kind(CopyKind kind);
  // Throws unless the interface has `present` (a non-null function it claims to have).
  void require(bool present, const char* function) const;
  // Throws the plugin's error, if any, as "[device] plugin 'x' failed to <what>: ...".
  void check(LoomError* err, const std::string& what) const;
  // check() for a wait, whose LOOM_STATUS_INVALID_ARGUMENT "[op] ..." is the error of an
  // op queued before it, found by its kernel: raised as that op's error.
  void check_wait(LoomError* err, const std::string& what) const;

  PluginRecord* plugin_;
  const LoomDeviceInterface* device_;
  std::string device_type_name_;
  mutable std::atomic<int32_t> device_count_{-2};  // -2: not asked yet
  mutable PluginPinnedHostAllocator pinned_;
};

struct PluginRecord {
  Registrant registrant;  // name and file; registrations point at this
  std::string version;
  boost::dll::shared_library library;
  const LoomPluginApi* api = nullptr;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  std::vector<std::pair<std::string, std::string>> options;  // as initialised, sorted
  std::atomic<int64_t> live_objects{0};

  std::mutex mutex;      // guards the fields below (plugins may register from any thread)
  bool closing = false;  // unloading: no new device types
  std::vector<int16_t> device_types;
  std::vector<std::string> device_type_names;
  std::vector<std::string> backends;
  std::vector<uint64_t> allocator_registrations;
  std::vector<uint64_t> observer_registrations;  // AllocatorRegistry observer ids
  std::vector<std::unique_ptr<PluginDeviceAllocator>> allocators;
  std::map<std::string, std::string> attributes;
  std::map<std::string, std::map<std::string, uint64_t>> capabilities;

  LoomPluginContext* context() { return reinterpret_cast<LoomPluginContext*>(this); }
  static PluginRecord* from(LoomPluginContext* ctx) { return reinterpret_cast<PluginRecord*>(ctx); }
};

// Allocation observers registered through the ABI are handed out as registrations with
// this bit set, so deregister tells them from dispatcher registrations.
inline constexpr uint64_t kObserverRegistrationBit = uint64_t{1} << 63;
// The tracer (set_tracer) likewise.
inline constexpr uint64_t kTracerRegistrationBit = uint64_t{1} << 62;

// The host services table handed to every plugin.
const LoomHostApi* host_api();

}  // namespace loom::dispatch
