// Registration functions of the CPU plugin's kernel families (one file per family).
#pragma once

#include "loom/sdk/plugin.hpp"

namespace loom::cpu {

void register_binary_kernels(sdk::Registrar& r);
void register_copy_fill_kernels(sdk::Registrar& r);
void register_reduce_kernels(sdk::Registrar& r);

}  // namespace loom::cpu
