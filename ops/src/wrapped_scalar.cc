// wrapped_scalar: the 0-dim tensor a C++ number becomes as an op's tensor argument.
#include "loom/ops/tensor.h"

namespace loom {

Tensor wrapped_scalar(const Scalar& value) {
  const Device host{kCPU, -1};
  Tensor t;
  if (value.is_floating_point()) {
    t = empty({}, ScalarType::Float64, host);
    *static_cast<double*>(t.data_ptr()) = value.to_double();
  } else if (value.is_bool()) {
    t = empty({}, ScalarType::Bool, host);
    *static_cast<bool*>(t.data_ptr()) = value.to_bool();
  } else {
    t = empty({}, ScalarType::Int64, host);
    *static_cast<int64_t*>(t.data_ptr()) = value.to_int();
  }
  t.impl()->set_wrapped_number(true);
  return t;
}

}  // namespace loom
