// The standard op table, expanded from ops.def.
#include "loom/ops/op_library.h"

namespace loom {

std::span<const OpDefinition> standard_ops() {
  static constexpr OpDefinition kOps[] = {
#define LOOM_OP(schema, tags, rule) {schema, tags, OutputRule::rule, LOOM_OP_FAMILY},
#include "ops.def"
#undef LOOM_OP
  };
  return kOps;
}

}  // namespace loom
