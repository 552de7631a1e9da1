// Decompositions of the unary family: clamp with tensor bounds.
#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// clamp.Tensor: max(self, min) then min(_, max), elementwise with broadcasting and
// promotion over all three (as PyTorch's clamp.Tensor); NaN in any operand propagates.
Tensor clamp_tensor(const Tensor& self, const std::optional<Tensor>& min,
                    const std::optional<Tensor>& max) {
  if (!min && !max) {
    fail("loom::clamp.Tensor", "expected at least one of min and max, found neither");
  }
  Tensor result = self;
  if (min) result = loom::maximum(result, *min);
  if (max) result = loom::minimum(result, *max);
  return result.impl() == self.impl() ? loom::clone(self) : result;
}

Tensor clamp_tensor_(const Tensor& self, const std::optional<Tensor>& min,
                     const std::optional<Tensor>& max) {
  Tensor result = clamp_tensor(self, min, max);
  constexpr const char* op = "loom::clamp_.Tensor";
  if (!same_shape(result.sizes(), self.sizes())) {
    fail(op, "the result has shape ", shape_to_string(result.sizes()), " but self has shape ",
         shape_to_string(self.sizes()));
  }
  if (!can_cast(result.dtype(), self.dtype())) {
    fail(op, "result type ", scalar_type_name(result.dtype()), " can't be cast to self's dtype ",
         scalar_type_name(self.dtype()));
  }
  loom::copy_(self, result);
  return self;
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::clamp.Tensor", decomposition<&clamp_tensor>()},
    {"loom::clamp_.Tensor", decomposition<&clamp_tensor_>()},
};

}  // namespace

std::span<const DecompositionEntry> unary_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
