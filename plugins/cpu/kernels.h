// Registration functions of the CPU plugin's kernel families: register_<family>_kernels
// is defined in kernels/<family>.cc, and the build lists the files it finds
// (cpu_kernel_families.inc, Note [Op families as data]). Kernels register with the SDK's
// r.impl<&fn>(op, LOOM_KEY_CPU, sdk::dtypes::...), which also claims their dtypes.
#pragma once

#include "loom/sdk/plugin.hpp"

namespace loom::cpu {

#define LOOM_FAMILY(family) void register_##family##_kernels(sdk::Registrar& r);
#include "cpu_kernel_families.inc"
#undef LOOM_FAMILY

}  // namespace loom::cpu
