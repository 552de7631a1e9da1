// Making a captured graph symbolic in the sizes that changed between two captures
// (Note [Automatic dynamic shapes]).
#pragma once

#include <string>
#include <vector>

#include "compile_internal.h"
#include "guards.h"

namespace loom::compiler::detail {

// Rewrites `now` (captured at the call's sizes) so that each dimension of `dims` is a
// symbol, using `before` (the graph of the same function captured at other sizes, before
// any pass) to tell which int
// arguments are sizes. `before_sizes` / `now_sizes` give each dim's size in the two
// captures. Returns an empty string on success, else why the graph cannot be made
// symbolic (it then stays specialised to the call's sizes).
std::string generalise(const graph::Graph& before, Captured& now, const DynamicDims& dims,
                       const std::vector<std::vector<int64_t>>& before_sizes,
                       const std::vector<std::vector<int64_t>>& now_sizes);

}  // namespace loom::compiler::detail
