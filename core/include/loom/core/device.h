// Devices are (type, index). Device types are registered at run time by plugins; only
// cpu and meta exist without any plugin. Each type is served by one backend key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loom/core/dispatch_key.h"

namespace loom {

using DeviceType = int16_t;
inline constexpr DeviceType kCPU = 0;
inline constexpr DeviceType kMeta = 1;
inline constexpr int kMaxDeviceTypes = 64;

struct Device {
  DeviceType type = kCPU;
  int16_t index = -1;  // -1: the current device of that type

  bool operator==(const Device&) const = default;
  std::string to_string() const;  // "cpu", "cuda:1"
};

// Parses "cpu", "meta", "npu:1"; the type must be registered.
Device parse_device(std::string_view text);

// The registry of device type names. Registration happens rarely (plugin load) under a
// lock; lookups of the backend key of a type are lock-free (it is on the tensor
// creation path).
class DeviceTypeRegistry {
 public:
  static DeviceTypeRegistry& instance();

  // Registers `name` served by `backend`; returns the new type. Registering a name that
  // already exists throws. The name must be [a-z][a-z0-9_]*.
  DeviceType register_type(std::string_view name, DispatchKey backend);
  // Removes a registered type (not cpu/meta). Its id is reused by a later registration.
  void unregister_type(DeviceType type);

  // -1 when unknown.
  DeviceType find(std::string_view name) const;
  std::string name(DeviceType type) const;
  bool is_registered(DeviceType type) const;
  // The backend serving `type`; Undefined for unknown types.
  DispatchKey backend(DeviceType type) const;

 private:
  DeviceTypeRegistry();
  struct Impl;
  Impl* impl_;
};

}  // namespace loom
