// What the passes (passes.cc, fusion.cc, pool_gradients.cc) ask of nodes and graphs: the
// facts of an operator, the values a node reads, a free value name, and whether a
// reduction's dims are a plane sum's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loom/graph.h"

namespace loom::graph::detail {

struct OpFacts {
  bool side_effects = false;   // writes an argument, draws random numbers or reads on the host
  bool returns_alias = false;  // a view op: a return aliases an argument (`Tensor(a)`)
  bool impure = false;         // draws random numbers or reads a value on the host
};

// The facts of `op` (a dispatcher operator or a symbolic builtin), cached per name.
const OpFacts& facts_of(const std::string& op);

// Calls `read` for each value `node` reads, list items included.
void for_each_read(const Node& node, const std::function<void(ValueId)>& read);

// `base`, or base_<n> when `g` has a value of that name.
std::string unique_value_name(const Graph& g, const std::string& base);

// Whether `dims` (of a sum over a tensor of rank `rank`, negative ones counted from the
// end) are every dim but the second: [0, 2, ..., rank - 1], a convolution's bias gradient.
bool all_but_channels(const std::vector<int64_t>& dims, int64_t rank);

}  // namespace loom::graph::detail
