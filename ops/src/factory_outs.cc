// The out= factories (arange, linspace, eye, randperm) resize their `out` to the length
// their arguments give before the backend runs, as PyTorch's do (silently: an out of the
// wrong size is how these ops are usually called): the op library's Structured kernels.
#include "factory_outs.h"

#include "structured_key_kernel.h"

#include <optional>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor_impl.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/boxing.h"
#include "loom/ops/creation.h"

namespace loom::ops {

using dispatch::Dispatcher;
using dispatch::OperatorHandle;

namespace {

Scalar scalar_of(const LoomValue& v) {
  if (v.tag == LOOM_VALUE_DOUBLE) return Scalar(v.u.d);
  if (v.tag == LOOM_VALUE_BOOL) return Scalar(v.u.i != 0);
  return Scalar(v.u.i);
}

// The shape `out` must have, or nullopt when the arguments are invalid (the backend's
// kernel then refuses them with its own message).
std::optional<std::vector<int64_t>> factory_shape(std::string_view op, const LoomValue* args) {
  if (op == "loom::arange.start_out") {
    return std::vector<int64_t>{
        arange_length(scalar_of(args[0]), scalar_of(args[1]), scalar_of(args[2]))};
  }
  if (op == "loom::linspace.out") {
    if (args[2].u.i < 0) return std::nullopt;
    return std::vector<int64_t>{args[2].u.i};
  }
  if (op == "loom::eye.m_out") {
    if (args[0].u.i < 0 || args[1].u.i < 0) return std::nullopt;
    return std::vector<int64_t>{args[0].u.i, args[1].u.i};
  }
  if (args[0].u.i < 0) return std::nullopt;  // randperm.out
  return std::vector<int64_t>{args[0].u.i};
}

LoomError* resize_then_run(void*, const LoomKernelCall* call) {
  return run_structured_kernel([&] {
    auto* out = reinterpret_cast<TensorImpl*>(call->args[call->num_args - 1].u.tensor);
    std::optional<std::vector<int64_t>> shape =
        factory_shape(OperatorHandle::from_abi(call->op).name(), call->args);
    if (shape && !same_shape(out->sizes(), *shape)) out->resize_contiguous(*shape);
    redispatch_below(call);
  });
}

}  // namespace

void register_factory_outs(const dispatch::Registrant* owner) {
  Dispatcher& d = Dispatcher::instance();
  for (const char* name :
       {"loom::arange.start_out", "loom::linspace.out", "loom::eye.m_out", "loom::randperm.out"}) {
    d.register_kernel(d.find_defined(name), DispatchKey::Structured, {&resize_then_run, nullptr},
                      owner, "resize the factory's out")
        .release();
  }
}

}  // namespace loom::ops
