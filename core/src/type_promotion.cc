// Type promotion lattice, result_type over operand tiers, and broadcasting.
#include "loom/core/type_promotion.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "loom/core/error.h"

namespace loom {
namespace {

constexpr ScalarType kUndefined = static_cast<ScalarType>(-1);

int category(ScalarType t) {
  if (t == ScalarType::Bool) return 0;
  if (is_integral(t, false)) return 1;
  if (is_complex(t)) return 3;
  return 2;
}

ScalarType promote_skip_undefined(ScalarType a, ScalarType b) {
  if (a == kUndefined) return b;
  if (b == kUndefined) return a;
  return promote_types(a, b);
}

// The dtype of the higher tier, unless the lower tier is of a higher category.
ScalarType combine_tiers(ScalarType higher, ScalarType lower) {
  if (higher == kUndefined) return lower;
  if (lower == kUndefined) return higher;
  if (category(lower) > category(higher)) return promote_types(higher, lower);
  return higher;
}

}  // namespace

ScalarType promote_types(ScalarType a, ScalarType b) {
  LOOM_CHECK(!is_quantized(a) && !is_quantized(b), "type-promotion", "cannot promote ",
             scalar_type_name(a), " with ", scalar_type_name(b),
             ": quantized types do not take part in promotion");
  if (a == b) return a;
  if (a == ScalarType::Bool) return b;
  if (b == ScalarType::Bool) return a;
  int ca = category(a), cb = category(b);
  // complex with anything: complex, of double precision when either side has it
  if (ca == 3 || cb == 3) {
    const bool wide = a == ScalarType::ComplexDouble || b == ScalarType::ComplexDouble ||
                      a == ScalarType::Float64 || b == ScalarType::Float64;
    return wide ? ScalarType::ComplexDouble : ScalarType::ComplexFloat;
  }
  if (ca != cb) return ca > cb ? a : b;  // integer with float: the float
  if (ca == 2) {
    if ((a == ScalarType::Float16 && b == ScalarType::BFloat16) ||
        (a == ScalarType::BFloat16 && b == ScalarType::Float16)) {
      return ScalarType::Float32;
    }
    return element_size(a) >= element_size(b) ? a : b;
  }
  // Both integers. uint8 with a signed type needs a signed type that holds 0..255.
  if (a == ScalarType::UInt8 || b == ScalarType::UInt8) {
    ScalarType other = a == ScalarType::UInt8 ? b : a;
    return other == ScalarType::Int8 ? ScalarType::Int16 : other;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

ScalarType result_type(std::span<const PromotionOperand> operands, std::string_view op) {
  LOOM_CHECK(!operands.empty(), std::string(op), "result_type needs at least one operand");
  ScalarType tier[3] = {kUndefined, kUndefined, kUndefined};
  for (const PromotionOperand& o : operands) {
    LOOM_CHECK(!is_quantized(o.dtype), std::string(op), "quantized operand of type ",
               scalar_type_name(o.dtype), " cannot take part in type promotion");
    ScalarType& t = tier[static_cast<int>(o.tier)];
    ScalarType dtype = o.dtype;
    if (o.tier == PromotionOperand::Tier::Scalar) {
      dtype = is_floating_point(dtype)    ? ScalarType::Float32
              : dtype == ScalarType::Bool ? ScalarType::Bool
                                          : ScalarType::Int64;
    }
    t = promote_skip_undefined(t, dtype);
  }
  return combine_tiers(tier[0], combine_tiers(tier[1], tier[2]));
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && is_integral(to, /*include_bool=*/true)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

std::string shape_to_string(IntArrayRef sizes) {
  return str_cat("[", absl::StrJoin(sizes, ", "), "]");
}

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, std::string_view op) {
  size_t ndim = std::max(a.size(), b.size());
  DimVector out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    int64_t da = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
    int64_t db = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
    LOOM_CHECK(da == db || da == 1 || db == 1, std::string(op), "shapes ", shape_to_string(a),
               " and ", shape_to_string(b), " cannot be broadcast (dim ", i, ": ", da, " vs ", db,
               ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

DimVector broadcast_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef target,
                            std::string_view op) {
  LOOM_CHECK(sizes.size() <= target.size(), std::string(op), "shape ", shape_to_string(sizes),
             " cannot be broadcast to ", shape_to_string(target), " (more dims than the target)");
  size_t lead = target.size() - sizes.size();
  DimVector out(target.size(), 0);
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t s = sizes[i], t = target[lead + i];
    LOOM_CHECK(s == t || s == 1, std::string(op), "shape ", shape_to_string(sizes),
               " cannot be broadcast to ", shape_to_string(target), " (dim ", lead + i, ": ", s,
               " vs ", t, ")");
    out[lead + i] = (s == 1 && t != 1) ? 0 : strides[i];
  }
  return out;
}

}  // namespace loom
