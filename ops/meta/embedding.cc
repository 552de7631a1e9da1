// Meta kernel of one_hot: the output shape with a given class count; an error when the
// class count is inferred from the data (num_classes=-1).
#include "loom/core/type_promotion.h"
#include "meta_kernel.h"

namespace loom::ops {
namespace {

Tensor one_hot_meta(const Tensor& self, int64_t num_classes) {
  const char* op = "loom::one_hot";
  if (self.dtype() != ScalarType::Int64) {
    fail(op, "expected an int64 input, found ", scalar_type_name(self.dtype()));
  }
  if (num_classes < -1) {
    fail(op, "expected num_classes >= 0 (or -1 to infer it), found ", num_classes);
  }
  if (num_classes == -1) data_dependent(op, "the largest class (num_classes=-1)");
  DimVector sizes(self.sizes().begin(), self.sizes().end());
  sizes.push_back(num_classes);
  return empty(sizes, ScalarType::Int64, self.device());
}

constexpr DecompositionEntry kMetaKernels[] = {
    {"loom::one_hot", decomposition<&one_hot_meta>()},
};

}  // namespace

std::span<const DecompositionEntry> embedding_meta_kernels() {
  return kMetaKernels;
}

}  // namespace loom::ops
