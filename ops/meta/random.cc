// Meta kernels of the random ops with an output shaped like an input (bernoulli,
// dropout) and of randperm's out= form (the in-place random fills get the op library's
// meta no-op kernel).
#include "loom/core/type_promotion.h"
#include "meta_kernel.h"

namespace loom::ops {
namespace {

void check_probability(const char* op, double p) {
  if (!(p >= 0.0 && p <= 1.0)) fail(op, "expected p in [0, 1], found p=", p);
}

void check_floating(const char* op, const Tensor& t) {
  if (!is_floating_point(t.dtype())) {
    fail(op, "dtype ", scalar_type_name(t.dtype()), " is not supported (expected a floating type)");
  }
}

Tensor bernoulli_meta(const Tensor& self) {
  check_floating("loom::bernoulli", self);
  return empty(self.sizes(), self.dtype(), self.device());
}

Tensor dropout_meta(const Tensor& input, double p, bool train) {
  check_probability("loom::dropout", p);
  check_floating("loom::dropout", input);
  if (!train) return input;
  return empty(input.sizes(), input.dtype(), input.device());
}

// randperm writes a permutation of 0..n-1 into out.
Tensor randperm_meta(int64_t n, const Tensor& out) {
  if (n < 0) fail("loom::randperm.out", "expected n >= 0, found n=", n);
  check_out_length("loom::randperm.out", out, n);
  return out;
}

constexpr DecompositionEntry kMetaKernels[] = {
    {"loom::randperm.out", decomposition<&randperm_meta>()},
    {"loom::bernoulli", decomposition<&bernoulli_meta>()},
    {"loom::dropout", decomposition<&dropout_meta>()},
};

}  // namespace

std::span<const DecompositionEntry> random_meta_kernels() {
  return kMetaKernels;
}

}  // namespace loom::ops
