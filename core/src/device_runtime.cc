// The current device per thread and type, device index resolution, and the lookup of a
// device type's runtime through its allocator (Note [Current device]) and of the pinned
// host memory a device type lends (Note [Pinned host memory]).
#include "loom/core/device_runtime.h"

#include <array>

#include "loom/core/allocator.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom {
namespace {

thread_local std::array<int16_t, kMaxDeviceTypes> tls_current_index{};
thread_local std::array<void*, kNumBackends> tls_current_stream{};  // by backend key

int backend_slot(DeviceType type) {
  DispatchKey backend = DeviceTypeRegistry::instance().backend(type);
  LOOM_CHECK(is_backend_key(backend), "device", "device type ", type, " has no backend");
  return static_cast<int>(backend);
}

}  // namespace

const DeviceRuntime* find_device_runtime(DeviceType type) {
  Allocator* allocator = AllocatorRegistry::instance().find(type);
  return allocator == nullptr ? nullptr : allocator->runtime();
}

int16_t current_device_index(DeviceType type) {
  return type >= 0 && type < kMaxDeviceTypes ? tls_current_index[type] : 0;
}

void set_current_device_index(DeviceType type, int16_t index) {
  LOOM_CHECK(type >= 0 && type < kMaxDeviceTypes, "device", "device type ", type,
             " is out of range");
  LOOM_CHECK(index >= 0, "device", "a current device index must be >= 0, found ", index);
  tls_current_index[type] = index;
}

void* current_stream(DeviceType type) {
  if (type == kCPU || type == kMeta) return nullptr;
  return tls_current_stream[backend_slot(type)];
}

void set_current_stream(DeviceType type, void* stream) {
  LOOM_CHECK(type != kCPU && type != kMeta, "device", "cpu and meta have no streams");
  tls_current_stream[backend_slot(type)] = stream;
}

void* current_stream_of_backend(DispatchKey backend) {
  return is_backend_key(backend) ? tls_current_stream[static_cast<int>(backend)] : nullptr;
}

Device resolve_device(Device device) {
  if (device.type == kCPU || device.type == kMeta) return device;
  if (device.index < 0) device.index = current_device_index(device.type);
  if (const DeviceRuntime* runtime = find_device_runtime(device.type)) {
    const int32_t count = runtime->device_count();
    if (count >= 0 && device.index >= count) {
      std::string name = DeviceTypeRegistry::instance().name(device.type);
      fail("device", device.to_string(), " does not exist: ", name, " has ", count, " device",
           count == 1 ? "" : "s",
           count > 0 ? str_cat(" (", name, ":0..", name, ":", count - 1, ")") : std::string());
    }
  }
  return device;
}

Allocator& pinned_host_allocator(DeviceType type, std::string_view op) {
  const DeviceTypeRegistry& registry = DeviceTypeRegistry::instance();
  if (type >= 0) {
    const DeviceRuntime* runtime = find_device_runtime(type);
    Allocator* pinned = runtime == nullptr ? nullptr : runtime->pinned_host_allocator();
    LOOM_CHECK(pinned != nullptr, std::string(op),
               "expected a device type whose plugin lends pinned host ",
               "memory (host_allocate in its device interface), found ",
               registry.is_registered(type) ? registry.name(type) : str_cat("type ", type),
               ", which lends none");
    return *pinned;
  }
  std::string seen;
  for (DeviceType t = kMeta + 1; t < kMaxDeviceTypes; ++t) {
    if (!registry.is_registered(t)) continue;
    const DeviceRuntime* runtime = find_device_runtime(t);
    if (runtime == nullptr) continue;
    Allocator* pinned = runtime->pinned_host_allocator();
    const int32_t count = runtime->device_count();
    if (pinned != nullptr && count != 0) return *pinned;
    seen += str_cat(seen.empty() ? "" : ", ", registry.name(t),
                    pinned == nullptr ? " (lends none)" : " (0 devices)");
  }
  fail(std::string(op),
       "expected a loaded device plugin with a device that lends pinned host memory ",
       "(host_allocate in its device interface), found ",
       seen.empty() ? std::string("no plugin device type") : seen);
}

}  // namespace loom
