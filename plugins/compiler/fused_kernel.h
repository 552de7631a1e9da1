// Fused kernels as operators: each built program is defined as
// `compiled::kernel_<key>(Tensor[] inputs) -> Tensor[]` with a CPU kernel that checks its
// inputs against the program and runs the generated function.
#pragma once

#include "loom/compiler_api.h"

namespace loom::compiler {

// The table's build_kernel (loom/compiler_api.h).
LoomError* build_kernel(LoomKernelBuildArgs* args);

// The intra-op thread count kernels run with (LOOM_NUM_THREADS, else the CPUs this
// process may run on), read when the plugin loads.
void configure_threads();

}  // namespace loom::compiler
