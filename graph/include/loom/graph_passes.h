// Passes over the graph IR (loom/graph.h), each in place and each keeping the graph
// valid: dead-code elimination, common-subexpression elimination, constant folding,
// activations fused into the products before them, and pointwise fusion into kernels the
// compiler plugin builds. loom::compile runs them in that order
// (Note [The compile pipeline] in graph/src/compile/compiled_function.cc); they are
// public so that a graph from anywhere (a .pt2 program, one built by hand) can use them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph.h"
#include "loom/ops/tensor.h"

namespace loom::graph {

// Whether a node must stay although nobody reads its outputs: it writes to an argument
// (a `Tensor(a!)` schema), draws random numbers (the random family: removing one would
// shift the numbers later ones draw) or reads a value on the host.
bool has_side_effects(const Node& node);

// Removes the nodes whose outputs nobody reads or returns and that have no side effects,
// the last first, so chains of dead nodes go at once. Returns how many were removed.
int eliminate_dead_code(Graph& graph);

// Replaces a node that calls the same operator with the same arguments as an earlier node
// by that node's outputs, when neither has side effects and no node between them writes
// to anything (a write through a view could change what an equal-looking node reads).
// Returns how many nodes were replaced.
int eliminate_common_subexpressions(Graph& graph);

// Note [Constant folding]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A node whose every argument is a constant or a folded value (ones, arange, a mask made
// of them with triu) computes the same tensor at every run: it runs once, here, and its
// value becomes a graph input (role Constant, target "_folded_<n>") appended after the
// others. Nodes that draw random numbers or read values on the host never fold; a write
// folds when the tensor it writes is folded (ones() records empty_strided and fill_).
// Only values that cannot change or leak fold: one that is returned, written by an op
// that does not fold, or read by a view op (whose alias could be written) is computed at
// each run as before, and so is a tensor read by an op that does not fold before a
// folded write changes it. Returns the folded
// tensors, for the new inputs in order (the caller passes them after the graph's other
// inputs).
std::vector<Tensor> fold_constants(Graph& graph, Device device);

// Replaces a conv2d or addmm whose result only an activation reads (relu, sigmoid and
// tanh after conv2d; relu and exact gelu after addmm) by one op that computes both,
// _conv2d_activation or _addmm_activation (Note [Fused epilogues] in
// graph/src/compile/epilogues.cc). Returns how many pairs were fused.
int fuse_epilogues(Graph& graph);

struct FusionOptions {
  std::optional<std::string> cache_dir;  // the kernel cache; nullopt: the plugin's default
  std::string debug_dir;                 // where programs and sources are written, or ""
  int min_nodes = 2;                     // shorter runs stay as they are
  // Whether two values' tensors shared memory when the graph was captured. Set, in-place
  // pointwise ops join runs (Note [In-place ops in fused kernels]); unset, they never do.
  std::function<bool(ValueId, ValueId)> shares_memory;
};

// One fused kernel that fuse_pointwise made.
struct FusedKernel {
  std::string op;                      // "compiled::kernel_<key>"
  std::string program;                 // Note [Fused kernel programs] in loom/compiler_api.h
  std::vector<std::string> fused_ops;  // the ops it replaced, in order
  int source = 0;                      // 0: built, 1: this process had it, 2: the disk cache
  double build_ms = 0;
};

// Note [Pointwise fusion]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A run of consecutive nodes that the compiler plugin can generate (its fusible ops, in
// a dtype it computes in), all on the CPU with one output shape, becomes one node
// calling a fused kernel: `compiled::kernel_<key>(Tensor[] inputs) -> Tensor[]`. Its
// inputs are the values the run reads from outside it; its outputs the values read
// after it or returned. An input is `dense` when it has the run's shape and was
// contiguous (`contiguous[value]`, from the capture), `scalar` when it has one element,
// else `strided`. Consecutive runs keep the program order, so writes and reads around
// them stay where they were. Needs the compiler plugin; returns the kernels made.
//
// Note [In-place ops in fused kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An optimizer's step is in-place ops on held tensors (`m.lerp_(g, 0.1)`, `v.mul_(b2)`,
// `p.addcdiv_(m, denom, -lr)`). Such an op joins a run as its functional form (mul_.Tensor
// as mul.Tensor: the same value, computed in the written tensor's dtype, so every tensor
// it reads must have that dtype). The kernel writes the last value of each tensor into
// it (`out v8 into a5`, when the tensor is a dense input of an element-wise kernel; the
// node passes it again in its `written` list, whose versions bump) or returns it as a
// fresh output that a copy_ node after the kernel writes back (strided tensors, row
// kernels). Reads inside the run see the written values, as in the program. This is
// sound only when nothing else reads the written memory meanwhile: the written tensor
// must not be a call input (another call may pass aliasing tensors) and, when captured,
// must have shared memory with no other value of the graph but its own in-place results
// (a view of it would be read stale).
//
// Note [Buffer reuse]
// ~~~~~~~~~~~~~~~~~~~
// A kernel's output takes the buffer of one of its inputs when that input dies in the
// run (read by nothing after it, not returned, not a graph input), is dense, has the
// output's dtype and shares memory with no other value: `out v3 into a1`, as in-place
// writes are made. Each element is read before it is written, so the kernel's result is
// the same, with one allocation (and its page faults) fewer. Needs `shares_memory`.
std::vector<FusedKernel> fuse_pointwise(Graph& graph, const std::vector<uint8_t>& contiguous,
                                        const FusionOptions& options = {});

}  // namespace loom::graph
