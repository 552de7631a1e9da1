// The op library's checks of Scalar arguments against the dtype they are converted to
// (Note [Scalars that overflow]): structured ops call check_scalar_fits with their compute
// dtype; fill_.Scalar, which no structured rule covers, gets a Structured-key kernel.
#include "scalar_arguments.h"

#include "structured_key_kernel.h"

#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor_impl.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/boxing.h"

namespace loom::ops {

using dispatch::Dispatcher;
using dispatch::OperatorHandle;

void refuse_overflowing_scalar(const std::string& op, std::string_view argument,
                               const LoomValue& value, ScalarType dtype) {
  Scalar s = value.tag == LOOM_VALUE_DOUBLE ? Scalar(value.u.d)
             : value.tag == LOOM_VALUE_BOOL ? Scalar(value.u.i != 0)
                                            : Scalar(value.u.i);
  if (value.tag != LOOM_VALUE_INT && value.tag != LOOM_VALUE_DOUBLE &&
      value.tag != LOOM_VALUE_BOOL) {
    return;  // not a Scalar: the dispatcher's argument check has the say
  }
  if (fits_without_overflow(s, dtype)) return;
  fail(op, "value ", s.to_string(), " of argument '", argument, "' cannot be converted to type ",
       scalar_type_name(dtype), " without overflow");
}

namespace {

LoomError* fill_kernel(void*, const LoomKernelCall* call) {
  return run_structured_kernel([&] {
    const auto* self = reinterpret_cast<const TensorImpl*>(call->args[0].u.tensor);
    check_scalar_fits(OperatorHandle::from_abi(call->op).name(), "value", call->args[1],
                      self->dtype());
    redispatch_below(call);
  });
}

}  // namespace

void register_scalar_checks(const dispatch::Registrant* owner) {
  Dispatcher& d = Dispatcher::instance();
  d.register_kernel(d.find_defined("loom::fill_.Scalar"), DispatchKey::Structured,
                    {&fill_kernel, nullptr}, owner, "scalar fits self's dtype")
      .release();
}

}  // namespace loom::ops
