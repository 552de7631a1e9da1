// Registering the standard op library with the dispatcher: each ops.def entry, with the
// meta kernels and decompositions of unstructured ops and the variants of structured ones.
#include "loom/ops/standard_library.h"

#include <mutex>

#include "checks/argument_check.h"
#include "decompositions/decomposition.h"
#include "device_copy.h"
#include "factory_outs.h"
#include "loom/core/error.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/op_library.h"
#include "loom/ops/structured_schemas.h"
#include "meta/meta_kernel.h"
#include "scalar_arguments.h"
#include "structured_ops.h"
#include "views/view_kernel.h"

namespace loom::ops {

using dispatch::Dispatcher;
using dispatch::OperatorHandle;

namespace {

// The meta kernel of ops that only write into `self` (fill_, copy_, random fills): meta
// tensors have no memory, so there is nothing to do but return self.
LoomError* meta_returns_self(void*, const LoomKernelCall* call) {
  reinterpret_cast<TensorImpl*>(call->args[0].u.tensor)->retain();
  call->returns[0] = call->args[0];
  return nullptr;
}

bool writes_only_self(const OpDefinition& def, std::string_view name) {
  const bool random_fill = def.family == "random" && has_tag(def.tags, "inplace");
  return name == "loom::fill_.Scalar" || name == "loom::copy_" || random_fill;
}

// An op the kernels of a backend compute (or decompose): its definition, its argument
// check, its Meta kernel and its decomposition; or a view op, with its one kernel for
// every backend.
void define_unstructured_op(const OpDefinition& def, const dispatch::Registrant* owner) {
  Dispatcher& d = Dispatcher::instance();
  OperatorHandle op;
  dispatch::OpTraits traits{.idempotent_writes = has_tag(def.tags, "idempotent_write")};
  d.define(def.schema, owner, &op, traits).release();
  register_argument_check(op, owner);
  if (writes_only_self(def, op.name())) {
    d.register_kernel(op, DispatchKey::Meta, {&meta_returns_self, nullptr}, owner, "meta no-op")
        .release();
  }
  if (LoomKernelFn meta = find_meta_kernel(op.name())) {
    d.register_kernel(op, DispatchKey::Meta, {meta, nullptr}, owner, "meta kernel").release();
  }
  if (has_tag(def.tags, "decomposition")) {
    LoomKernelFn kernel = find_decomposition(op.name());
    LOOM_CHECK(kernel != nullptr, "op-library", "op '", op.name(),
               "' is tagged decomposition but has none in ops/decompositions/");
    d.register_kernel(op, DispatchKey::CompositeImplicit, {kernel, nullptr}, owner, "decomposition")
        .release();
  } else if (has_tag(def.tags, "view") || has_tag(def.tags, "metadata")) {
    LoomKernelFn kernel = find_view_kernel(op.name());
    LOOM_CHECK(kernel != nullptr, "op-library", "op '", op.name(),
               "' is tagged view or metadata but has no kernel in ops/views/view.cc");
    d.register_kernel(op, DispatchKey::CompositeExplicit, {kernel, nullptr}, owner, "view")
        .release();
  }
}

}  // namespace

const dispatch::Registrant* op_library_registrant() {
  static const auto* core = new dispatch::Registrant{"core", "", /*forwards_errors=*/true};
  return core;
}

void load_standard_library() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const OpDefinition& def : standard_ops()) {
      if (def.output == OutputRule::None) {
        define_unstructured_op(def, op_library_registrant());
      } else {
        define_structured_op(def, op_library_registrant());
      }
    }
    register_device_copy(op_library_registrant());
    register_scalar_checks(op_library_registrant());
    register_factory_outs(op_library_registrant());
  });
}

}  // namespace loom::ops
