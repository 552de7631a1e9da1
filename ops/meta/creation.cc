// Meta kernels of the creation ops in out= form (arange, linspace): on meta there is
// nothing to fill, so they check the arguments and out's length as the CPU kernels do
// and return out (eye is a decomposition and runs on meta as it is).
#include "loom/ops/creation.h"
#include "meta_kernel.h"

namespace loom::ops {
namespace {

Tensor arange_meta(const Scalar& start, const Scalar& end, const Scalar& step, const Tensor& out) {
  const char* op = "loom::arange.start_out";
  check_arange_signs(op, start, end, step);
  check_out_length(op, out, arange_length(start, end, step));
  return out;
}

Tensor linspace_meta(const Scalar& start, const Scalar& end, int64_t steps, const Tensor& out) {
  check_linspace_steps(steps);
  check_out_length("loom::linspace.out", out, steps);
  return out;
}

constexpr DecompositionEntry kMetaKernels[] = {
    {"loom::arange.start_out", decomposition<&arange_meta>()},
    {"loom::linspace.out", decomposition<&linspace_meta>()},
};

}  // namespace

std::span<const DecompositionEntry> creation_meta_kernels() {
  return kMetaKernels;
}

}  // namespace loom::ops
