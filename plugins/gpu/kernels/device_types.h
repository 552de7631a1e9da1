// The GPU kernels' element types and their arithmetic type: Half and BFloat16 are 16-bit
// storage whose values convert through the SDK's bit-exact float16 conversions (the same
// bits as the CPU plugin's), and compute in float (OpMath), as PyTorch's CUDA kernels do.
// Also the dtype switch that instantiates a kernel per element type.
#pragma once

#include <cstdint>
#include <type_traits>

#include "index_math.h"
#include "loom/plugin.h"
#include "loom/sdk/float16.hpp"

namespace loom::gpu {

struct Half {
  uint16_t x;
  Half() = default;
  LOOM_GPU_HD Half(float f) : x(sdk::float_to_half_bits(f)) {}  // NOLINT: like a float
  LOOM_GPU_HD operator float() const { return sdk::half_bits_to_float(x); }
};

struct BFloat16 {
  uint16_t x;
  BFloat16() = default;
  LOOM_GPU_HD BFloat16(float f) : x(sdk::float_to_bfloat16_bits(f)) {}  // NOLINT
  LOOM_GPU_HD operator float() const { return sdk::bfloat16_bits_to_float(x); }
};

// The type a kernel computes in for element type T.
template <typename T>
struct OpMathOf {
  using type = T;
};
template <>
struct OpMathOf<Half> {
  using type = float;
};
template <>
struct OpMathOf<BFloat16> {
  using type = float;
};
template <typename T>
using OpMath = typename OpMathOf<T>::type;

template <typename T>
inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Converts between element types the way a C++ static_cast would, through float for the
// 16-bit formats.
template <typename To, typename From>
LOOM_GPU_HD To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

// Calls f(T{}) with the C++ element type of `dtype`; returns false for dtypes without one
// (the quantized types).
template <typename F>
bool visit_dtype(int32_t dtype, F&& f) {
  switch (dtype) {
    case LOOM_DTYPE_BOOL:
      f(bool{});
      return true;
    case LOOM_DTYPE_UINT8:
      f(uint8_t{});
      return true;
    case LOOM_DTYPE_INT8:
      f(int8_t{});
      return true;
    case LOOM_DTYPE_INT16:
      f(int16_t{});
      return true;
    case LOOM_DTYPE_INT32:
      f(int32_t{});
      return true;
    case LOOM_DTYPE_INT64:
      f(int64_t{});
      return true;
    case LOOM_DTYPE_FLOAT16:
      f(Half{});
      return true;
    case LOOM_DTYPE_BFLOAT16:
      f(BFloat16{});
      return true;
    case LOOM_DTYPE_FLOAT32:
      f(float{});
      return true;
    case LOOM_DTYPE_FLOAT64:
      f(double{});
      return true;
    default:
      return false;
  }
}

// The floating dtypes only (returns false for the others).
template <typename F>
bool visit_floating_dtype(int32_t dtype, F&& f) {
  if (dtype < LOOM_DTYPE_FLOAT16 || dtype > LOOM_DTYPE_FLOAT64) return false;
  return visit_dtype(dtype, [&](auto tag) {
    if constexpr (is_floating_v<decltype(tag)>) f(tag);
  });
}

inline int element_size(int32_t dtype) {
  int size = 0;
  visit_dtype(dtype, [&](auto tag) { size = sizeof(tag); });
  return size;
}

// The type integer arithmetic wraps in: the unsigned type, at least `unsigned` (a product
// of two uint16_t is an int, which could overflow), as the CPU's wrap_type; other types
// are their own.
template <typename T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct WrapOf {
  using type = T;
};
template <typename T>
struct WrapOf<T, true> {
  using type =
      std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <typename T>
using Wrap = typename WrapOf<T>::type;

}  // namespace loom::gpu
