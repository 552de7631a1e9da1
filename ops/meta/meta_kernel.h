// Meta kernels of the ops without a shape rule (rule None in ops.def), written as typed
// functions wrapped like decompositions (Note [Meta kernels of unstructured ops] in
// registry.cc).
#pragma once

#include <span>
#include <string_view>

#include "decompositions/decomposition.h"

namespace loom::ops {

// The meta kernels of each op family (meta/<family>.cc; families without such meta
// kernels have no file).
#define LOOM_FAMILY(family) std::span<const DecompositionEntry> family##_meta_kernels();
#include "meta_kernel_families.inc"
#undef LOOM_FAMILY

// The Meta kernel of an op without a shape rule, or nullptr.
LoomKernelFn find_meta_kernel(std::string_view op);

// Helpers shared by the meta kernels.
// Raises "[op] the output shape depends on <what>, ...": a meta tensor has no data.
[[noreturn]] void data_dependent(const char* op, const char* what);
// Raises "[op] expected a 1-D out of <length> elements, found shape ..." unless out is.
void check_out_length(const char* op, const Tensor& out, int64_t length);

}  // namespace loom::ops
