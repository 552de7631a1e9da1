// Automatic dynamic shapes for captured graphs.
//
// Note [Automatic dynamic shapes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// C++ has no bytecode to trace symbolically: a capture sees `x.view({64, -1})`, not
// `x.view({x.size(0), -1})`. So when a call fails its guards only because sizes of its
// tensors changed, those dimensions become symbols (s0, s1, ...; equal sizes share a
// symbol, as PyTorch's duck sizing does) and the function is captured again at the new
// sizes; the two captures are compared node by node. They must call the same ops with
// the same arguments except ints; an int that differs must be a*s + b of one symbol s
// with integers a and b that give both captures' values (64 -> 32 with s 64 -> 32 is s;
// 128 -> 64 is 2*s), and becomes a value computed from the input's size when the graph
// runs (sym_size.int, sym::mul, sym::add). Anything else (a float that depends on a
// size, a product of two sizes, different ops) keeps the graph specialised to the new
// sizes, and the reason is logged. Symbols range over sizes >= 2: 0 and 1 change
// broadcasting, so they stay specialised (PyTorch's rule too).
#include "dynamic_shapes.h"

#include <map>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom::compiler::detail {
namespace {

using graph::Argument;
using graph::ListItem;
using graph::Node;
using graph::ValueId;

struct Symbol {
  std::string name;
  int64_t before = 0, now = 0;
  int tensor = 0, dim = 0;          // where its size is read
  ValueId value = graph::kNoValue;  // sym_size.int's result, made on first use
};

class Generaliser {
 public:
  Generaliser(Captured& now, std::vector<Symbol> symbols)
      : now_(now), symbols_(std::move(symbols)) {}

  // The value computing a*s + b, nodes added to `prelude_`.
  ValueId expression(Symbol& s, int64_t a, int64_t b) {
    graph::Graph& g = now_.graph;
    if (s.value == graph::kNoValue) {
      s.value = g.add_value(unique(s.name), graph::ValueType::SymInt);
      prelude_.push_back(Node{"loom::sym_size.int",
                              "",
                              {Argument::of_value("self", g.inputs()[s.tensor].value),
                               Argument::of_constant("dim", int64_t{s.dim})},
                              {s.value},
                              false});
    }
    const std::string key = str_cat(s.name, "*", a, "+", b);
    if (auto it = made_.find(key); it != made_.end()) return it->second;
    ValueId v = s.value;
    if (a != 1) {
      ValueId m = g.add_value(unique(str_cat(s.name, "_mul")), graph::ValueType::SymInt);
      prelude_.push_back(Node{
          "sym::mul", "", {Argument::of_value("a", v), Argument::of_constant("b", a)}, {m}, false});
      v = m;
    }
    if (b != 0) {
      ValueId r = g.add_value(unique(str_cat(s.name, "_add")), graph::ValueType::SymInt);
      prelude_.push_back(Node{
          "sym::add", "", {Argument::of_value("a", v), Argument::of_constant("b", b)}, {r}, false});
      v = r;
    }
    made_.emplace(key, v);
    return v;
  }

  // The value standing for an int that was `before` and is `now`, or kNoValue.
  ValueId fit(int64_t before, int64_t now) {
    for (Symbol& s : symbols_) {
      const int64_t ds = s.now - s.before, dc = now - before;
      if (ds == 0 || dc % ds != 0) continue;
      const int64_t a = dc / ds, b = now - a * s.now;
      if (a * s.before + b != before) continue;
      return expression(s, a, b);
    }
    return graph::kNoValue;
  }

  std::string run(const graph::Graph& old_graph) {
    graph::Graph& g = now_.graph;
    if (old_graph.nodes().size() != g.nodes().size()) {
      return str_cat("the two captures made ", old_graph.nodes().size(), " and ", g.nodes().size(),
                     " op calls");
    }
    std::vector<Node> nodes = g.nodes();
    for (size_t n = 0; n < nodes.size(); ++n) {
      Node& node = nodes[n];
      const Node& old = old_graph.nodes()[n];
      const std::string where = str_cat("op call ", n, " (", node.op, ")");
      if (node.op != old.op || node.arguments.size() != old.arguments.size()) {
        return str_cat(where, " differs from the first capture's (", old.op, ")");
      }
      for (size_t i = 0; i < node.arguments.size(); ++i) {
        Argument& a = node.arguments[i];
        const Argument& o = old.arguments[i];
        if (a.kind != o.kind) return str_cat(where, ": argument '", a.name, "' differs in kind");
        if (a.kind == Argument::Kind::Value) {
          if (a.value != o.value)
            return str_cat(where, ": argument '", a.name, "' reads another value");
          continue;
        }
        if (a.kind == Argument::Kind::List) {
          if (a.items != o.items) return str_cat(where, ": argument '", a.name, "' differs");
          continue;
        }
        const Value& c = a.constant;
        const Value& oc = o.constant;
        if (c.kind() != oc.kind())
          return str_cat(where, ": argument '", a.name, "' differs in kind");
        if (c.is_int() && c.to_int() != oc.to_int()) {
          ValueId v = fit(oc.to_int(), c.to_int());
          if (v == graph::kNoValue) {
            return str_cat(where, ": argument '", a.name, "' is ", c.to_int(), " where it was ",
                           oc.to_int(), ", not a*s+b of a changed size");
          }
          a = Argument::of_value(a.name, v);
        } else if (c.kind() == Value::Kind::IntList && c.to_int_list() != oc.to_int_list()) {
          const auto& now_list = c.to_int_list();
          const auto& old_list = oc.to_int_list();
          if (now_list.size() != old_list.size())
            return str_cat(where, ": argument '", a.name, "' changed length");
          std::vector<ListItem> items;
          for (size_t k = 0; k < now_list.size(); ++k) {
            if (now_list[k] == old_list[k]) {
              items.push_back(ListItem{graph::kNoValue, now_list[k]});
              continue;
            }
            ValueId v = fit(old_list[k], now_list[k]);
            if (v == graph::kNoValue) {
              return str_cat(where, ": argument '", a.name, "' element ", k, " is ", now_list[k],
                             " where it was ", old_list[k], ", not a*s+b of a changed size");
            }
            items.push_back(ListItem{v, 0});
          }
          a = Argument::of_list(a.name, std::move(items));
        } else if (!same_constant(c, oc)) {
          return str_cat(where, ": argument '", a.name,
                         "' depends on the sizes in a way loom cannot express");
        }
      }
    }
    // symbolic metadata: a size that follows a symbol exactly is that symbol
    for (size_t v = 0; v < g.values().size() && v < old_graph.values().size(); ++v) {
      graph::ValueInfo& info = g.value(static_cast<ValueId>(v));
      const graph::ValueInfo& old = old_graph.value(static_cast<ValueId>(v));
      if (!info.meta || !old.meta || info.meta->sizes.size() != old.meta->sizes.size()) continue;
      for (size_t d = 0; d < info.meta->sizes.size(); ++d) {
        graph::SymSize& s = info.meta->sizes[d];
        const int64_t was = old.meta->sizes[d].value;
        if (s.value == was) continue;
        for (const Symbol& sym : symbols_) {
          if (sym.before == was && sym.now == s.value) s.symbol = sym.name;
        }
        if (!s.is_symbolic()) s.symbol = str_cat("?", v, "_", d);  // derived: unknown expression
      }
    }
    nodes.insert(nodes.begin(), prelude_.begin(), prelude_.end());
    g.replace_nodes(std::move(nodes));
    for (const Symbol& s : symbols_) g.add_symbol(graph::SymbolRange{s.name, 2, INT64_MAX});
    return "";
  }

 private:
  static bool same_constant(const Value& a, const Value& b) {
    if (a.is_double())
      return a.to_double() == b.to_double() ||
             (a.to_double() != a.to_double() && b.to_double() != b.to_double());
    if (a.is_bool()) return a.to_bool() == b.to_bool();
    if (a.is_string()) return a.to_string() == b.to_string();
    if (a.is_int()) return a.to_int() == b.to_int();
    if (a.kind() == Value::Kind::IntList) return a.to_int_list() == b.to_int_list();
    if (a.kind() == Value::Kind::DoubleList) return a.to_double_list() == b.to_double_list();
    if (a.kind() == Value::Kind::BoolList) return a.to_bool_list() == b.to_bool_list();
    if (a.kind() == Value::Kind::Dtype) return a.to_dtype() == b.to_dtype();
    if (a.kind() == Value::Kind::Device) return a.to_device() == b.to_device();
    return a.is_none() && b.is_none();
  }

  std::string unique(const std::string& base) {
    std::string name = base;
    for (int i = 1; now_.graph.find_value(name); ++i) name = str_cat(base, "_", i);
    return name;
  }

  Captured& now_;
  std::vector<Symbol> symbols_;
  std::vector<Node> prelude_;
  std::map<std::string, ValueId> made_;
};

}  // namespace

std::string generalise(const graph::Graph& before, Captured& now, const DynamicDims& dims,
                       const std::vector<std::vector<int64_t>>& before_sizes,
                       const std::vector<std::vector<int64_t>>& now_sizes) {
  std::vector<Symbol> symbols;
  std::map<std::pair<int64_t, int64_t>, std::string> shared;  // duck sizing
  graph::Graph& g = now.graph;
  for (auto [tensor, dim] : dims) {
    const int64_t was = before_sizes.at(tensor).at(dim), is = now_sizes.at(tensor).at(dim);
    if (is < 2)
      return str_cat("tensor ", tensor, " has size ", is, " at dimension ", dim,
                     " (0 and 1 stay specialised)");
    auto [it, inserted] = shared.emplace(std::pair(was, is), str_cat("s", shared.size()));
    graph::ValueInfo& info = g.value(g.inputs()[tensor].value);
    info.meta->sizes[dim].symbol = it->second;
    if (inserted) symbols.push_back(Symbol{it->second, was, is, tensor, dim});
  }
  if (before.values().size() != now.graph.values().size()) {
    return "the two captures made different values";
  }
  Generaliser gen(now, std::move(symbols));
  std::string why = gen.run(before);
  if (!why.empty()) return why;
  try {
    now.graph.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace loom::compiler::detail
