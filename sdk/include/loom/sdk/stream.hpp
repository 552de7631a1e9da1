// The calling thread's current stream of a device type (ABI 1.5), for a device plugin
// whose allocator or copies run outside a kernel call (a kernel has it in its
// DispatchContext::stream()).
#pragma once

#include <cstdint>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"

namespace loom::sdk {

// NULL for the default stream, and on hosts older than ABI 1.5 (which have no stream
// guards a plugin could not see in its kernel calls).
inline void* current_stream(int16_t device_type) {
  const LoomHostApi& h = host();
  if (!LOOM_HAS_FIELD(&h, LoomHostApi, current_stream) || h.current_stream == nullptr) {
    return nullptr;
  }
  LoomCurrentStreamArgs a{};
  a.struct_size = sizeof(a);
  a.device_type = device_type;
  check(h.current_stream(&a));
  return a.out_stream;
}

}  // namespace loom::sdk
