// Structured ops (Note [Structured ops]): defining a structured op's functional, in-place
// and out= variants with the op library's kernels for them, and the Structured-key kernel
// that prepares every backend out= call.
#pragma once

#include <string>
#include <vector>

#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/op_library.h"
#include "shape_rules/shape_rule.h"

namespace loom::ops {

// Defines the variants of the structured op `def` (rule other than None), owned by
// `owner`, with their composite, Structured and Meta kernels.
void define_structured_op(const OpDefinition& def, const dispatch::Registrant* owner);

}  // namespace loom::ops
