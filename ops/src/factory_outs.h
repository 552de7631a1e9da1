// The Structured kernels of the out= factories (factory_outs.cc): `out` resized to the
// length the arguments give, as PyTorch's arange/linspace/eye/randperm do.
#pragma once

#include "loom/dispatcher/dispatcher.h"

namespace loom::ops {

// Registers them; the four ops must be defined.
void register_factory_outs(const dispatch::Registrant* owner);

}  // namespace loom::ops
