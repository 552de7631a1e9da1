// Scalar arguments converted to a tensor's dtype must fit it (Note [Scalars that overflow]
// in loom/core/scalar.h): the checks the op library runs before any backend kernel.
#pragma once

#include <string>
#include <string_view>

#include "loom/core/scalar_type.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/plugin.h"

namespace loom::ops {

void refuse_overflowing_scalar(const std::string& op, std::string_view argument,
                               const LoomValue& value, ScalarType dtype);

// Throws "[op] value 300 of argument 'value' cannot be converted to type uint8 without
// overflow" when the boxed Scalar does not fit `dtype`; None and bools always fit.
inline void check_scalar_fits(const std::string& op, std::string_view argument,
                              const LoomValue& value, ScalarType dtype) {
  // Fast path (alpha=1 on the small-op path): small integers fit every dtype but bool.
  if (value.tag == LOOM_VALUE_INT && value.u.i >= -127 && value.u.i <= 127 &&
      dtype != ScalarType::Bool) {
    return;
  }
  if (value.tag == LOOM_VALUE_NONE || value.tag == LOOM_VALUE_BOOL) return;
  refuse_overflowing_scalar(op, argument, value, dtype);
}

// Registers the Structured kernel of loom::fill_.Scalar that checks its value against
// self's dtype; loom::fill_.Scalar must be defined.
void register_scalar_checks(const dispatch::Registrant* owner);

}  // namespace loom::ops
