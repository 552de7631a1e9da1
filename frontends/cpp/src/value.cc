// loom::Value: construction from optional tensors, scalars and borrowed int lists, and
// the checked accessors.
#include "loom/value.h"

#include "loom/core/error.h"

namespace loom {

Value::Value(std::optional<loom::Tensor> t) {
  if (t && t->defined()) v_ = std::move(*t);
}

Value::Value(const Scalar& s) {
  if (s.is_floating_point()) {
    v_ = s.to_double();
  } else if (s.is_bool()) {
    v_ = s.to_bool();
  } else {
    v_ = s.to_int();
  }
}

Value::Value(const loom::IntList& v) : v_(std::vector<int64_t>(v.span().begin(), v.span().end())) {}

std::string_view value_kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::None:
      return "None";
    case Value::Kind::Tensor:
      return "Tensor";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::Double:
      return "float";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::String:
      return "str";
    case Value::Kind::Dtype:
      return "ScalarType";
    case Value::Kind::Device:
      return "Device";
    case Value::Kind::IntList:
      return "int[]";
    case Value::Kind::DoubleList:
      return "float[]";
    case Value::Kind::BoolList:
      return "bool[]";
    case Value::Kind::TensorList:
      return "Tensor[]";
    case Value::Kind::OptionalTensorList:
      return "Tensor?[]";
  }
  return "?";
}

std::string_view Value::type_name() const {
  return value_kind_name(kind());
}

template <typename T>
const T& Value::get(Kind expected) const {
  const T* p = std::get_if<T>(&v_);
  LOOM_CHECK(p != nullptr, "loom::Value", "expected ", value_kind_name(expected), ", found ",
             type_name());
  return *p;
}

const loom::Tensor& Value::to_tensor() const {
  return get<loom::Tensor>(Kind::Tensor);
}
int64_t Value::to_int() const {
  return get<int64_t>(Kind::Int);
}
double Value::to_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
  return get<double>(Kind::Double);
}
bool Value::to_bool() const {
  return get<bool>(Kind::Bool);
}
Scalar Value::to_scalar() const {
  if (is_int()) return Scalar(std::get<int64_t>(v_));
  if (is_bool()) return Scalar(std::get<bool>(v_));
  LOOM_CHECK(is_double(), "loom::Value", "expected a number (int, float or bool), found ",
             type_name());
  return Scalar(std::get<double>(v_));
}
const std::string& Value::to_string() const {
  return get<std::string>(Kind::String);
}
ScalarType Value::to_dtype() const {
  return get<ScalarType>(Kind::Dtype);
}
loom::Device Value::to_device() const {
  return get<loom::Device>(Kind::Device);
}
const std::vector<int64_t>& Value::to_int_list() const {
  return get<std::vector<int64_t>>(Kind::IntList);
}
const std::vector<double>& Value::to_double_list() const {
  return get<std::vector<double>>(Kind::DoubleList);
}
const std::vector<bool>& Value::to_bool_list() const {
  return get<std::vector<bool>>(Kind::BoolList);
}
const std::vector<loom::Tensor>& Value::to_tensor_list() const {
  return get<std::vector<loom::Tensor>>(Kind::TensorList);
}
const std::vector<std::optional<loom::Tensor>>& Value::to_optional_tensor_list() const {
  return get<std::vector<std::optional<loom::Tensor>>>(Kind::OptionalTensorList);
}

}  // namespace loom
