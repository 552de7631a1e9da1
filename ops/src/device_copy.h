// The op library's copy between devices (device_copy.cc, Note [Copies between devices]).
#pragma once

#include "loom/dispatcher/dispatcher.h"

namespace loom::ops {

// Registers loom::copy_'s Structured kernel; loom::copy_ must be defined.
void register_device_copy(const dispatch::Registrant* owner);

}  // namespace loom::ops
