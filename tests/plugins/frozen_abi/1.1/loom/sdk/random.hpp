// Random numbers in a kernel: reserve_random() takes counters from the host's default
// generator of a device type; the Philox stream it returns (loom/sdk/philox.hpp) gives
// every element its block. See Note [Random stream layout].
//
//   sdk::PhiloxStream s = sdk::reserve_random(self.device(), numel);
//   for (int64_t i = 0; i < numel; ++i) out[i] = sdk::uniform_float(s.block(i)[0]);
#pragma once

#include <cstdint>
#include <string>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"
#include "loom/sdk/philox.hpp"

namespace loom::sdk {

// Reserves `count` counters of `device`'s type: returns the generator's (seed, offset)
// and advances its offset by count, atomically (concurrent kernels get disjoint ranges).
// Needs a host with ABI minor >= 1; an older host gets a clear error, not a crash.
inline PhiloxStream reserve_random(LoomDevice device, uint64_t count) {
  const LoomHostApi& h = host();
  if (!LOOM_HAS_FIELD(&h, LoomHostApi, generator_reserve) || h.generator_reserve == nullptr) {
    throw Error("[sdk] random numbers need the host service generator_reserve (loom ABI " +
                    std::to_string(LOOM_ABI_VERSION_MAJOR) + ".1), but this host provides ABI " +
                    std::to_string(h.abi_major) + "." + std::to_string(h.abi_minor),
                LOOM_STATUS_UNIMPLEMENTED);
  }
  PhiloxStream stream;
  check(h.generator_reserve(device, count, &stream.seed, &stream.offset));
  return stream;
}

}  // namespace loom::sdk
