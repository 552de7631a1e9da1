// Registration functions of the CPU plugin's kernel families (register_<family>_kernels
// is defined in kernels/<family>.cc), and the helper that registers a structured op's
// out= kernel with its dtype capability.
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
void register_shape_kernels(sdk::Registrar& r);
void register_indexing_kernels(sdk::Registrar& r);
void register_sort_kernels(sdk::Registrar& r);
void register_softmax_kernels(sdk::Registrar& r);
void register_normalization_kernels(sdk::Registrar& r);
void register_loss_kernels(sdk::Registrar& r);
void register_embedding_kernels(sdk::Registrar& r);

// The dtype sets the kernels accept (see scalar_types.h's dispatch_* functions).
enum class DTypeSet {
  All,       // bool, integers, float16, bfloat16, float32, float64
  Numeric,   // All but bool
  Floating,  // float16, bfloat16, float32, float64
  Integral,  // bool and integers
};

// Declares that the CPU kernel of `op` computes in the dtypes of `set`.
inline void declare_capability(sdk::Registrar& r, const char* op, DTypeSet set) {
  switch (set) {
    case DTypeSet::All:
      r.capability(op, LOOM_KEY_CPU,
                   {LOOM_DTYPE_BOOL, LOOM_DTYPE_UINT8, LOOM_DTYPE_INT8, LOOM_DTYPE_INT16,
                    LOOM_DTYPE_INT32, LOOM_DTYPE_INT64, LOOM_DTYPE_FLOAT16, LOOM_DTYPE_BFLOAT16,
                    LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64});
      break;
    case DTypeSet::Numeric:
      r.capability(
          op, LOOM_KEY_CPU,
          {LOOM_DTYPE_UINT8, LOOM_DTYPE_INT8, LOOM_DTYPE_INT16, LOOM_DTYPE_INT32, LOOM_DTYPE_INT64,
           LOOM_DTYPE_FLOAT16, LOOM_DTYPE_BFLOAT16, LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64});
      break;
    case DTypeSet::Floating:
      r.capability(
          op, LOOM_KEY_CPU,
          {LOOM_DTYPE_FLOAT16, LOOM_DTYPE_BFLOAT16, LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64});
      break;
    case DTypeSet::Integral:
      r.capability(op, LOOM_KEY_CPU,
                   {LOOM_DTYPE_BOOL, LOOM_DTYPE_UINT8, LOOM_DTYPE_INT8, LOOM_DTYPE_INT16,
                    LOOM_DTYPE_INT32, LOOM_DTYPE_INT64});
      break;
  }
}

// Registers Fn as the CPU kernel of `op` and declares its dtypes.
template <auto Fn>
void register_kernel(sdk::Registrar& r, const char* op, DTypeSet dtypes) {
  r.impl<Fn>(op, LOOM_KEY_CPU);
  declare_capability(r, op, dtypes);
}

}  // namespace loom::cpu
