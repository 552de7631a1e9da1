// Runs a graph (loom/graph.h) on one device through the dispatcher, so on whichever
// backend serves that device: cpu, cuda, a vendor's plugin, or meta (which computes
// every value's metadata without data).
//
//   loom::graph::Interpreter run(graph, loom::parse_device("cuda"));
//   std::vector<loom::Tensor> outputs = run(inputs);  // inputs: one per graph input
#pragma once

#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/graph.h"
#include "loom/ops/tensor.h"

namespace loom::graph {

// How the dispatcher serves a node on a device (`loom run --check`).
struct NodeSupport {
  std::string node;  // the node's first output
  std::string op;    // "loom::addmm"
  // "kernel", "view", "decomposition", "fallback", "builtin" or "missing" (Note [How a
  // node is served] in graph/src/interpreter.cc)
  std::string how;
  std::string provider;  // who registered the kernel ("cpu", "core"), when any
};

// Note [Prepared calls]
// ~~~~~~~~~~~~~~~~~~~~~
// The interpreter binds each node once, when it is made: the operator handle, the boxed
// constant arguments (with device constants replaced by the device it runs on) and the
// places where a value of the graph goes. Running a node then writes the tensors and
// symbolic numbers it reads into those places and calls Dispatcher::call: no name
// lookup, no schema binding and no allocation per node beyond the kernel's own. Each value is
// released after its last reader (Note [Freeing after the last use]), so a graph needs
// the memory of the values live at once, not of all of them.
class Interpreter {
 public:
  // Checks the graph (Graph::validate) and prepares it to run on `device`. The graph
  // must outlive the interpreter.
  Interpreter(const Graph& graph, Device device);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs the graph. `inputs` are the tensors of graph.inputs(), in order; each must be
  // on the interpreter's device and match its metadata: the dtype, the rank, every
  // fixed size, and symbolic sizes consistently bound within their ranges. Returns the
  // graph's outputs (a symbolic number as a 0-dim CPU tensor: int64, float64 or bool). Calls are
  // serialised: one run at a time per interpreter. Errors are loom::Error naming the
  // node ("[graph] node 'addmm' (loom::addmm): ...") or the input.
  std::vector<Tensor> operator()(std::span<const Tensor> inputs);

  // Binds each symbol of the inputs' metadata to its size in `inputs` (the check of
  // operator()); throws on a mismatch.
  std::unordered_map<std::string, int64_t> bind_symbols(std::span<const Tensor> inputs) const;

  // How each node would run on the device, before running it.
  std::vector<NodeSupport> support() const;

  Device device() const { return device_; }

  struct Step;

 private:
  const Graph& graph_;
  Device device_;
  std::vector<Step> steps_;
  std::mutex mutex_;
};

// Runs `graph` on the meta device with inputs made from the metadata of its inputs
// (symbolic sizes at their traced value) and records the metadata of every tensor value
// that has none, with the sizes of that run (fixed numbers: a size is not guessed to be
// symbolic). Values with metadata keep theirs. Throws when an op has no meta kernel.
void propagate_metadata(Graph& graph);

}  // namespace loom::graph
