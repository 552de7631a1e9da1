// Meta kernels of the indexing ops with data-dependent shapes: nonzero (always an error)
// and index.Tensor (the output shape with integer indices; an error with masks).
#include <algorithm>
#include <vector>

#include "loom/core/type_promotion.h"
#include "meta_kernel.h"

namespace loom::ops {
namespace {

Tensor nonzero_meta(const Tensor&) {
  data_dependent("loom::nonzero", "the number of nonzero elements");
}

// Note [Advanced indexing] (loom/sdk/reference/advanced_index.hpp) with integer indices only:
// the broadcast index shape replaces the indexed dims, in place when they are adjacent,
// else first.
Tensor index_meta(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  const char* op = "loom::index.Tensor";
  if (static_cast<int64_t>(indices.size()) > self.dim()) {
    fail(op, "too many indices for a tensor of ", self.dim(), " dims: found ", indices.size());
  }
  DimVector broadcast;
  std::vector<int64_t> indexed;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i]) continue;
    const ScalarType dtype = indices[i]->dtype();
    if (dtype == ScalarType::Bool || dtype == ScalarType::UInt8) {
      data_dependent(op, "the number of true elements of a mask");
    }  // else int64: the op library checked (Note [Argument checks])
    broadcast = indexed.empty() ? DimVector(indices[i]->sizes().begin(), indices[i]->sizes().end())
                                : broadcast_shapes(broadcast, indices[i]->sizes(), op);
    indexed.push_back(static_cast<int64_t>(i));
  }
  if (indexed.empty()) return empty(self.sizes(), self.dtype(), self.device());
  const bool adjacent =
      indexed.back() - indexed.front() + 1 == static_cast<int64_t>(indexed.size());
  DimVector sizes;
  if (!adjacent) sizes = broadcast;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const bool is_indexed = std::find(indexed.begin(), indexed.end(), d) != indexed.end();
    if (adjacent && d == indexed.front())
      sizes.insert(sizes.end(), broadcast.begin(), broadcast.end());
    if (!is_indexed) sizes.push_back(self.sizes()[d]);
  }
  return empty(sizes, self.dtype(), self.device());
}

constexpr DecompositionEntry kMetaKernels[] = {
    {"loom::nonzero", decomposition<&nonzero_meta>()},
    {"loom::index.Tensor", decomposition<&index_meta>()},
};

}  // namespace

std::span<const DecompositionEntry> indexing_meta_kernels() {
  return kMetaKernels;
}

}  // namespace loom::ops
