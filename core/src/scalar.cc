// Scalar printing and default dtypes.
#include "loom/core/scalar.h"

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
