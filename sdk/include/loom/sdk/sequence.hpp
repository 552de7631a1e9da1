// Moved to loom/sdk/reference/sequence.hpp with the SDK's other reference math (what every
// in-tree backend computes the same way); this path stays for plugins written before.
#pragma once

#include "loom/sdk/reference/sequence.hpp"
