// The standard op library: one declarative entry per operator (schema, tags, output
// rule), read from ops/ops.def. loom::ops::load_standard_library defines every entry,
// owned by "core", and derives the in-place and out= variants of structured ops;
// backends only register kernels.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace loom {

// How the core computes a structured op's output (Note [Structured ops]).
enum class OutputRule : uint8_t {
  None,           // not structured: the kernel allocates and checks
  Promoted,       // dtype = promotion of the tensor operands
  PromotedFloat,  // promoted; integer and bool results become float32
  Bool,           // computed in the promoted dtype, result bool
  Shaped,         // the op's shape rule (ops/shape_rules/) gives each output's
                  // shape and dtype; inputs reach the kernel unchanged
};

struct OpDefinition {
  std::string_view schema;  // PyTorch grammar
  std::string_view tags;    // comma-separated: pointwise, inplace, core, decomposition, ...
                            // (the family is not a tag: it is `family`)
                            // ("inplace_variant" asks a Shaped op for its `name_` form)
  OutputRule output = OutputRule::None;
  std::string_view family;  // the name of its ops/schemas/<family>.def
};

std::span<const OpDefinition> standard_ops();

}  // namespace loom
