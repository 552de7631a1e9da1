// The argument-check table (over the families' checks/<family>.cc) and the Structured-key
// kernel that runs a check before the call goes on to the backend.
#include "absl/container/flat_hash_map.h"
#include "argument_check.h"
#include "src/structured_key_kernel.h"

namespace loom::ops {

// Note [Argument checks]
// ~~~~~~~~~~~~~~~~~~~~~~
// A structured op's arguments are checked once, by its rule, before any backend runs
// (Note [Structured ops]). An unstructured op's kernel gets the arguments as the caller
// gave them, so every backend used to check them again, each with its own message:
// uniform_'s range (the CPU printed 1e+06 where the GPU printed 1000000.000000, and only
// the CPU refused bounds beyond the dtype's range), index tensors of a wrong dtype,
// embedding_bag's offsets. Such checks live here instead, one file per family
// (checks/<family>.cc), each a function of the boxed arguments (ShapeArgs). The op library
// registers a kernel for the op at the Structured key, which every call passes before
// its backend (meta tensors included, and decompositions run at a backend key): it runs
// the check, then passes the call on below. An op that decomposes above the Structured
// key (at Autograd, when autograd has no formula of its own) is checked by the ops it
// decomposes into instead, and a decomposition whose own loops rely on a check calls it
// itself (embedding_bag's offsets, check_bag_offsets). So every backend, a vendor's too, refuses
// the same inputs with the same message, and its kernel may assume what the check guarantees.
// Checks that need the data of a device tensor stay with the backend that has the data (bernoulli's
// probabilities, indices out of range).

namespace {

LoomError* checked_kernel(void* check, const LoomKernelCall* call) {
  return run_structured_kernel([&] {
    const dispatch::OperatorHandle op = dispatch::OperatorHandle::from_abi(call->op);
    reinterpret_cast<ArgumentCheck>(check)(ShapeArgs(op.name(), call->args, call->num_args));
    redispatch_below(call);
  });
}

ArgumentCheck find_argument_check(std::string_view op) {
  static const auto* table = [] {
    auto* map = new absl::flat_hash_map<std::string_view, ArgumentCheck>();
    for (auto family : {
#define LOOM_FAMILY(family) family##_argument_checks(),
#include "argument_check_families.inc"
#undef LOOM_FAMILY
         }) {
      for (const ArgumentCheckEntry& e : family) map->emplace(e.op, e.check);
    }
    return map;
  }();
  auto it = table->find(op);
  return it == table->end() ? nullptr : it->second;
}

}  // namespace

void register_argument_check(dispatch::OperatorHandle op, const dispatch::Registrant* owner) {
  ArgumentCheck check = find_argument_check(op.name());
  if (check == nullptr) return;
  dispatch::Dispatcher::instance()
      .register_kernel(op, DispatchKey::Structured,
                       {&checked_kernel, reinterpret_cast<void*>(check)}, owner, "argument check")
      .release();
}

}  // namespace loom::ops
