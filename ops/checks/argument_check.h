// Argument checks of unstructured ops (Note [Argument checks]): the checks every backend
// would otherwise repeat, run by the op library before the call reaches any backend.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "loom/dispatcher/dispatcher.h"
#include "shape_rules/shape_rule.h"

namespace loom::ops {

// Throws "[op] expected ..., found ..." (ShapeArgs::fail) when the arguments are wrong.
using ArgumentCheck = void (*)(const ShapeArgs& args);

struct ArgumentCheckEntry {
  std::string_view op;  // qualified name: "loom::uniform_"
  ArgumentCheck check;
};

// The checks of each op family, defined in checks/<family>.cc; the build finds the
// families (argument_check_families.inc, Note [Op families as data]).
#define LOOM_FAMILY(family) std::span<const ArgumentCheckEntry> family##_argument_checks();
#include "argument_check_families.inc"
#undef LOOM_FAMILY

// embedding_bag's offsets (`starts`, on the host) over `n` indices: first 0, then
// non-decreasing and within the indices. The check of embedding_bag and its decomposition
// (which may run above the Structured key, unchecked) both call it.
void check_bag_offsets(std::string_view op, std::span<const int64_t> starts, int64_t n);

// Registers the Structured-key kernel of `op` that runs its check, when it has one.
void register_argument_check(dispatch::OperatorHandle op, const dispatch::Registrant* owner);

}  // namespace loom::ops
