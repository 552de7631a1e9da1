// The view ops' kernels (view.cc, Note [View ops]) and resize_'s, found by op name when the
// op library registers the ops tagged "view" (that are not decompositions) or "metadata".
#pragma once

#include <string_view>

#include "loom/plugin.h"

namespace loom::ops {

// The metadata-only kernel of view or metadata op `op` (qualified name), or nullptr.
LoomKernelFn find_view_kernel(std::string_view op);

}  // namespace loom::ops
