// Device values and the run-time registry of device types.
#include "loom/core/device.h"

#include <array>
#include <atomic>
#include <charconv>
#include <mutex>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom {

struct DeviceTypeRegistry::Impl {
  mutable std::mutex mutex;
  std::array<std::string, kMaxDeviceTypes> names;              // guarded by mutex
  std::array<std::atomic<uint8_t>, kMaxDeviceTypes> backends;  // Undefined when free
  int next = 2;                                                // guarded by mutex
};

DeviceTypeRegistry& DeviceTypeRegistry::instance() {
  static DeviceTypeRegistry* registry = new DeviceTypeRegistry();  // never destroyed
  return *registry;
}

DeviceTypeRegistry::DeviceTypeRegistry() : impl_(new Impl) {
  for (auto& b : impl_->backends) b.store(static_cast<uint8_t>(DispatchKey::Undefined));
  impl_->names[kCPU] = "cpu";
  impl_->names[kMeta] = "meta";
  impl_->backends[kCPU].store(static_cast<uint8_t>(DispatchKey::CPU));
  impl_->backends[kMeta].store(static_cast<uint8_t>(DispatchKey::Meta));
}

static bool valid_device_type_name(std::string_view name) {
  if (name.empty() || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

DeviceType DeviceTypeRegistry::register_type(std::string_view name, DispatchKey backend) {
  LOOM_CHECK(valid_device_type_name(name), "device", "invalid device type name '", name,
             "' (expected [a-z][a-z0-9_]*)");
  LOOM_CHECK(is_backend_key(backend), "device", "device type '", name,
             "' must be served by a backend key, found ", dispatch_key_name(backend));
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (int i = 0; i < impl_->next; ++i) {
    LOOM_CHECK(impl_->names[i] != name, "device", "device type '", name, "' is already registered");
  }
  // Reuse the id of an unregistered type first, so load/unload cycles never run out.
  int free_id = -1;
  for (int i = 2; i < impl_->next && free_id < 0; ++i) {
    if (!is_registered(static_cast<DeviceType>(i))) free_id = i;
  }
  LOOM_CHECK(free_id >= 0 || impl_->next < kMaxDeviceTypes, "device",
             "cannot register device type '", name, "': all ", kMaxDeviceTypes,
             " device type ids are in use");
  DeviceType type = static_cast<DeviceType>(free_id >= 0 ? free_id : impl_->next++);
  impl_->names[type] = std::string(name);
  impl_->backends[type].store(static_cast<uint8_t>(backend), std::memory_order_release);
  return type;
}

void DeviceTypeRegistry::unregister_type(DeviceType type) {
  LOOM_CHECK(type >= 2 && type < kMaxDeviceTypes, "device", "cannot unregister device type ", type);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  LOOM_CHECK(is_registered(type), "device", "device type ", type, " is not registered");
  // The id is free for the next registration; until then messages that mention it say
  // what it was. (No tensor of the type can be alive: its plugin's unload waited for them.)
  impl_->names[type] = str_cat(impl_->names[type], " (unregistered)");
  impl_->backends[type].store(static_cast<uint8_t>(DispatchKey::Undefined),
                              std::memory_order_release);
}

DeviceType DeviceTypeRegistry::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (int i = 0; i < impl_->next; ++i) {
    if (impl_->names[i] == name && is_registered(static_cast<DeviceType>(i))) {
      return static_cast<DeviceType>(i);
    }
  }
  return -1;
}

std::string DeviceTypeRegistry::name(DeviceType type) const {
  if (type < 0 || type >= kMaxDeviceTypes) return str_cat("device_type_", type);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->names[type].empty()) return str_cat("device_type_", type);
  return impl_->names[type];
}

bool DeviceTypeRegistry::is_registered(DeviceType type) const {
  return backend(type) != DispatchKey::Undefined;
}

DispatchKey DeviceTypeRegistry::backend(DeviceType type) const {
  if (type < 0 || type >= kMaxDeviceTypes) return DispatchKey::Undefined;
  return static_cast<DispatchKey>(impl_->backends[type].load(std::memory_order_acquire));
}

std::string Device::to_string() const {
  std::string name = DeviceTypeRegistry::instance().name(type);
  return index < 0 ? name : str_cat(name, ":", index);
}

Device parse_device(std::string_view text) {
  std::string_view type_name = text;
  int16_t index = -1;
  if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    type_name = text.substr(0, colon);
    std::string_view digits = text.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    LOOM_CHECK(ec == std::errc() && end == digits.data() + digits.size() && index >= 0, "device",
               "invalid device '", text, "' (expected TYPE or TYPE:INDEX, e.g. cpu or npu:0)");
  }
  DeviceType type = DeviceTypeRegistry::instance().find(type_name);
  LOOM_CHECK(type >= 0, "device", "unknown device type '", type_name, "' in '", text,
             "' (is the plugin that provides it loaded?)");
  return Device{type, index};
}

}  // namespace loom
