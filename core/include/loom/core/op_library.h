// The standard op library: one declarative entry per operator (schema and tags). The
// dispatcher defines every entry at start-up, owned by "core"; backends only register
// kernels for them. Issue #3 grows this table into the full op set with shape rules.
#pragma once

#include <span>
#include <string_view>

namespace loom {

struct OpDefinition {
  std::string_view schema;  // PyTorch grammar
  std::string_view tags;    // comma-separated: pointwise, reduction, inplace, core, ...
};

std::span<const OpDefinition> standard_ops();

}  // namespace loom
