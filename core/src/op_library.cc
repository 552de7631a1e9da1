// The standard op table (see op_library.h).
#include "loom/core/op_library.h"

namespace loom {

std::span<const OpDefinition> standard_ops() {
  static constexpr OpDefinition kOps[] = {
      {"loom::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       "pointwise,core"},
      {"loom::mul.Tensor(Tensor self, Tensor other) -> Tensor", "pointwise,core"},
      {"loom::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", "inplace,core"},
      {"loom::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
       "inplace,core"},
      {"loom::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", "reduction,core"},
  };
  return kOps;
}

}  // namespace loom
