// Scalar: a bool, integer or floating value passed to ops (alpha=1, fill values).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "loom/core/scalar_type.h"

namespace loom {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : Scalar(int64_t{0}) {}
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float), d_(static_cast<double>(v)) {}  // NOLINT
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}                     // NOLINT

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Float; }

  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0; }

  // The dtype a tensor made from this scalar gets: bool, int64 or float32 (default float).
  ScalarType natural_dtype() const;
  std::string to_string() const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

// Note [Scalars that overflow]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A Scalar argument converted to a tensor's dtype (fill_(u8, 300), masked_fill's value,
// alpha, clamp's bounds) must fit it, or the op refuses the call instead of storing a
// wrapped or infinite value: PyTorch's rule (c10::overflows), so loom refuses exactly
// what PyTorch refuses. Integers must lie in the dtype's range, except that a negative
// integer may wrap into an unsigned dtype down to -max (uint8 takes -255 .. 255, bool
// -1 .. 1); floats must lie in the range of an integer dtype (NaN and infinities never
// fit one) and within the finite range of a floating dtype unless infinite or NaN
// (fill_(f16, 1e6) is refused, fill_(f16, inf) is not); bools fit everything.
bool fits_without_overflow(const Scalar& value, ScalarType dtype);

}  // namespace loom
