// Scalar printing and default dtypes.
#include "loom/core/scalar.h"

#include <cmath>
#include <limits>

#include "loom/core/str_cat.h"

namespace loom {

ScalarType Scalar::natural_dtype() const {
  switch (kind_) {
    case Kind::Bool:
      return ScalarType::Bool;
    case Kind::Int:
      return ScalarType::Int64;
    case Kind::Float:
      return ScalarType::Float32;
  }
  return ScalarType::Float32;
}

namespace {

// The finite range of each dtype, as doubles (exact for every integer bound used).
struct Range {
  double lowest, max;
};

Range range_of(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return {0, 1};
    case ScalarType::UInt8:
      return {0, 255};
    case ScalarType::Int8:
      return {-128, 127};
    case ScalarType::Int16:
      return {-32768, 32767};
    case ScalarType::Int32:
      return {-2147483648.0, 2147483647.0};
    case ScalarType::Int64:
      return {-0x1p63, 0x1p63};  // checked on the integer itself below
    case ScalarType::Float16:
      return {-65504.0, 65504.0};
    case ScalarType::BFloat16:
      return {-0x1.fep127, 0x1.fep127};
    case ScalarType::Float32:
      return {-0x1.fffffep127, 0x1.fffffep127};
    default:
      return {-std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
  }
}

}  // namespace

bool fits_without_overflow(const Scalar& value, ScalarType dtype) {
  if (value.is_bool()) return true;
  const bool floating = is_floating_point(dtype);
  const Range r = range_of(dtype);
  if (value.is_integral()) {
    const int64_t i = value.to_int();
    if (dtype == ScalarType::Int64 || dtype == ScalarType::Float64) return true;
    if (floating) return static_cast<double>(i) >= r.lowest && static_cast<double>(i) <= r.max;
    const auto max = static_cast<int64_t>(r.max);
    if (r.lowest == 0) return i <= max && i >= -max;  // unsigned: negatives may wrap
    return i >= static_cast<int64_t>(r.lowest) && i <= max;
  }
  const double d = value.to_double();
  if (floating) return std::isnan(d) || std::isinf(d) || (d >= r.lowest && d <= r.max);
  if (std::isnan(d)) return false;
  if (dtype == ScalarType::Int64) return d >= -0x1p63 && d < 0x1p63;
  return d >= r.lowest && d <= r.max;
}

std::string Scalar::to_string() const {
  switch (kind_) {
    case Kind::Bool:
      return i_ ? "True" : "False";
    case Kind::Int:
      return str_cat(i_);
    case Kind::Float:
      return str_cat(d_);
  }
  return "?";
}

}  // namespace loom
