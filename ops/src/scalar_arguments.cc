// The op library's checks of Scalar arguments against the dtype they are converted to
// (Note [Scalars that overflow]): structured ops call check_scalar_fits with their compute
// dtype; fill_.Scalar, which no structured rule covers, gets a Structured-key kernel.
#include "scalar_arguments.h"

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
  try {
    const auto* self = reinterpret_cast<const TensorImpl*>(call->args[0].u.tensor);
    OperatorHandle op = OperatorHandle::from_abi(call->op);
    check_scalar_fits(op.name(), "value", call->args[1], self->dtype());
    Dispatcher::instance().redispatch_checked_arguments(op, DispatchKeySet(call->key_set),
                                                        call->args, call->num_args, call->returns,
                                                        call->num_returns);
    return nullptr;
  } catch (const Error& e) {
    return dispatch::make_host_error(static_cast<int32_t>(e.code()), e.what());
  }
}

}  // namespace

void register_scalar_checks(const dispatch::Registrant* owner) {
  Dispatcher& d = Dispatcher::instance();
  d.register_kernel(d.find_defined("loom::fill_.Scalar"), DispatchKey::Structured,
                    {&fill_kernel, nullptr}, owner, "scalar fits self's dtype")
      .release();
}

}  // namespace loom::ops
