// Data types for kernel writers: names, element sizes, and the named sets a kernel claims
// at registration (Registrar::impl<&fn>(op, key, dtypes::floating)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "loom/plugin.h"

namespace loom::sdk {

// "float32", "int64", ...: the names loom's messages and `loom dispatch` use.
constexpr const char* dtype_name(LoomDType t) {
  switch (t) {
    case LOOM_DTYPE_BOOL:
      return "bool";
    case LOOM_DTYPE_UINT8:
      return "uint8";
    case LOOM_DTYPE_INT8:
      return "int8";
    case LOOM_DTYPE_INT16:
      return "int16";
    case LOOM_DTYPE_INT32:
      return "int32";
    case LOOM_DTYPE_INT64:
      return "int64";
    case LOOM_DTYPE_FLOAT16:
      return "float16";
    case LOOM_DTYPE_BFLOAT16:
      return "bfloat16";
    case LOOM_DTYPE_FLOAT32:
      return "float32";
    case LOOM_DTYPE_FLOAT64:
      return "float64";
    case LOOM_DTYPE_QINT8:
      return "qint8";
    case LOOM_DTYPE_QUINT8:
      return "quint8";
    case LOOM_DTYPE_QINT32:
      return "qint32";
    case LOOM_DTYPE_COMPLEX64:
      return "complex64";
    case LOOM_DTYPE_COMPLEX128:
      return "complex128";
    default:
      return "unknown";
  }
}

// Bytes per element (0 for an unknown dtype).
constexpr size_t element_size(LoomDType t) {
  switch (t) {
    case LOOM_DTYPE_BOOL:
    case LOOM_DTYPE_UINT8:
    case LOOM_DTYPE_INT8:
    case LOOM_DTYPE_QINT8:
    case LOOM_DTYPE_QUINT8:
      return 1;
    case LOOM_DTYPE_INT16:
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      return 2;
    case LOOM_DTYPE_INT32:
    case LOOM_DTYPE_FLOAT32:
    case LOOM_DTYPE_QINT32:
      return 4;
    case LOOM_DTYPE_INT64:
    case LOOM_DTYPE_FLOAT64:
    case LOOM_DTYPE_COMPLEX64:
      return 8;
    case LOOM_DTYPE_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

// A set of dtypes (bit i = LoomDType i), as declare_capability takes it.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<LoomDType> types) {
    for (LoomDType t : types) mask_ |= uint64_t{1} << t;
  }
  constexpr explicit DTypeSet(uint64_t mask) : mask_(mask) {}
  constexpr uint64_t mask() const { return mask_; }
  constexpr bool contains(LoomDType t) const { return (mask_ >> t) & 1; }
  constexpr DTypeSet operator|(DTypeSet o) const { return DTypeSet(mask_ | o.mask_); }
  // "float32, float64"
  std::string to_string() const {
    std::string out;
    for (int t = 0; t < LOOM_DTYPE_COUNT; ++t) {
      if (!contains(static_cast<LoomDType>(t))) continue;
      out += (out.empty() ? "" : ", ") + std::string(dtype_name(static_cast<LoomDType>(t)));
    }
    return out;
  }

 private:
  uint64_t mask_ = 0;
};

namespace dtypes {
inline constexpr DTypeSet floating{LOOM_DTYPE_FLOAT16, LOOM_DTYPE_BFLOAT16, LOOM_DTYPE_FLOAT32,
                                   LOOM_DTYPE_FLOAT64};
inline constexpr DTypeSet float32_64{LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64};
inline constexpr DTypeSet integral{LOOM_DTYPE_UINT8, LOOM_DTYPE_INT8, LOOM_DTYPE_INT16,
                                   LOOM_DTYPE_INT32, LOOM_DTYPE_INT64};
inline constexpr DTypeSet boolean{LOOM_DTYPE_BOOL};
inline constexpr DTypeSet integral_and_bool = integral | boolean;
inline constexpr DTypeSet all = floating | integral | boolean;  // not the quantized types
inline constexpr DTypeSet numeric = floating | integral;        // all but bool
// The complex dtypes (ABI 1.9): a kernel declares them explicitly, never through `all`.
inline constexpr DTypeSet complex{LOOM_DTYPE_COMPLEX64, LOOM_DTYPE_COMPLEX128};
// The dtypes with a C++ type (loop.hpp's for_each_dtype): all but float16 and bfloat16.
inline constexpr DTypeSet standard = float32_64 | integral | boolean;
}  // namespace dtypes

}  // namespace loom::sdk
