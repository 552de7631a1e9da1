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
#define LOOM_FAMILY(family) register_##family##_kernels(r);
#include "cpu_kernel_families.inc"
#undef LOOM_FAMILY
}

}  // namespace
}  // namespace loom::cpu

LOOM_PLUGIN("cpu", "0.1.0", loom::cpu::init)
