// Decompositions of the sorting ops: argsort (the indices of sort).
#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

Tensor argsort_indices(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(loom::sort(self, dim, descending));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::argsort", decomposition<&argsort_indices>()},
};

}  // namespace

std::span<const DecompositionEntry> sort_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
