// Facts about loom's element types.
#include "loom/core/scalar_type.h"

#include <array>

#include "loom/core/error.h"

namespace loom {
namespace {

struct ScalarTypeInfo {
  std::string_view name;
  size_t size;
};

constexpr std::array<ScalarTypeInfo, kNumScalarTypes> kInfo = {{
    {"bool", 1},
    {"uint8", 1},
    {"int8", 1},
    {"int16", 2},
    {"int32", 4},
    {"int64", 8},
    {"float16", 2},
    {"bfloat16", 2},
    {"float32", 4},
    {"float64", 8},
    {"qint8", 1},
    {"quint8", 1},
    {"qint32", 4},
    {"complex64", 8},
    {"complex128", 16},
}};

const ScalarTypeInfo& info(ScalarType t) {
  return kInfo[static_cast<size_t>(t)];
}

}  // namespace

size_t element_size(ScalarType t) {
  return info(t).size;
}
std::string_view scalar_type_name(ScalarType t) {
  return info(t).name;
}

bool is_floating_point(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}

bool is_integral(ScalarType t, bool include_bool) {
  switch (t) {
    case ScalarType::Bool:
      return include_bool;
    case ScalarType::UInt8:
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64:
      return true;
    default:
      return false;
  }
}

bool is_quantized(ScalarType t) {
  return t == ScalarType::QInt8 || t == ScalarType::QUInt8 || t == ScalarType::QInt32;
}

bool is_complex(ScalarType t) {
  return t == ScalarType::ComplexFloat || t == ScalarType::ComplexDouble;
}

ScalarType real_part_type(ScalarType t) {
  if (t == ScalarType::ComplexFloat) return ScalarType::Float32;
  if (t == ScalarType::ComplexDouble) return ScalarType::Float64;
  return t;
}

ScalarType complex_type_of(ScalarType t) {
  if (t == ScalarType::Float64 || t == ScalarType::ComplexDouble) return ScalarType::ComplexDouble;
  LOOM_CHECK(is_floating_point(t) || t == ScalarType::ComplexFloat, "dtype",
             "expected a floating-point type to make complex, found ", scalar_type_name(t));
  return ScalarType::ComplexFloat;
}

ScalarType parse_scalar_type(std::string_view name) {
  for (int i = 0; i < kNumScalarTypes; ++i) {
    if (kInfo[i].name == name) return static_cast<ScalarType>(i);
  }
  struct Alias {
    std::string_view alias;
    ScalarType type;
  };
  static constexpr Alias kAliases[] = {
      {"float", ScalarType::Float32},       {"f32", ScalarType::Float32},
      {"double", ScalarType::Float64},      {"f64", ScalarType::Float64},
      {"half", ScalarType::Float16},        {"f16", ScalarType::Float16},
      {"bf16", ScalarType::BFloat16},       {"long", ScalarType::Int64},
      {"int", ScalarType::Int32},           {"short", ScalarType::Int16},
      {"cfloat", ScalarType::ComplexFloat}, {"cdouble", ScalarType::ComplexDouble},
  };
  for (const Alias& a : kAliases) {
    if (a.alias == name) return a.type;
  }
  fail("dtype", "unknown dtype '", name,
       "' (expected one of bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, "
       "float64, qint8, quint8, qint32, complex64, complex128)");
}

ScalarType scalar_type_from_int(int64_t value, std::string_view component) {
  LOOM_CHECK(value >= 0 && value < kNumScalarTypes, std::string(component), "dtype code ", value,
             " is out of range (expected 0..", kNumScalarTypes - 1, ")");
  return static_cast<ScalarType>(value);
}

}  // namespace loom
