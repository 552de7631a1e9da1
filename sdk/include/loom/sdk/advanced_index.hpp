// Moved to loom/sdk/reference/advanced_index.hpp with the SDK's other reference math (what every
// in-tree backend computes the same way); this path stays for plugins written before.
#pragma once

#include "loom/sdk/reference/advanced_index.hpp"
