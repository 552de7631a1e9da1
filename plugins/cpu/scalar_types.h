// The CPU plugin's element types: Half (IEEE float16) and BFloat16 as 16-bit storage
// types whose arithmetic goes through float, plus dispatch from a LoomDType to the C++
// type (dispatch_all_types, dispatch_floating_types, ...).
//
// Conversions (loom/sdk/float16.hpp) round to nearest, ties to even, and are the same
// bits on every backend. Arithmetic between two Half (or two BFloat16) values computes in
// float and rounds the result back; mixed with float or double it yields float or double.
// Comparisons use the implicit conversion to float.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"
#include "loom/sdk/float16.hpp"

namespace loom::cpu {

namespace detail {
using sdk::bfloat16_bits_to_float;
using sdk::float_to_bfloat16_bits;
using sdk::float_to_half_bits;
using sdk::half_bits_to_float;
}  // namespace detail

// The storage-plus-arithmetic shared by Half and BFloat16. Operators are hidden friends
// so conversions apply to both operands; the exact overloads for float, double, int and
// int64_t keep mixed expressions unambiguous next to the implicit conversion to float.
template <uint16_t (*ToBits)(float), float (*FromBits)(uint16_t)>
struct ReducedFloat {
  uint16_t x = 0;

  ReducedFloat() = default;
  ReducedFloat(float f) : x(ToBits(f)) {}  // NOLINT: converts implicitly like a float
  template <typename U,
            std::enable_if_t<std::is_arithmetic_v<U> && !std::is_same_v<U, float>, int> = 0>
  ReducedFloat(U v) : x(ToBits(static_cast<float>(v))) {}  // NOLINT
  operator float() const { return FromBits(x); }           // NOLINT

  static ReducedFloat from_raw(uint16_t bits) {
    ReducedFloat r;
    r.x = bits;
    return r;
  }

  ReducedFloat& operator+=(ReducedFloat o) { return *this = ReducedFloat(float(*this) + float(o)); }
  ReducedFloat& operator-=(ReducedFloat o) { return *this = ReducedFloat(float(*this) - float(o)); }
  ReducedFloat& operator*=(ReducedFloat o) { return *this = ReducedFloat(float(*this) * float(o)); }
  ReducedFloat& operator/=(ReducedFloat o) { return *this = ReducedFloat(float(*this) / float(o)); }

  friend ReducedFloat operator-(ReducedFloat a) {
    return from_raw(static_cast<uint16_t>(a.x ^ 0x8000u));
  }
  friend ReducedFloat operator+(ReducedFloat a) { return a; }

#define LOOM_CPU_ARITH(OP)                                          \
  friend ReducedFloat operator OP(ReducedFloat a, ReducedFloat b) { \
    return ReducedFloat(float(a) OP float(b));                      \
  }                                                                 \
  friend float operator OP(ReducedFloat a, float b) {               \
    return float(a) OP b;                                           \
  }                                                                 \
  friend float operator OP(float a, ReducedFloat b) {               \
    return a OP float(b);                                           \
  }                                                                 \
  friend double operator OP(ReducedFloat a, double b) {             \
    return double(float(a)) OP b;                                   \
  }                                                                 \
  friend double operator OP(double a, ReducedFloat b) {             \
    return a OP double(float(b));                                   \
  }                                                                 \
  friend ReducedFloat operator OP(ReducedFloat a, int b) {          \
    return a OP ReducedFloat(b);                                    \
  }                                                                 \
  friend ReducedFloat operator OP(int a, ReducedFloat b) {          \
    return ReducedFloat(a) OP b;                                    \
  }                                                                 \
  friend ReducedFloat operator OP(ReducedFloat a, int64_t b) {      \
    return a OP ReducedFloat(b);                                    \
  }                                                                 \
  friend ReducedFloat operator OP(int64_t a, ReducedFloat b) {      \
    return ReducedFloat(a) OP b;                                    \
  }
  LOOM_CPU_ARITH(+)
  LOOM_CPU_ARITH(-)
  LOOM_CPU_ARITH(*)
  LOOM_CPU_ARITH(/)
#undef LOOM_CPU_ARITH
};

using Half = ReducedFloat<&detail::float_to_half_bits, &detail::half_bits_to_float>;
using BFloat16 = ReducedFloat<&detail::float_to_bfloat16_bits, &detail::bfloat16_bits_to_float>;

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);
static_assert(std::is_trivially_copyable_v<Half> && std::is_trivially_copyable_v<BFloat16>);

// --- type traits ---

template <typename T>
inline constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_reduced_float_v<T>;

// bool and the integer types
template <typename T>
inline constexpr bool is_integral_v = std::is_integral_v<T>;

// The type a kernel computes in: float for Half / BFloat16, T otherwise.
template <typename T>
using acc_type = std::conditional_t<is_reduced_float_v<T>, float, T>;

// The unsigned type integer kernels compute in so overflow wraps instead of being
// undefined: at least `unsigned` (so nothing promotes to int), else T's unsigned twin.
template <typename T, bool Small = (sizeof(T) < sizeof(unsigned))>
struct WrapType {
  using type = unsigned;
};
template <typename T>
struct WrapType<T, false> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using wrap_type = typename WrapType<T>::type;

// Largest finite value and lowest finite value of T.
template <typename T>
T max_finite() {
  if constexpr (std::is_same_v<T, Half>) {
    return Half::from_raw(0x7bffu);  // 65504
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16::from_raw(0x7f7fu);  // 3.3895e38
  } else {
    return std::numeric_limits<T>::max();
  }
}
template <typename T>
T lowest_finite() {
  if constexpr (std::is_same_v<T, Half>) {
    return Half::from_raw(0xfbffu);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16::from_raw(0xff7fu);
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

// The LoomDType of a C++ element type.
template <typename T>
constexpr LoomDType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return LOOM_DTYPE_BOOL;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return LOOM_DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return LOOM_DTYPE_INT8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return LOOM_DTYPE_INT16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return LOOM_DTYPE_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return LOOM_DTYPE_INT64;
  else if constexpr (std::is_same_v<T, Half>)
    return LOOM_DTYPE_FLOAT16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return LOOM_DTYPE_BFLOAT16;
  else if constexpr (std::is_same_v<T, float>)
    return LOOM_DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    return LOOM_DTYPE_FLOAT64;
  else
    static_assert(!sizeof(T), "not a loom element type");
}

// --- dtype dispatch ---

// "float32", "int64", ... (defined in shape_helpers.cc)
const char* dtype_name(LoomDType t);

[[noreturn]] inline void unsupported_dtype(LoomDType t, const char* op, const char* allowed_desc) {
  throw sdk::Error(std::string("[") + op + "] dtype " + dtype_name(t) +
                       " is not supported (expected " + allowed_desc + ")",
                   LOOM_STATUS_UNIMPLEMENTED);
}

// Calls f(T{}) with the C++ type T among Ts whose dtype is t; throws
// "[op] dtype X is not supported (expected <allowed_desc>)" when none is.
template <typename... Ts, typename F>
void dispatch_dtype(LoomDType t, const char* op, const char* allowed_desc, F&& f) {
  bool found = ((t == dtype_of<Ts>() ? (f(Ts{}), true) : false) || ...);
  if (!found) unsupported_dtype(t, op, allowed_desc);
}

// bool, the integer types, float16, bfloat16, float32, float64
template <typename F>
void dispatch_all_types(LoomDType t, const char* op, F&& f) {
  dispatch_dtype<bool, uint8_t, int8_t, int16_t, int32_t, int64_t, Half, BFloat16, float, double>(
      t, op, "bool, an integer or a floating point type", f);
}

// every type but bool
template <typename F>
void dispatch_numeric_types(LoomDType t, const char* op, F&& f) {
  dispatch_dtype<uint8_t, int8_t, int16_t, int32_t, int64_t, Half, BFloat16, float, double>(
      t, op, "an integer or a floating point type", f);
}

// float16, bfloat16, float32, float64
template <typename F>
void dispatch_floating_types(LoomDType t, const char* op, F&& f) {
  dispatch_dtype<Half, BFloat16, float, double>(t, op, "float16, bfloat16, float32 or float64", f);
}

// bool and the integer types
template <typename F>
void dispatch_integral_types(LoomDType t, const char* op, F&& f) {
  dispatch_dtype<bool, uint8_t, int8_t, int16_t, int32_t, int64_t>(t, op, "bool or an integer type",
                                                                   f);
}

}  // namespace loom::cpu
