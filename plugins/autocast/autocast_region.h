// The calling thread's autocast regions (Note [Autocast regions]): which device types have
// autocast on and in which dtype, and the casts of parameters kept for the outermost region.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/autocast_api.h"
#include "loom/sdk/tensor.hpp"

namespace loom::autocast {

// Note [Autocast regions]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A region (loom::autocast::Guard) is thread-local, as PyTorch's autocast is: enter()
// checks the device type is loaded and the dtype is float16 or bfloat16, records the
// thread's previous state for that device type and adds the Autocast key to the thread's
// dispatches (LoomHostApi::local_keys_push) while any device type is enabled; exit() puts
// both back. Regions nest and must exit in reverse order (an exit out of order is refused,
// naming both). Inside the outermost region with caching on, the cast of a tensor that is
// a leaf requiring grad (a parameter) is made once and kept until that region exits, so a
// layer used twice costs one cast of its weights and autograd sees one cast node.
struct DeviceState {
  bool enabled = false;
  int32_t dtype = -1;  // LoomDType
  std::string name;    // the device type's name, as the region gave it
};

// The state of `device_type` (an int16 device type id) on the calling thread; nullptr when
// no region named it.
const DeviceState* state_of(int16_t device_type);

LoomError* enter(LoomAutocastRegion* region);
LoomError* exit_region(uint64_t token);
LoomError* query(LoomAutocastRegion* region);

// The lower dtype of `device_type` when a region names none: the backend's policy table,
// else bfloat16 on cpu and float16 elsewhere.
int32_t default_dtype(int16_t device_type, const char* device_type_name);
const LoomAutocastPolicyTable* policy_table(const char* device_type_name);

// `t` in `dtype`, through the region's cache when `t` is a parameter.
sdk::Tensor cached_cast(const sdk::Tensor& t, LoomDType dtype);

}  // namespace loom::autocast
