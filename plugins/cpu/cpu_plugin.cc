// The CPU plugin's entry: registers its kernels and declares its capabilities.
#include "isa.h"
#include "kernels.h"
#include "loom/sdk/plugin.hpp"
#include "parallel.h"

namespace loom::cpu {
namespace {

void init(sdk::Registrar& r) {
  configure_threads(r);  // LOOM_NUM_THREADS (parallel.h)
  configure_isa(r);      // LOOM_CPU_ISA (isa.h)
  register_unary_kernels(r);
  register_binary_kernels(r);
  register_copy_kernels(r);
  register_reduction_kernels(r);
  register_scan_kernels(r);
  register_ternary_kernels(r);
  register_creation_kernels(r);
  register_random_kernels(r);
  register_linalg_kernels(r);
  register_conv_kernels(r);
  register_pool_kernels(r);
  register_pool_sampling_kernels(r);
  register_shape_kernels(r);
  register_indexing_kernels(r);
  register_sort_kernels(r);
  register_softmax_kernels(r);
  register_normalization_kernels(r);
  register_loss_kernels(r);
  register_embedding_kernels(r);
  register_foreach_kernels(r);
}

}  // namespace
}  // namespace loom::cpu

LOOM_PLUGIN("cpu", "0.1.0", loom::cpu::init)
