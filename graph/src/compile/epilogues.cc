// Fused epilogues (loom/graph_passes.h): a matrix product or convolution whose result only
// an activation reads becomes one op that applies the activation as it writes the result.
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/graph_passes.h"
#include "pass_support.h"

namespace loom::graph {
namespace {

// The fused op of (product, activation) and its extra argument, if they fuse.
struct Epilogue {
  const char* fused_op;
  Argument argument;  // activation="relu" or use_gelu=true
};

std::optional<Epilogue> epilogue_of(const Node& producer, const Node& activation) {
  if (producer.op == "loom::conv2d") {
    for (const char* name : {"relu", "sigmoid", "tanh"}) {
      if (activation.op == std::string("loom::") + name) {
        return Epilogue{"loom::_conv2d_activation",
                        Argument::of_constant("activation", loom::Value(name))};
      }
    }
    return std::nullopt;
  }
  if (producer.op == "loom::addmm") {
    if (activation.op == "loom::relu") {
      return Epilogue{"loom::_addmm_activation", Argument::of_constant("use_gelu", false)};
    }
    // exact gelu only (PyTorch's _addmm_activation computes gelu with approximate="none")
    const bool exact_gelu = activation.op == "loom::gelu" && activation.arguments.size() == 2 &&
                            activation.arguments[1].kind == Argument::Kind::Constant &&
                            activation.arguments[1].constant.is_string() &&
                            activation.arguments[1].constant.to_string() == "none";
    if (exact_gelu) {
      return Epilogue{"loom::_addmm_activation", Argument::of_constant("use_gelu", true)};
    }
  }
  return std::nullopt;
}

bool floating(const Graph& graph, ValueId v) {
  const std::optional<TensorMeta>& meta = graph.value(v).meta;
  return meta && is_floating_point(meta->dtype);
}

}  // namespace

// Note [Fused epilogues]
// ~~~~~~~~~~~~~~~~~~~~~~
// conv2d followed by relu, sigmoid or tanh becomes _conv2d_activation, and addmm followed
// by relu (or exact gelu) _addmm_activation (PyTorch's op), when the product's result is
// read by the activation alone and not returned: in a training graph that holds, since
// these activations' gradients need their result, not their input. The CPU computes
// _conv2d_activation as one oneDNN convolution with an eltwise post-op (Note [conv2d
// with an activation] in the CPU plugin), which saves the activation's pass over the
// output; elsewhere both fused ops are their product and the activation in place (one
// allocation fewer). The fused node takes the product's place and the activation's
// output value.
int fuse_epilogues(Graph& graph) {
  const std::vector<Node>& nodes = graph.nodes();
  std::unordered_map<ValueId, int> reads;
  for (const Node& node : nodes) detail::for_each_read(node, [&](ValueId v) { ++reads[v]; });
  for (ValueId v : graph.outputs()) ++reads[v];
  // the node that reads each value read once
  std::unordered_map<ValueId, size_t> reader;
  for (size_t i = 0; i < nodes.size(); ++i) {
    detail::for_each_read(nodes[i], [&](ValueId v) { reader[v] = i; });
  }
  std::vector<Node> result;
  result.reserve(nodes.size());
  std::unordered_set<size_t> absorbed;  // activations folded into an earlier node
  int fused = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (absorbed.count(i) > 0) continue;
    const Node& node = nodes[i];
    if (node.outputs.size() == 1) {
      const ValueId product = node.outputs[0];
      auto r = reader.find(product);
      if (reads[product] == 1 && r != reader.end() && floating(graph, product)) {
        const Node& activation = nodes[r->second];
        const bool reads_product_first = !activation.arguments.empty() &&
                                         activation.arguments[0].kind == Argument::Kind::Value &&
                                         activation.arguments[0].value == product;
        std::optional<Epilogue> e =
            reads_product_first ? epilogue_of(node, activation) : std::nullopt;
        if (e && activation.outputs.size() == 1) {
          Node merged = node;
          merged.op = e->fused_op;
          merged.arguments.push_back(e->argument);
          merged.outputs = activation.outputs;
          result.push_back(std::move(merged));
          absorbed.insert(r->second);
          ++fused;
          continue;
        }
      }
    }
    result.push_back(node);
  }
  if (fused > 0) graph.replace_nodes(std::move(result));
  return fused;
}

}  // namespace loom::graph
