// The GPU plugin's entry, built twice from this one tree: as "cuda" (nvcc, CUDA runtime,
// cuBLAS) and as "rocm" (hipcc, HIP runtime). It registers the device type ("cuda" or
// "hip") served by the CUDA or HIP dispatch key, its kernels and their dtype claims, and
// attributes naming the runtime and the devices.
//
// Note [A GPU plugin without a GPU]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The plugin always loads (its shared library needs only the runtime's libraries), asks
// the runtime for its devices, and when there are none fails its initialisation with the
// runtime's reason ("[cuda] no usable device: cudaErrorInsufficientDriver: ..."): a
// manifest entry marked optional is then skipped with that message, a required one stops
// the load with it. The manifest option allow_no_device: "true" registers everything
// anyway with zero devices (how the tests check the registrations on a machine without
// a GPU); allocations on the device type then fail with the index-out-of-range error.
#include <string>

#include "host_kernels/op_support.h"
#include "loom/sdk/plugin.hpp"
#include "runtime/gpu_device.h"

namespace loom::gpu {
namespace {

void init(sdk::Registrar& r) {
  const DriverState& driver = driver_state();
  if (driver.device_count == 0 && r.option("allow_no_device", "false") != "true") {
    throw sdk::Error(
        "[" LOOM_GPU_PLATFORM_NAME "] no usable device (0 devices): " + driver.unavailable_reason,
        LOOM_STATUS_FAILED_PRECONDITION);
  }
  const uint32_t key = LOOM_GPU_DISPATCH_KEY;
  set_device_type(r.device_type(LOOM_GPU_DEVICE_TYPE, key, device_interface()));
  sdk::publish_extension(LOOM_DEVICE_MEMORY_EXTENSION_PREFIX LOOM_GPU_DEVICE_TYPE, memory_api());
#define LOOM_FAMILY(family) register_##family##_ops(r, key);
#include "gpu_kernel_families.inc"
#undef LOOM_FAMILY

  int runtime_version = 0, driver_version = 0;
  (void)gpuRuntimeGetVersion(&runtime_version);
  (void)gpuDriverGetVersion(&driver_version);
  r.attribute("runtime_version", std::to_string(runtime_version).c_str());
  r.attribute("driver_version", std::to_string(driver_version).c_str());
  r.attribute("device_count", std::to_string(driver.device_count).c_str());
  if (!driver.unavailable_reason.empty()) {
    r.attribute("unavailable_reason", driver.unavailable_reason.c_str());
  }
}

void shutdown() {
  allocator().empty_cache();
  // Every staged copy has run once its device is idle, so every block goes.
  for (int index = 0; index < driver_state().device_count; ++index) {
    try {
      use_device(index);
      (void)gpuDeviceSynchronize();
    } catch (const sdk::Error&) {
      // A device that cannot be selected runs nothing of ours.
    }
  }
  staging().empty_cache();
  pinned_host().empty_cache();  // unload waited for every pinned tensor to go
}

}  // namespace
}  // namespace loom::gpu

LOOM_PLUGIN_WITH_SHUTDOWN(LOOM_GPU_PLATFORM_NAME, "0.1.0", loom::gpu::init, loom::gpu::shutdown)
