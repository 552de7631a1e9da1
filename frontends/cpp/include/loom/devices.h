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
#pragma once

#include <cstdint>
#include <string_view>

#include "loom/core/device.h"
#include "loom/core/device_runtime.h"

namespace loom {

// The number of devices of a registered type: 1 for cpu and meta; throws for an unknown
// type or a plugin device type that does not say.
int64_t device_count(std::string_view device_type);
DeviceProperties device_properties(Device device);
// Waits for all work queued on `device` (a no-op for cpu and meta).
void synchronize(Device device);

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

}  // namespace loom
