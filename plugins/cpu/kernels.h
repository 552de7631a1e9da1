// Registration functions of the CPU plugin's kernel families (register_<family>_kernels
// is defined in kernels/<family>.cc). Kernels register with the SDK's
// r.impl<&fn>(op, LOOM_KEY_CPU, sdk::dtypes::...), which also claims their dtypes.
#pragma once

#include "loom/sdk/plugin.hpp"

namespace loom::cpu {

void register_unary_kernels(sdk::Registrar& r);
void register_binary_kernels(sdk::Registrar& r);
void register_copy_kernels(sdk::Registrar& r);
void register_reduction_kernels(sdk::Registrar& r);
void register_scan_kernels(sdk::Registrar& r);
void register_ternary_kernels(sdk::Registrar& r);
void register_creation_kernels(sdk::Registrar& r);
void register_random_kernels(sdk::Registrar& r);
void register_linalg_kernels(sdk::Registrar& r);
void register_conv_kernels(sdk::Registrar& r);
void register_pool_kernels(sdk::Registrar& r);
void register_pool_sampling_kernels(sdk::Registrar& r);
void register_shape_kernels(sdk::Registrar& r);
void register_indexing_kernels(sdk::Registrar& r);
void register_sort_kernels(sdk::Registrar& r);
void register_softmax_kernels(sdk::Registrar& r);
void register_normalization_kernels(sdk::Registrar& r);
void register_loss_kernels(sdk::Registrar& r);
void register_embedding_kernels(sdk::Registrar& r);
void register_foreach_kernels(sdk::Registrar& r);

}  // namespace loom::cpu
