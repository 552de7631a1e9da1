// A training graph pass across the forward and backward graphs: relu's gradient mask
// applied before max pooling's gradient scatters it (Note [Masks before max-pool
// gradients]).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "compile_internal.h"
#include "loom/core/str_cat.h"
#include "pass_support.h"

namespace loom::compiler::detail {
namespace {

using graph::Argument;
using graph::Node;
using graph::ValueId;

// The value argument `name` of `node`, or kNoValue.
ValueId value_argument(const Node& node, const char* name) {
  for (const Argument& a : node.arguments) {
    if (a.name == name && a.kind == Argument::Kind::Value) return a.value;
  }
  return graph::kNoValue;
}

// Whether `node` is as_strided(self=r) with r's own contiguous sizes and strides and no
// offset: the same elements as r, when r is contiguous.
bool same_elements_as(const graph::Graph& g, const Node& node, ValueId r) {
  if (node.op != "loom::as_strided" || value_argument(node, "self") != r) return false;
  const std::optional<graph::TensorMeta>& meta = g.value(r).meta;
  if (!meta) return false;
  std::vector<int64_t> sizes, strides(meta->sizes.size());
  for (const graph::SymSize& s : meta->sizes) {
    if (s.is_symbolic()) return false;
    sizes.push_back(s.value);
  }
  int64_t step = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = step;
    step *= std::max<int64_t>(sizes[d], 1);
  }
  for (const Argument& a : node.arguments) {
    if (a.kind != Argument::Kind::Constant) continue;
    if (a.name == "size" && a.constant.to_int_list() != sizes) return false;
    if (a.name == "stride" && a.constant.to_int_list() != strides) return false;
    if (a.name == "storage_offset" && !a.constant.is_none() && a.constant.to_int() != 0)
      return false;
  }
  return true;
}

// Whether an op of `g` writes the memory of one of `values`: through the value, a view of
// it, or another value whose tensor shared its memory when captured (`captured`, per
// value, may be empty). The forward's pooled values must reach the backward unchanged,
// and nothing in the backward may change what the moved nodes read.
bool written(const graph::Graph& g, std::unordered_set<ValueId> values,
             const std::vector<Tensor>& captured) {
  auto tensor_of = [&](ValueId v) -> const Tensor* {
    if (v < 0 || v >= static_cast<ValueId>(captured.size()) || !captured[v].defined())
      return nullptr;
    return &captured[v];
  };
  std::vector<const Tensor*> memory;
  for (ValueId v : values) {
    if (const Tensor* t = tensor_of(v)) memory.push_back(t);
  }
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v) {
    const Tensor* t = tensor_of(v);
    if (t == nullptr) continue;
    for (const Tensor* m : memory) {
      if (t->is_alias_of(*m)) values.insert(v);
    }
  }
  for (const Node& node : g.nodes()) {
    bool reads = false;
    graph::detail::for_each_read(node,
                                 [&](ValueId read) { reads = reads || values.count(read) > 0; });
    if (!reads) continue;
    const graph::detail::OpFacts& facts = graph::detail::facts_of(node.op);
    if (facts.side_effects) return true;
    if (facts.returns_alias) values.insert(node.outputs.begin(), node.outputs.end());
  }
  return false;
}

}  // namespace

// Note [Masks before max-pool gradients]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// relu then max pooling (a CNN's block) has the backward
//   m = max_pool2d_with_indices_backward(g, r, ..., idx);  t = threshold_backward(m, r, th)
// where r is the pooled input and idx the forward's indices. m is g scattered to the
// positions idx names (zero elsewhere) and at such a position r equals the pooled value
// p the forward returned for it, so masking before the scatter gives the same t:
//   t = max_pool2d_with_indices_backward(threshold_backward(g, p, th), r, ..., idx)
// (overlapping windows add their masked gradients at a shared position, all masked by the
// same value). The mask then reads and writes the pooled size, a quarter of the input's
// with 2x2 windows, and a sum of t over every dim but the channels (the convolution's bias
// gradient) is the same sum of the masked gradient, which a scatter does not change: it
// reads the small tensor, and fuses with the mask (Note [Plane reductions]). p becomes a
// saved value of the forward graph when it was not one, unless an op of the forward writes
// it (its tensor would no longer hold p); and nothing is moved when an op of the backward
// writes what the moved nodes read. Runs before the passes, while the forward's capture
// knows which of its values the backward's inputs are.
int mask_before_pool_gradients(Captured& forward, BackwardGraph& backward) {
  graph::Graph& g = backward.captured.graph;
  const std::vector<Node>& nodes = g.nodes();
  std::unordered_map<ValueId, size_t> producer;
  std::unordered_map<ValueId, int> reads;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId v : nodes[n].outputs) producer[v] = n;
    for (const Argument& a : nodes[n].arguments) {
      if (a.kind == Argument::Kind::Value) ++reads[a.value];
      for (const graph::ListItem& item : a.items) ++reads[item.value];
    }
  }
  for (ValueId v : g.outputs()) ++reads[v];
  // backward constant inputs -> forward values, and back
  const size_t first_constant = g.inputs().size() - backward.captured.constants.size();
  std::unordered_map<ValueId, ValueId> forward_of, backward_of;
  for (size_t k = 0; k < backward.captured.from_forward.size(); ++k) {
    const ValueId f = backward.captured.from_forward[k];
    if (f == graph::kNoValue) continue;
    forward_of[g.inputs()[first_constant + k].value] = f;
    backward_of[f] = g.inputs()[first_constant + k].value;
  }
  // the forward's max poolings by their indices output
  std::unordered_map<ValueId, const Node*> pool_of_indices;
  for (const Node& node : forward.graph.nodes()) {
    if (node.op == "loom::max_pool2d_with_indices" && node.outputs.size() == 2) {
      pool_of_indices[node.outputs[1]] = &node;
    }
  }
  std::vector<Node> out;
  std::unordered_map<size_t, size_t> rewritten;  // threshold node -> pool gradient node
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& mask = nodes[n];
    if (mask.op != "loom::threshold_backward" || mask.outputs.size() != 1) continue;
    const ValueId m = value_argument(mask, "grad_output");
    auto p = producer.find(m);
    if (p == producer.end() || reads[m] != 1) continue;
    const Node& scatter = nodes[p->second];
    if (scatter.op != "loom::max_pool2d_with_indices_backward") continue;
    const ValueId r = value_argument(scatter, "self"), idx = value_argument(scatter, "indices");
    const ValueId masked_by = value_argument(mask, "self");
    auto masked_producer = producer.find(masked_by);
    const bool same_r =
        masked_by == r || (masked_producer != producer.end() &&
                           same_elements_as(g, nodes[masked_producer->second], r) &&
                           r < static_cast<ValueId>(backward.captured.contiguous.size()) &&
                           backward.captured.contiguous[r]);
    if (!same_r || !forward_of.count(r) || !forward_of.count(idx) ||
        !g.value(value_argument(scatter, "grad_output")).meta || !g.value(mask.outputs[0]).meta)
      continue;
    auto pool = pool_of_indices.find(forward_of[idx]);
    if (pool == pool_of_indices.end() || value_argument(*pool->second, "self") != forward_of[r])
      continue;
    const ValueId fp = pool->second->outputs[0];
    if (written(forward.graph, {fp}, forward.value_tensors)) continue;
    // nodes move and reads change: nothing in the backward may write what they read
    std::unordered_set<ValueId> involved{
        value_argument(scatter, "grad_output"), r, idx, masked_by, m, mask.outputs[0]};
    if (backward_of.count(fp)) involved.insert(backward_of[fp]);
    if (written(g, involved, backward.captured.value_tensors)) continue;
    rewritten[n] = p->second;
  }
  if (rewritten.empty()) return 0;
  std::unordered_map<size_t, size_t> scatter_to_mask;
  for (auto [mask, scatter] : rewritten) scatter_to_mask[scatter] = mask;
  // the pooled values in the backward graph: saved by the forward, or saved now
  auto pooled_value = [&](const Node& scatter) {
    const Node& pool = *pool_of_indices[forward_of[value_argument(scatter, "indices")]];
    const ValueId fp = pool.outputs[0];
    auto known = backward_of.find(fp);
    if (known != backward_of.end()) return known->second;
    const std::vector<ValueId>& fout = forward.graph.outputs();
    const size_t first_saved = forward.function_outputs + forward.host_reads.size();
    auto at = std::find(fout.begin() + static_cast<std::ptrdiff_t>(first_saved), fout.end(), fp);
    const int slot = static_cast<int>(at - fout.begin()) - static_cast<int>(first_saved);
    if (at == fout.end()) {
      forward.graph.add_output(fp);
      ++backward.num_saved;
    }
    graph::ValueInfo info = forward.graph.value(fp);
    const std::string name = graph::detail::unique_value_name(g, str_cat("saved_", info.name));
    const ValueId v = g.add_value(name, graph::ValueType::Tensor, info.meta);
    g.add_input(v, graph::InputRole::Constant, name);
    backward.saved_slot.push_back(slot);
    backward.captured.constants.push_back(fp < static_cast<ValueId>(forward.value_tensors.size())
                                              ? forward.value_tensors[fp]
                                              : Tensor());
    backward.captured.from_forward.push_back(fp);
    backward.captured.contiguous.resize(g.values().size(), 0);
    backward.captured.contiguous[v] =
        fp < static_cast<ValueId>(forward.contiguous.size()) && forward.contiguous[fp];
    backward_of[fp] = v;
    return v;
  };
  // sums of a rewritten mask's result over every dim but the channels read the small one
  std::unordered_map<ValueId, ValueId> small_of;  // t -> the masked pooled gradient
  const std::vector<Node> originals = nodes;
  for (size_t n = 0; n < originals.size(); ++n) {
    if (rewritten.count(n)) continue;  // the mask moved before its scatter
    auto s = scatter_to_mask.find(n);
    if (s == scatter_to_mask.end()) {
      Node node = originals[n];
      if (node.op == "loom::sum.dim_IntList" && !node.arguments.empty() &&
          node.arguments[0].kind == Argument::Kind::Value &&
          small_of.count(node.arguments[0].value) &&
          node.arguments[1].kind == Argument::Kind::Constant &&
          node.arguments[1].constant.kind() == Value::Kind::IntList) {
        const ValueId t = node.arguments[0].value;  // a mask's output: its meta is known
        const int64_t rank = static_cast<int64_t>(g.value(t).meta->sizes.size());
        // batched [N, C, H, W] only: the scatter moves values within H and W, which the
        // sum must cover (an unbatched [C, H, W]'s [0, 2] would not)
        if (rank == 4 &&
            graph::detail::all_but_channels(node.arguments[1].constant.to_int_list(), rank))
          node.arguments[0].value = small_of[t];
      }
      out.push_back(std::move(node));
      continue;
    }
    const Node& scatter = originals[n];
    const Node& mask = originals[s->second];
    const ValueId grad = value_argument(scatter, "grad_output");
    const ValueId pooled = pooled_value(scatter);
    graph::ValueInfo grad_info = g.value(grad);
    grad_info.meta->dtype = g.value(mask.outputs[0]).meta->dtype;
    const ValueId small =
        g.add_value(graph::detail::unique_value_name(g, g.value(mask.outputs[0]).name + "_pooled"),
                    graph::ValueType::Tensor, grad_info.meta);
    backward.captured.contiguous.resize(g.values().size(), 0);
    backward.captured.contiguous[small] = 1;
    Node masked = mask;
    for (Argument& a : masked.arguments) {
      if (a.name == "grad_output") a.value = grad;
      if (a.name == "self") a.value = pooled;
    }
    masked.outputs = {small};
    masked.source = "mask before max-pool gradient";
    Node scattered = scatter;
    for (Argument& a : scattered.arguments) {
      if (a.name == "grad_output") a.value = small;
    }
    scattered.outputs = mask.outputs;
    out.push_back(std::move(masked));
    out.push_back(std::move(scattered));
    small_of[mask.outputs[0]] = small;
  }
  g.replace_nodes(std::move(out));
  return static_cast<int>(rewritten.size());
}

}  // namespace loom::compiler::detail
