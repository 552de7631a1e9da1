// loom::Value, one argument or result of a call by op name (loom/call.h): None, a
// tensor, a number, a string, a dtype, a device or a list of them, the kinds a schema
// argument can take.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "loom/core/device.h"
#include "loom/core/int_list.h"
#include "loom/core/scalar.h"
#include "loom/core/scalar_type.h"
#include "loom/ops/tensor.h"

namespace loom {

class Value {
 public:
  enum class Kind {
    None,
    Tensor,
    Int,
    Double,
    Bool,
    String,
    Dtype,
    Device,
    IntList,
    DoubleList,
    BoolList,
    TensorList,
    OptionalTensorList,  // `Tensor?[]`: elements may be None
  };

  Value() = default;                                        // None
  Value(std::nullopt_t) {}                                  // NOLINT
  Value(loom::Tensor t) : v_(std::move(t)) {}               // NOLINT
  Value(std::optional<loom::Tensor> t);                     // NOLINT: None when empty
  Value(int v) : v_(int64_t{v}) {}                          // NOLINT
  Value(int64_t v) : v_(v) {}                               // NOLINT
  Value(double v) : v_(v) {}                                // NOLINT
  Value(bool v) : v_(v) {}                                  // NOLINT
  Value(const char* s) : v_(std::string(s)) {}              // NOLINT
  Value(std::string s) : v_(std::move(s)) {}                // NOLINT
  Value(ScalarType t) : v_(t) {}                            // NOLINT
  Value(loom::Device d) : v_(d) {}                          // NOLINT
  Value(const Scalar& s);                                   // NOLINT: Int, Double or Bool
  Value(std::vector<int64_t> v) : v_(std::move(v)) {}       // NOLINT
  Value(const loom::IntList& v);                            // NOLINT
  Value(std::vector<double> v) : v_(std::move(v)) {}        // NOLINT
  Value(std::vector<bool> v) : v_(std::move(v)) {}          // NOLINT
  Value(std::vector<loom::Tensor> v) : v_(std::move(v)) {}  // NOLINT
  Value(std::vector<std::optional<loom::Tensor>> v) : v_(std::move(v)) {}  // NOLINT

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  // "None", "Tensor", "int", "float", "bool", "str", "ScalarType", "Device", "int[]",
  // "float[]", "bool[]", "Tensor[]", "Tensor?[]": the schema spelling of the kind.
  std::string_view type_name() const;

  bool is_none() const { return kind() == Kind::None; }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_double() const { return kind() == Kind::Double; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_string() const { return kind() == Kind::String; }
  bool is_tensor_list() const { return kind() == Kind::TensorList; }

  // Each throws "[loom::Value] expected <kind>, found <kind>" for another kind.
  // to_double also takes an Int; to_scalar takes Int, Double or Bool.
  const loom::Tensor& to_tensor() const;
  int64_t to_int() const;
  double to_double() const;
  bool to_bool() const;
  Scalar to_scalar() const;
  const std::string& to_string() const;
  ScalarType to_dtype() const;
  loom::Device to_device() const;
  const std::vector<int64_t>& to_int_list() const;
  const std::vector<double>& to_double_list() const;
  const std::vector<bool>& to_bool_list() const;
  const std::vector<loom::Tensor>& to_tensor_list() const;
  const std::vector<std::optional<loom::Tensor>>& to_optional_tensor_list() const;

 private:
  template <typename T>
  const T& get(Kind expected) const;

  // Alternatives in the order of Kind.
  std::variant<std::monostate, loom::Tensor, int64_t, double, bool, std::string, ScalarType,
               loom::Device, std::vector<int64_t>, std::vector<double>, std::vector<bool>,
               std::vector<loom::Tensor>, std::vector<std::optional<loom::Tensor>>>
      v_;
};

std::string_view value_kind_name(Value::Kind kind);

}  // namespace loom
