// Device counts, properties, synchronisation and the current-device guard, through the
// device types' runtimes.
#include "loom/devices.h"

#include <string>

#include "loom/core/error.h"
#include "loom/core/read_section.h"

namespace loom {
namespace {

// The runtime of a plugin device type; throws for cpu/meta (callers handle them) and for
// types without one.
const DeviceRuntime& runtime_for(DeviceType type, const char* what) {
  const DeviceRuntime* runtime = find_device_runtime(type);
  LOOM_CHECK(runtime != nullptr, "device", "device type '",
             DeviceTypeRegistry::instance().name(type), "' has no device runtime to ", what);
  return *runtime;
}

DeviceType known_type(std::string_view name) {
  DeviceType type = DeviceTypeRegistry::instance().find(name);
  LOOM_CHECK(type >= 0, "device", "unknown device type '", name,
             "' (is the plugin that provides it loaded?)");
  return type;
}

}  // namespace

int64_t device_count(std::string_view device_type) {
  DeviceType type = known_type(device_type);
  if (type == kCPU || type == kMeta) return 1;
  ReadSection section;
  int32_t count = runtime_for(type, "count devices").device_count();
  LOOM_CHECK(count >= 0, "device", "device type '", device_type,
             "' does not report its device count");
  return count;
}

DeviceProperties device_properties(Device device) {
  if (device.type == kCPU || device.type == kMeta) {
    return DeviceProperties{DeviceTypeRegistry::instance().name(device.type), 0, 0};
  }
  ReadSection section;
  device = resolve_device(device);
  return runtime_for(device.type, "report properties").properties(device.index);
}

void synchronize(Device device) {
  if (device.type == kCPU || device.type == kMeta) return;
  ReadSection section;
  device = resolve_device(device);
  runtime_for(device.type, "synchronize").synchronize(device.index);
}

DeviceGuard::DeviceGuard(Device device)
    : type_(device.type), previous_(current_device_index(device.type)) {
  if (device.type != kCPU && device.type != kMeta) {
    set_current_device_index(type_, resolve_device(device).index);
  }
}

DeviceGuard::~DeviceGuard() {
  if (type_ != kCPU && type_ != kMeta) set_current_device_index(type_, previous_);
}

}  // namespace loom
