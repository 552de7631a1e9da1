// The npu_sim plugin's entry: claims a backend slot, registers the device type and its
// kernels, and declares attributes. Options (from the manifest): "driver_version".
#include <string>

#include "npu_sim.h"

namespace npu_sim {
namespace {

void init(loom::sdk::Registrar& r) {
  uint32_t key = r.backend("npu_sim");
  int16_t device_type = r.device_type("npu_sim", key, &device_interface());
  register_kernels(r, key, device_type);
  std::string driver(r.option("driver_version", "sim-1.0"));
  r.attribute("driver_version", driver.c_str());
  std::string abi =
      std::to_string(LOOM_ABI_VERSION_MAJOR) + "." + std::to_string(LOOM_ABI_VERSION_MINOR);
  r.attribute("sdk_abi", abi.c_str());
}

}  // namespace
}  // namespace npu_sim

LOOM_PLUGIN("npu_sim", "0.1.0", npu_sim::init)
