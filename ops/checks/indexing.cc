// The indexing family's argument checks (Note [Argument checks]): the dtypes of advanced
// indexing's index tensors (Note [Advanced indexing] in loom/sdk/reference/advanced_index.hpp).
#include "argument_check.h"
#include "loom/core/scalar_type.h"

namespace loom::ops {
namespace {

// index.Tensor's `Tensor?[] indices`: int64 positions, or bool (or uint8) masks.
// (index_put and index_put_ are decompositions: the ops they decompose into check.)
void index_tensors_check(const ShapeArgs& args) {
  const std::vector<const TensorImpl*> indices = args.optional_tensors(1);
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] == nullptr) continue;
    const ScalarType dtype = indices[i]->dtype();
    if (dtype != ScalarType::Int64 && dtype != ScalarType::Bool && dtype != ScalarType::UInt8) {
      args.fail("expected int64 or bool index tensors, found ", scalar_type_name(dtype),
                " for index ", i);
    }
  }
}

constexpr ArgumentCheckEntry kChecks[] = {
    {"loom::index.Tensor", &index_tensors_check},
};

}  // namespace

std::span<const ArgumentCheckEntry> indexing_argument_checks() {
  return kChecks;
}

}  // namespace loom::ops
