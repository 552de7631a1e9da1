// What the passes (passes.cc, fusion.cc) ask of nodes: the facts of an operator, and the
// values a node reads.
#pragma once

#include <functional>
#include <string>

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

}  // namespace loom::graph::detail
