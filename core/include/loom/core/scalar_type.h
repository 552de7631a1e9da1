// The element types (docs/architecture.md §2) and the facts about them (size, name, category). The
// numbering equals the ABI's LoomDType so values cross the plugin boundary unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace loom {

enum class ScalarType : int8_t {
  Bool = 0,
  UInt8 = 1,
  Int8 = 2,
  Int16 = 3,
  Int32 = 4,
  Int64 = 5,
  Float16 = 6,
  BFloat16 = 7,
  Float32 = 8,
  Float64 = 9,
  QInt8 = 10,
  QUInt8 = 11,
  QInt32 = 12,
  ComplexFloat = 13,   // complex64: two float32 (real, imaginary), as std::complex<float>
  ComplexDouble = 14,  // complex128: two float64
};

inline constexpr int kNumScalarTypes = 15;

size_t element_size(ScalarType t);
std::string_view scalar_type_name(ScalarType t);  // "float32", "int64", ...
bool is_floating_point(ScalarType t);
bool is_integral(ScalarType t, bool include_bool);
bool is_quantized(ScalarType t);
bool is_complex(ScalarType t);
// The real type of a complex type's parts (float32 for complex64), or t itself.
ScalarType real_part_type(ScalarType t);
// The complex type whose parts are t (complex64 for float32, complex128 for float64).
ScalarType complex_type_of(ScalarType t);
// Parses "float32", "float", "f32", "int64", "long", ... ; throws loom::Error otherwise.
ScalarType parse_scalar_type(std::string_view name);
// Validates an integer read from the ABI; throws loom::Error naming `component`.
ScalarType scalar_type_from_int(int64_t value, std::string_view component);

}  // namespace loom
