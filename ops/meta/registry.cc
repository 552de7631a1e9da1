// The meta kernel table of the ops without a shape rule (find_meta_kernel, over the
// families' meta/<family>.cc) and the helpers the meta kernels share. They are for random
// ops whose output is shaped like an input (bernoulli, dropout), one_hot with a given class
// count, advanced indexing with integer indices; and, for the ops whose output shape
// depends on tensor values (nonzero, masks, one_hot inferring its class count), an error
// that says so instead of "no kernel for dispatch key Meta".
#include "loom/core/type_promotion.h"
#include "meta_kernel.h"

namespace loom::ops {

// Note [Meta kernels of unstructured ops]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A structured op gets its meta kernel from its shape rule (structured_ops.cc). The ops
// in meta/ are unstructured because their output is allocated by the kernel, often from the
// data; where the shape follows from the arguments alone they get a typed meta kernel
// that checks the arguments as the CPU kernel does and returns an empty meta tensor.
// Where it does not, PyTorch's meta device raises for data-dependent shapes, and so do
// these kernels, naming the op and what the shape depends on.

[[noreturn]] void data_dependent(const char* op, const char* what) {
  fail(op, "the output shape depends on ", what,
       ", which a meta tensor does not have (expected a tensor with data)");
}

void check_out_length(const char* op, const Tensor& out, int64_t length) {
  if (out.dim() != 1 || out.sizes()[0] != length) {
    fail(op, "expected a 1-D out of ", length, " elements, found shape ",
         shape_to_string(out.sizes()));
  }
}

LoomKernelFn find_meta_kernel(std::string_view op) {
  for (auto family : {
#define LOOM_FAMILY(family) family##_meta_kernels(),
#include "meta_kernel_families.inc"
#undef LOOM_FAMILY
       }) {
    for (const DecompositionEntry& e : family) {
      if (e.op == op) return e.kernel;
    }
  }
  return nullptr;
}

}  // namespace loom::ops
