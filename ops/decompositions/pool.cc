// Decompositions of the pooling ops: max_pool2d (the values of max_pool2d_with_indices).
#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

Tensor max_pool2d(const Tensor& self, const IntList& kernel_size, const IntList& stride,
                  const IntList& padding, const IntList& dilation, bool ceil_mode) {
  return std::get<0>(
      loom::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::max_pool2d", decomposition<&max_pool2d>()},
};

}  // namespace

std::span<const DecompositionEntry> pool_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
