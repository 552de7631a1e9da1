// Dead-code elimination, common-subexpression elimination and constant folding
// (loom/graph_passes.h); pointwise fusion is in fusion.cc.
#include <algorithm>
#include <functional>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compile_internal.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/function_schema.h"
#include "loom/graph_interpreter.h"
#include "loom/graph_passes.h"
#include "loom/ops/op_library.h"
#include "loom/ops/structured_schemas.h"
#include "pass_support.h"

namespace loom::graph {
namespace detail {

const OpFacts& facts_of(const std::string& op) {
  static std::mutex mutex;
  static std::unordered_map<std::string, OpFacts> cache;
  static const std::unordered_set<std::string> impure_ops =
      compiler::detail::standard_ops_where([](const OpDefinition& def) {
        return def.family == "random" || ops::has_tag(def.tags, "data_dependent_output");
      });
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(op);
  if (it != cache.end()) return it->second;
  OpFacts f;
  if (!is_symbolic_builtin(op)) {
    dispatch::OperatorHandle h = dispatch::Dispatcher::instance().find_defined(op);
    f.impure = impure_ops.count(op) > 0;
    f.side_effects = h.schema().is_mutable() || f.impure;
    for (const dispatch::Argument& r : h.schema().returns) {
      f.returns_alias = f.returns_alias || r.alias.has_value();
    }
  }
  return cache.emplace(op, f).first->second;
}

void for_each_read(const Node& node, const std::function<void(ValueId)>& read) {
  for (const Argument& a : node.arguments) {
    if (a.kind == Argument::Kind::Value) read(a.value);
    for (const ListItem& item : a.items) {
      if (item.value != kNoValue) read(item.value);
    }
  }
}

std::string unique_value_name(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int n = 1; g.find_value(name); ++n) name = str_cat(base, "_", n);
  return name;
}

bool all_but_channels(const std::vector<int64_t>& dims, int64_t rank) {
  if (rank < 3) return false;
  std::set<int64_t> found;
  for (int64_t d : dims) found.insert(d < 0 ? d + rank : d);
  std::set<int64_t> expected{0};
  for (int64_t d = 2; d < rank; ++d) expected.insert(d);
  return found == expected && dims.size() == expected.size();
}

}  // namespace detail

namespace {

using detail::facts_of;
using detail::for_each_read;

// A node's call as a key: op and every argument (constants as text).
std::string call_key(const Node& node) {
  std::string key = node.op;
  for (const Argument& a : node.arguments) {
    key += "|";
    switch (a.kind) {
      case Argument::Kind::Value:
        key += str_cat("%", a.value);
        break;
      case Argument::Kind::List:
        key += "[";
        for (const ListItem& item : a.items) key += str_cat(item.value, ":", item.constant, ",");
        key += "]";
        break;
      case Argument::Kind::Constant:
        key += str_cat(a.constant.type_name(), "=");
        if (a.constant.is_int())
          key += str_cat(a.constant.to_int());
        else if (a.constant.is_double())
          key += str_cat(a.constant.to_double());
        else if (a.constant.is_bool())
          key += a.constant.to_bool() ? "1" : "0";
        else if (a.constant.is_string())
          key += a.constant.to_string();
        else if (a.constant.kind() == Value::Kind::IntList) {
          for (int64_t i : a.constant.to_int_list()) key += str_cat(i, ",");
        } else if (a.constant.kind() == Value::Kind::Dtype) {
          key += scalar_type_name(a.constant.to_dtype());
        } else if (a.constant.kind() == Value::Kind::Device) {
          key += a.constant.to_device().to_string();
        } else if (!a.constant.is_none()) {
          return "";  // a constant without a key: never merged
        }
        break;
    }
  }
  return key;
}

}  // namespace

bool has_side_effects(const Node& node) {
  return facts_of(node.op).side_effects;
}

int eliminate_dead_code(Graph& graph) {
  std::vector<uint8_t> live(graph.values().size(), 0);
  for (ValueId v : graph.outputs()) live[v] = 1;
  const std::vector<Node>& nodes = graph.nodes();
  std::vector<uint8_t> keep(nodes.size(), 0);
  for (size_t n = nodes.size(); n-- > 0;) {
    const Node& node = nodes[n];
    bool needed = has_side_effects(node);
    for (ValueId out : node.outputs) needed = needed || (out != kNoValue && live[out]);
    if (!needed) continue;
    keep[n] = 1;
    for_each_read(node, [&](ValueId v) { live[v] = 1; });
  }
  std::vector<Node> kept;
  int removed = 0;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (keep[n]) {
      kept.push_back(nodes[n]);
    } else {
      ++removed;
    }
  }
  if (removed > 0) graph.replace_nodes(std::move(kept));
  return removed;
}

std::vector<Tensor> fold_constants(Graph& graph, Device device) {
  const std::vector<Node>& nodes = graph.nodes();
  const size_t num_values = graph.values().size();
  std::vector<uint8_t> folded_node(nodes.size(), 0), constant(num_values, 0);
  auto all_args_constant = [&](const Node& node) {
    bool yes = true;
    for_each_read(node, [&](ValueId v) { yes = yes && constant[v]; });
    return yes;
  };
  // values that must not be folded: returned, or read by a writing or view op
  std::vector<uint8_t> pinned(num_values, 0);
  // a folded write's tensor before the write (an empty_strided that fill_ writes: what
  // ones() and zeros() record): the folded tensor holds the written contents
  std::vector<uint8_t> overwritten(num_values, 0);
  for (ValueId v : graph.outputs()) pinned[v] = 1;
  for (bool changed = true; changed;) {
    changed = false;
    std::fill(constant.begin(), constant.end(), 0);
    std::fill(overwritten.begin(), overwritten.end(), 0);
    for (size_t n = 0; n < nodes.size(); ++n) {
      const Node& node = nodes[n];
      // a write folds with its tensor: every argument (the written one too) is constant
      const bool pure = !is_symbolic_builtin(node.op) && !facts_of(node.op).impure;
      bool fold = pure && all_args_constant(node);
      for (ValueId out : node.outputs) {
        fold = fold &&
               (out == kNoValue || (!pinned[out] && graph.value(out).type == ValueType::Tensor));
      }
      folded_node[n] = fold ? 1 : 0;
      for (ValueId out : node.outputs) {
        if (out != kNoValue) constant[out] = fold ? 1 : 0;
      }
      if (fold && has_side_effects(node))
        for_each_read(node, [&](ValueId v) { overwritten[v] = 1; });
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (folded_node[n]) continue;
      const Node& node = nodes[n];
      const bool leaks =
          is_symbolic_builtin(node.op) || has_side_effects(node) || facts_of(node.op).returns_alias;
      for_each_read(node, [&](ValueId v) {
        if (constant[v] && !pinned[v] && (leaks || overwritten[v])) {
          pinned[v] = 1;
          changed = true;
        }
      });
    }
  }
  // the folded values the rest of the graph reads become inputs
  std::vector<ValueId> boundary;
  std::vector<uint8_t> is_boundary(num_values, 0);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (folded_node[n]) continue;
    for_each_read(nodes[n], [&](ValueId v) {
      if (constant[v] && !is_boundary[v]) {
        is_boundary[v] = 1;
        boundary.push_back(v);
      }
    });
  }
  if (boundary.empty()) return {};
  Graph sub;
  std::unordered_map<ValueId, ValueId> in_sub;
  auto sub_value = [&](ValueId v) {
    auto it = in_sub.find(v);
    if (it != in_sub.end()) return it->second;
    const ValueInfo& info = graph.value(v);
    return in_sub.emplace(v, sub.add_value(info.name, info.type, info.meta)).first->second;
  };
  std::vector<Node> kept;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!folded_node[n]) {
      kept.push_back(nodes[n]);
      continue;
    }
    Node node = nodes[n];
    for (Argument& a : node.arguments) {
      if (a.kind == Argument::Kind::Value) a.value = sub_value(a.value);
      for (ListItem& item : a.items) {
        if (item.value != kNoValue) item.value = sub_value(item.value);
      }
    }
    for (ValueId& out : node.outputs) {
      if (out != kNoValue) out = sub_value(out);
    }
    sub.add_node(std::move(node));
  }
  for (ValueId v : boundary) sub.add_output(in_sub.at(v));
  std::vector<Tensor> values = Interpreter(sub, device)({});
  graph.replace_nodes(std::move(kept));
  for (size_t i = 0; i < boundary.size(); ++i) {
    graph.add_input(boundary[i], InputRole::Constant, str_cat("_folded_", i));
  }
  return values;
}

int eliminate_common_subexpressions(Graph& graph) {
  std::unordered_map<ValueId, ValueId> replaced;
  auto renamed = [&](ValueId v) {
    auto it = replaced.find(v);
    return it == replaced.end() ? v : it->second;
  };
  std::unordered_map<std::string, size_t> seen;  // call key -> index in `kept`
  std::vector<Node> kept;
  int merged = 0;
  for (Node node : graph.nodes()) {
    for (Argument& a : node.arguments) {
      if (a.kind == Argument::Kind::Value) a.value = renamed(a.value);
      for (ListItem& item : a.items) {
        if (item.value != kNoValue) item.value = renamed(item.value);
      }
    }
    if (has_side_effects(node)) {
      seen.clear();  // a write: nothing before it is known to be equal to what follows
      kept.push_back(std::move(node));
      continue;
    }
    std::string key = call_key(node);
    if (!key.empty()) {
      auto [it, inserted] = seen.emplace(key, kept.size());
      if (!inserted) {
        const Node& earlier = kept[it->second];
        for (size_t i = 0; i < node.outputs.size() && i < earlier.outputs.size(); ++i) {
          if (node.outputs[i] != kNoValue) replaced[node.outputs[i]] = earlier.outputs[i];
        }
        ++merged;
        continue;
      }
    }
    kept.push_back(std::move(node));
  }
  if (merged > 0) {
    graph.replace_nodes(std::move(kept));
    std::vector<ValueId> outputs;
    for (ValueId v : graph.outputs()) outputs.push_back(renamed(v));
    graph.replace_outputs(std::move(outputs));
  }
  return merged;
}

}  // namespace loom::graph
