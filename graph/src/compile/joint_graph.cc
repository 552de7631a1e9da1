// Compiling training: a forward graph and its backward graph, joined by one autograd node.
//
// Note [Compiling training]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// When a call records gradients (grad mode on, and a tensor argument or a held tensor
// requires grad), the capture that ran the function also recorded autograd's graph of it.
// Right after, autograd::grad runs that graph's backward from the outputs that require
// grad (with placeholder gradients) to the inputs that require grad, under capture too:
// the backward formulas' ops become a second graph, whose inputs are the outputs'
// gradients and the tensors the formulas read. Those are the forward's values autograd
// saved (known by handle, or as aliases of the same memory: saved tensors are aliases),
// which become extra outputs of the forward graph, or tensors held by reference. Both
// graphs go through the passes and fusion. A compiled call then runs the forward graph
// without recording and gives its outputs one node ("CompiledFunctionBackward",
// autograd::apply_function) whose backward runs the backward graph on the saved values:
// AOTAutograd's joint graph, with loom's own formulas. Such a function is differentiable
// once (its backward graph is not itself recorded), and its graphs stay specialised to
// their sizes (the backward's view sizes are not generalised yet).
#include <algorithm>

#include "compile_internal.h"
#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/factories.h"
#include "loom/tensor_io.h"

namespace loom::compiler::detail {

std::unique_ptr<BackwardGraph> capture_backward(
    Captured& forward, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
    const std::unordered_map<const void*, std::string>& state, std::string* why) {
  auto b = std::make_unique<BackwardGraph>();
  std::vector<Tensor> diff_in, diff_out, seeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].requires_grad() && is_floating_point(inputs[i].dtype())) {
      b->diff_inputs.push_back(i);
      diff_in.push_back(inputs[i]);
    }
  }
  std::vector<graph::ValueId> output_values(
      forward.graph.outputs().begin(), forward.graph.outputs().begin() + forward.function_outputs);
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (!outputs[j].requires_grad()) continue;
    // an output must be a new tensor, once, for the node to own its history
    const graph::ValueId v = output_values[j];
    for (const graph::GraphInput& in : forward.graph.inputs()) {
      if (in.value == v) {
        *why = str_cat("output ", j, " is one of the function's inputs");
        return nullptr;
      }
    }
    if (std::count(output_values.begin(), output_values.end(), v) > 1) {
      *why = str_cat("output ", j, " is returned twice");
      return nullptr;
    }
    b->diff_outputs.push_back(j);
    diff_out.push_back(outputs[j]);
    seeds.push_back(ones_like(outputs[j]));
  }
  if (b->diff_inputs.empty() || b->diff_outputs.empty()) {
    *why = "nothing to differentiate";
    return nullptr;
  }
  std::vector<uint8_t> defined;
  auto backward = [&] {
    std::vector<Tensor> grads = autograd::grad(diff_out, diff_in, seeds, /*retain_graph=*/true,
                                               false, /*allow_unused=*/true);
    std::vector<Tensor> out;
    for (const Tensor& g : grads) {
      defined.push_back(g.defined() ? 1 : 0);
      if (g.defined()) out.push_back(g);
    }
    return out;
  };
  std::vector<Tensor> grads;
  b->captured = capture(seeds, backward, state, &grads, &forward);
  if (!b->captured.breaks.empty() || !b->captured.host_reads.empty()) {
    *why = "the backward has a graph break (" + b->captured.breaks.front().op + ")";
    return nullptr;
  }
  if (b->captured.mutates_state) {
    *why = "the backward writes to a tensor it did not make (" + b->captured.first_write + ")";
    return nullptr;
  }
  int next = 0;
  for (uint8_t d : defined) b->grad_slot.push_back(d ? next++ : -1);
  // the saved values become outputs of the forward graph, after its own and the host reads
  std::vector<graph::ValueId> saved;
  for (graph::ValueId v : b->captured.from_forward) {
    if (v == graph::kNoValue) {
      b->saved_slot.push_back(-1);
      continue;
    }
    auto it = std::find(saved.begin(), saved.end(), v);
    if (it == saved.end()) it = saved.insert(saved.end(), v);
    b->saved_slot.push_back(static_cast<int>(it - saved.begin()));
  }
  for (graph::ValueId v : saved) forward.graph.add_output(v);
  b->num_saved = saved.size();
  return b;
}

std::vector<Tensor> run_joint(graph::Interpreter& forward, const Captured& fc,
                              const std::shared_ptr<BackwardGraph>& backward,
                              const std::vector<Tensor>& inputs, std::string* host_read_mismatch) {
  std::vector<Tensor> all;
  {
    NoGradGuard no_grad;
    all = forward(inputs);
  }
  for (size_t i = 0; i < fc.host_reads.size(); ++i) {
    const double now = all[fc.function_outputs + i].item<double>();
    if (now != fc.host_reads[i]) {
      *host_read_mismatch =
          str_cat("a value read on the host (item()) is ", now, ", captured as ", fc.host_reads[i]);
      return {};
    }
  }
  const size_t first_saved = fc.function_outputs + fc.host_reads.size();
  // detached: a saved output kept by its own node's backward would be a cycle (the
  // reason autograd keeps aliases: Note [Saved tensors] in the autograd plugin)
  std::vector<Tensor> saved;
  for (size_t i = first_saved; i < all.size(); ++i) saved.push_back(all[i].detach());
  std::vector<Tensor> outputs(all.begin(), all.begin() + fc.function_outputs);
  std::vector<Tensor> diff_in, diff_out;
  struct Like {
    std::vector<int64_t> sizes;
    ScalarType dtype;
    Device device;
  };
  std::vector<Like> like;
  for (size_t i : backward->diff_inputs) diff_in.push_back(inputs[i]);
  for (size_t j : backward->diff_outputs) {
    diff_out.push_back(outputs[j]);
    like.push_back({std::vector<int64_t>(outputs[j].sizes().begin(), outputs[j].sizes().end()),
                    outputs[j].dtype(), outputs[j].device()});
  }
  std::shared_ptr<BackwardGraph> b = backward;
  autograd::apply_function(
      "CompiledFunctionBackward", diff_in, diff_out,
      [b, saved = std::move(saved), like = std::move(like)](const std::vector<Tensor>& grads) {
        NoGradGuard no_grad;
        std::vector<Tensor> in;
        for (size_t j = 0; j < grads.size(); ++j) {
          in.push_back(grads[j].defined()
                           ? grads[j]
                           : zeros(like[j].sizes,
                                   TensorOptions().dtype(like[j].dtype).device(like[j].device)));
        }
        for (size_t k = 0; k < b->saved_slot.size(); ++k) {
          in.push_back(b->saved_slot[k] >= 0 ? saved[b->saved_slot[k]] : b->captured.constants[k]);
        }
        in.insert(in.end(), b->captured.folded.begin(), b->captured.folded.end());
        std::vector<Tensor> out = (*b->interpreter)(in);
        std::vector<Tensor> result;
        for (int slot : b->grad_slot) result.push_back(slot >= 0 ? out[slot] : Tensor());
        return result;
      });
  return outputs;
}

}  // namespace loom::compiler::detail
