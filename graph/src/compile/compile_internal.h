// What the parts of loom::compile share inside libloom_graph: the compiler plugin's
// table, a capture turned into a graph, guards, and the generalisation of a graph over
// a size that changed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/compile.h"
#include "loom/compiler_api.h"
#include "loom/graph.h"

namespace loom::compiler::detail {

inline constexpr const char* kComponent = "compile";

// The compiler plugin's table; throws "[compile] the compiler plugin is not loaded ..."
// when it is not. Valid inside the caller's ReadSection only.
const LoomCompilerApi& plugin_table();
// Rethrows a table error as loom::Error("[compile] ...").
void check(LoomError* err, const char* what);

// A function captured once: its graph (inputs first the call's tensors, then the
// tensors it read that it did not make, by reference), those tensors, and what the
// capture found.
struct Captured {
  graph::Graph graph;
  std::vector<Tensor> constants;  // graph inputs after the call's tensors, in order
  std::vector<GraphBreak> breaks;
  // Values of the graph read on the host (item()): their node outputs, graph outputs
  // after the function's own, and what was read when captured.
  std::vector<double> host_reads;
  size_t function_outputs = 0;      // the function's outputs (then the host reads)
  std::vector<uint8_t> contiguous;  // per value: was its tensor contiguous when captured
  int ops = 0;
  bool mutates_state = false;  // an in-place write to an input or a held tensor
  std::string unsupported;     // why this capture cannot be replayed, or empty
};

// Calls `eager` with the Tracer key on (Note [Capturing op calls] in the plugin) and builds
// the graph of what it did. `outputs` receives the function's results. `state` names
// held tensors (a module's parameters and buffers) in the graph.
Captured capture(const std::vector<Tensor>& inputs, const CompiledFunction::Eager& eager,
                 const std::unordered_map<const void*, std::string>& state,
                 std::vector<Tensor>* outputs);

// The dtype a pointwise node computes in: its result's, or for a comparison the promoted
// dtype of its operands.
ScalarType compute_dtype(const graph::Graph& g, const graph::Node& node);

}  // namespace loom::compiler::detail
