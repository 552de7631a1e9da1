// What the parts of loom::compile share inside libloom_graph: the compiler plugin's
// table, a capture turned into a graph, guards, and the generalisation of a graph over
// a size that changed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/compile.h"
#include "loom/compiler_api.h"
#include "loom/graph.h"
#include "loom/graph_interpreter.h"
#include "loom/ops/op_library.h"

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
  std::vector<Tensor> folded;       // graph inputs after `constants` (Note [Constant folding])
  // Per value, the tensor it was when captured (while compiling only: cleared after).
  std::vector<Tensor> value_tensors;
  // A backward capture (Note [Compiling training]): per entry of `constants`, the forward
  // value it is (a tensor autograd saved), or kNoValue for a tensor held by reference.
  std::vector<graph::ValueId> from_forward;
  int ops = 0;
  bool mutates_state = false;  // an in-place write to an input or a held tensor
  std::string first_write;     // the op of the first such write
  std::string unsupported;     // why this capture cannot be replayed, or empty
};

// Calls `eager` with the Tracer key on (Note [Capturing op calls] in the plugin) and builds
// the graph of what it did. `outputs` receives the function's results. `state` names
// held tensors (a module's parameters and buffers) in the graph.
// `forward`, for a backward capture: a tensor that is none of the inputs is matched with
// the forward capture's values (by handle, or as an alias of the same memory: saved
// tensors are aliases), and becomes an input recorded in `from_forward`.
Captured capture(const std::vector<Tensor>& inputs, const CompiledFunction::Eager& eager,
                 const std::unordered_map<const void*, std::string>& state,
                 std::vector<Tensor>* outputs, const Captured* forward = nullptr);

// The backward half of a compiled training function (Note [Compiling training]).
struct BackwardGraph {
  Captured captured;  // inputs: one gradient per differentiable output, then `constants`
  std::vector<size_t> diff_inputs;   // forward graph inputs gradients flow to
  std::vector<size_t> diff_outputs;  // the function's outputs that require grad
  std::vector<int> grad_slot;        // per diff input: its gradient's backward output, or -1
  std::vector<int> saved_slot;       // per backward constant: its saved forward output, or -1
  size_t num_saved = 0;              // forward outputs after the function's and the host reads
  std::unique_ptr<graph::Interpreter> interpreter;
};

// Captures the backward of `forward` (just captured, with `outputs` the function's
// results and `inputs` the forward graph's inputs: the call's tensors, then the held
// ones) by running autograd::grad under capture, and adds the tensors it reads to the
// forward graph's outputs. Returns null, with `why`, when the function has nothing to
// differentiate or its backward cannot be captured.
std::unique_ptr<BackwardGraph> capture_backward(
    Captured& forward, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
    const std::unordered_map<const void*, std::string>& state, std::string* why);

// Moves relu's gradient mask before max pooling's gradient in `backward`, reading the
// pooled values (saved by `forward` now, when they were not): Note [Masks before max-pool
// gradients] in pool_gradients.cc. Returns how many masks moved.
int mask_before_pool_gradients(Captured& forward, BackwardGraph& backward);

// Runs a compiled training function: the forward graph without recording, then its
// outputs get one autograd node whose backward runs the backward graph.
std::vector<Tensor> run_joint(graph::Interpreter& forward, const Captured& forward_captured,
                              const std::shared_ptr<BackwardGraph>& backward,
                              const std::vector<Tensor>& inputs, std::string* host_read_mismatch);

// "loom::add.Tensor" for an op library entry.
std::string op_name_of(const OpDefinition& def);
// The names of the op library's ops whose definition `keep` accepts (by tags, family).
std::unordered_set<std::string> standard_ops_where(
    const std::function<bool(const OpDefinition&)>& keep);

// The dtype a pointwise node computes in: its result's, or for a comparison the promoted
// dtype of its operands.
ScalarType compute_dtype(const graph::Graph& g, const graph::Node& node);

}  // namespace loom::compiler::detail
