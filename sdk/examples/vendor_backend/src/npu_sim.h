// npu_sim: a simulated accelerator ("npu_sim:0", "npu_sim:1") whose memory is host
// memory, used as the vendor's starting template. Shared declarations of the plugin.
#pragma once

#include <atomic>
#include <cstdint>

#include "loom/sdk/plugin.hpp"

namespace npu_sim {

inline constexpr int32_t kDeviceCount = 2;

// The device interface (allocator, streams, events, copies) handed to the host.
const LoomDeviceInterface& device_interface();

// Registers the kernels for the backend key the host assigned.
void register_kernels(loom::sdk::Registrar& r, uint32_t backend_key, int16_t device_type);

}  // namespace npu_sim
