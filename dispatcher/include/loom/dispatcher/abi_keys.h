// Conversion between the ABI's stable LoomDispatchKey ids and the core's internal
// DispatchKey layout (see Note [Dispatch key layout]).
#pragma once

#include <cstdint>

#include "loom/core/dispatch_key.h"

namespace loom::dispatch {

// Throws loom::Error("dispatcher", ...) for ids that name no key.
DispatchKey key_from_abi(uint32_t abi_key);
uint32_t key_to_abi(DispatchKey key);
// Parses "CPU", "Autograd", "CompositeImplicit" or a vendor backend name.
DispatchKey parse_dispatch_key(std::string_view name);

}  // namespace loom::dispatch
