// Type promotion and broadcasting: the rules every op shares, defined once (docs/architecture.md
// §2).
#pragma once

#include <span>
#include <string_view>

#include "loom/core/scalar.h"
#include "loom/core/scalar_type.h"
#include "loom/core/tensor_impl.h"

namespace loom {

// Note [Type promotion]
// ~~~~~~~~~~~~~~~~~~~~~
// As in PyTorch: operands fall in three priority tiers — dimensioned tensors, zero-dim
// tensors, Python-like scalars — and in categories bool < integer < floating. The
// result is the promotion of the highest tier's dtypes, unless a lower tier has a
// higher category, in which case that lower tier's dtype (for scalars: the default
// dtype of its category, float32 / int64) decides. promote_types is the lattice of
// two dtypes: the smallest type that holds both (uint8 + int8 = int16,
// float16 + bfloat16 = float32, any integer + any float = that float).
ScalarType promote_types(ScalarType a, ScalarType b);

struct PromotionOperand {
  ScalarType dtype;
  enum class Tier : uint8_t { Dimensioned, ZeroDim, Scalar } tier;
};
// Throws when operands is empty or includes a quantized type. `op` names the caller.
// Scalar-tier operands count by category: a floating scalar as float32, an integer one
// as int64, a bool as bool, whatever their own dtype.
ScalarType result_type(std::span<const PromotionOperand> operands, std::string_view op);

// Whether a value of type `from` may be written to an output of type `to` (PyTorch's
// rule: no floating to integral, nothing but bool to bool).
bool can_cast(ScalarType from, ScalarType to);

// Broadcast shape of a and b (trailing dims aligned, size 1 stretches). Throws
// "[op] shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)".
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, std::string_view op);
// Strides that view a tensor of (sizes, strides) as `target` without copying (stride 0
// on stretched dims). Throws when sizes do not broadcast to target.
DimVector broadcast_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef target,
                            std::string_view op);

// "[2, 3]"
std::string shape_to_string(IntArrayRef sizes);

}  // namespace loom
