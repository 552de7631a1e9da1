// What the op library's kernels on the Structured key share (device_copy.cc,
// scalar_arguments.cc, factory_outs.cc): run their check or preparation, pass the call
// on to the backend below, and turn a loom::Error into the error object kernels return.
#pragma once

#include "loom/core/error.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"

namespace loom::ops {

// Runs the call's op below the Structured key with the call's own arguments.
inline void redispatch_below(const LoomKernelCall* call) {
  dispatch::Dispatcher::instance().redispatch_checked_arguments(
      dispatch::OperatorHandle::from_abi(call->op), DispatchKeySet(call->key_set), call->args,
      call->num_args, call->returns, call->num_returns);
}

// Runs body(); returns null, or the host error object of the loom::Error it threw.
template <typename Body>
LoomError* run_structured_kernel(Body&& body) {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return dispatch::make_host_error(static_cast<int32_t>(e.code()), e.what());
  }
}

}  // namespace loom::ops
