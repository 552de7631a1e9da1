// The GPU plugin's device layer: the driver's view (device count, or why there is none),
// the LoomDeviceInterface the host allocates, copies and synchronises through, the
// caching allocator behind it, and the helpers every kernel wrapper uses (error checks,
// selecting a tensor's device, the call's stream).
#pragma once

#include <cstdint>
#include <string>

#include "../runtime/gpu_runtime.h"
#include "caching_allocator.h"
#include "deferred_checks.h"
#include "loom/device_memory_api.h"
#include "loom/plugin.h"
#include "pinned_host_allocator.h"
#include "pinned_staging.h"

namespace loom::gpu {

// Throws an sdk::Error "[<platform>] <what>: <runtime error name>: <message>" unless ok.
void check(gpuError_t err, const char* what);
// Throws "[<platform>] <op>: <message>" when a launcher returned a message.
void check_launch(const char* message, const char* op);

// The driver's answer at load: how many devices, or why none (empty when some).
struct DriverState {
  int32_t device_count = 0;
  std::string unavailable_reason;
};
const DriverState& driver_state();

// The device interface registered for the platform's device type.
const LoomDeviceInterface* device_interface();
CachingAllocator& allocator();
// The process's pinned staging blocks for copies to the device (Note [Pinned staging]).
PinnedStaging& staging();
// The pinned memory of pinned cpu tensors (Note [Caching pinned host blocks]).
PinnedHostAllocator& pinned_host();
// The allocator's figures and cache control, published as
// "loom.device_memory.<device type>" (loom/device_memory_api.h).
const LoomDeviceMemoryApi* memory_api();

// The device type id the host gave the platform's device type at registration.
void set_device_type(int16_t type);
int16_t device_type();

// One launch's input check (Note [Input errors found by kernels]): a cleared slot on
// `stream` of `device`, whose device address (slot()) the launch's kernels flag;
// `describe` makes the op's error from the flagged value. Marked launched when it goes out
// of scope: keep it alive until the launch is queued.
class InputCheck {
 public:
  InputCheck(int device, gpuStream_t stream, DeferredChecks::Describe describe);
  InputCheck(InputCheck&& other) noexcept : slot_(other.slot_), armed_(other.armed_) {
    other.armed_ = false;
  }
  InputCheck(const InputCheck&) = delete;
  InputCheck& operator=(const InputCheck&) = delete;
  InputCheck& operator=(InputCheck&&) = delete;
  ~InputCheck();
  int64_t* slot() const;

 private:
  size_t slot_;
  bool armed_ = true;
};

// Makes `index` the calling thread's current device for the runtime (cached per thread).
void use_device(int index);

}  // namespace loom::gpu
