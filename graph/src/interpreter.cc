// The graph interpreter (Note [Prepared calls] in loom/graph_interpreter.h): binding
// each node once, then running nodes through the dispatcher, releasing values after
// their last use.
#include "loom/graph_interpreter.h"

#include <cmath>
#include <cstdlib>
#include <deque>
#include <optional>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/factories.h"

namespace loom::graph {
namespace {

constexpr std::string_view kComponent = "graph";
constexpr size_t kMaxReturns = 16;
using dispatch::SchemaType;
using K = SchemaType::Kind;

LoomTensor* handle_of(const Tensor& t) {
  return reinterpret_cast<LoomTensor*>(t.impl());
}

// A value while the graph runs.
struct RunValue {
  Tensor tensor;
  int64_t i = 0;
  double d = 0;
  bool b = false;
};

// A node is named by its first output.
std::string node_name(const Graph& g, const Node& node) {
  for (ValueId out : node.outputs) {
    if (out != kNoValue) return g.value(out).name;
  }
  return "?";
}

}  // namespace

struct Interpreter::Step {
  const Node* node = nullptr;
  std::string name;
  std::string label;  // "node 'addmm' (loom::addmm)"
  dispatch::OperatorHandle op;
  bool builtin = false;
  std::vector<LoomValue> args;
  // A value of the graph read into args[arg] (a tensor handle or a number).
  struct Read {
    uint32_t arg;
    ValueId value;
  };
  std::vector<Read> reads;
  // A value of the graph read into element `index` of a list argument.
  struct ListRead {
    bool tensor;
    uint32_t list;  // index into tensor_lists or int_lists
    uint32_t index;
    ValueId value;
  };
  std::vector<ListRead> list_reads;
  std::deque<std::vector<LoomTensor*>> tensor_lists;
  std::deque<std::vector<int64_t>> int_lists;
  std::deque<std::vector<double>> double_lists;
  std::deque<std::vector<uint8_t>> bool_lists;
  std::deque<std::string> strings;
  std::deque<Tensor> wrapped;  // numbers given for Tensor arguments
  size_t num_returns = 0;
  // Note [Freeing after the last use]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // The values whose last reader is this node (or that nobody reads) are released right
  // after it runs; graph outputs never are. A tensor also referenced by a view that lives
  // on keeps its memory until that view goes, as in eager mode.
  std::vector<ValueId> frees;
};

namespace {

// Boxes a constant argument as schema type `type`, keeping arrays in the step.
LoomValue box_constant(Interpreter::Step& step, const SchemaType& type, const Value& v,
                       Device device) {
  const SchemaType& base = type.kind == K::Optional ? *type.elem : type;
  switch (v.kind()) {
    case Value::Kind::None:
      return dispatch::none();
    case Value::Kind::Int:
    case Value::Kind::Double:
    case Value::Kind::Bool:
      if (base.kind == K::Tensor) {
        // A number for a Tensor argument (torch.export writes mul.Tensor(x, 0.5)): a
        // wrapped 0-dim tensor, which promotes like a Python number.
        return dispatch::box(step.wrapped.emplace_back(wrapped_scalar(v.to_scalar())));
      }
      if (v.kind() == Value::Kind::Double) return dispatch::box(v.to_double());
      if (v.kind() == Value::Kind::Bool) return dispatch::box(v.to_bool());
      if (base.kind == K::List) {  // one int for an int[N]
        std::vector<int64_t>& ints =
            step.int_lists.emplace_back(base.fixed_size.value_or(1), v.to_int());
        return dispatch::box(IntArrayRef(ints));
      }
      if (base.kind == K::Float) return dispatch::box(static_cast<double>(v.to_int()));
      return dispatch::box(v.to_int());
    case Value::Kind::String: {
      const std::string& kept = step.strings.emplace_back(v.to_string());
      LoomValue out{LOOM_VALUE_STRING, static_cast<uint32_t>(kept.size()), {}};
      out.u.str = kept.c_str();
      return out;
    }
    case Value::Kind::Dtype:
      return dispatch::box(v.to_dtype());
    case Value::Kind::Device:
      return dispatch::box(device);  // a graph runs where it is told to
    case Value::Kind::IntList: {
      if (base.kind == K::List && base.elem->kind == K::Float) {
        const std::vector<int64_t>& ints = v.to_int_list();
        std::vector<double>& kept = step.double_lists.emplace_back(ints.begin(), ints.end());
        LoomValue out{LOOM_VALUE_DOUBLE_LIST, static_cast<uint32_t>(kept.size()), {}};
        out.u.doubles = kept.data();
        return out;
      }
      std::vector<int64_t>& kept = step.int_lists.emplace_back(v.to_int_list());
      return dispatch::box(IntArrayRef(kept));
    }
    case Value::Kind::DoubleList: {
      std::vector<double>& kept = step.double_lists.emplace_back(v.to_double_list());
      LoomValue out{LOOM_VALUE_DOUBLE_LIST, static_cast<uint32_t>(kept.size()), {}};
      out.u.doubles = kept.data();
      return out;
    }
    case Value::Kind::BoolList: {
      const std::vector<bool>& bits = v.to_bool_list();
      std::vector<uint8_t>& kept = step.bool_lists.emplace_back(bits.begin(), bits.end());
      LoomValue out{LOOM_VALUE_BOOL_LIST, static_cast<uint32_t>(kept.size()), {}};
      out.u.bools = kept.data();
      return out;
    }
    default:
      fail(std::string(kComponent), step.label, ": a constant ", v.type_name(),
           " cannot be passed to an operator");
  }
}

// Boxes a list argument whose elements are values of the graph (or constants).
LoomValue box_list(Interpreter::Step& step, const SchemaType& type, const Argument& arg) {
  const SchemaType& base = type.kind == K::Optional ? *type.elem : type;
  bool tensors = base.elem->kind != K::Int;
  auto list = static_cast<uint32_t>(tensors ? step.tensor_lists.size() : step.int_lists.size());
  if (tensors) {
    std::vector<LoomTensor*>& kept = step.tensor_lists.emplace_back(arg.items.size(), nullptr);
    LoomValue out{LOOM_VALUE_TENSOR_LIST, static_cast<uint32_t>(kept.size()), {}};
    out.u.tensors = kept.data();
    for (size_t i = 0; i < arg.items.size(); ++i) {
      if (arg.items[i].value != kNoValue) {
        step.list_reads.push_back({true, list, static_cast<uint32_t>(i), arg.items[i].value});
      }
    }
    return out;
  }
  std::vector<int64_t>& kept = step.int_lists.emplace_back();
  for (size_t i = 0; i < arg.items.size(); ++i) {
    kept.push_back(arg.items[i].constant);
    if (arg.items[i].value != kNoValue) {
      step.list_reads.push_back({false, list, static_cast<uint32_t>(i), arg.items[i].value});
    }
  }
  return dispatch::box(IntArrayRef(kept));
}

LoomValue box_read(const Graph& g, const RunValue& v, ValueId id) {
  switch (g.value(id).type) {
    case ValueType::Tensor: {
      LoomValue out{LOOM_VALUE_TENSOR, 0, {}};
      out.u.tensor = handle_of(v.tensor);
      return out;
    }
    case ValueType::SymInt:
      return dispatch::box(v.i);
    case ValueType::SymFloat:
      return dispatch::box(v.d);
    case ValueType::SymBool:
      return dispatch::box(v.b);
  }
  return dispatch::none();
}

// A symbolic builtin's operand: an int, a float (is_float) or a bool.
struct Number {
  double d = 0;
  int64_t i = 0;
  bool is_float = false;
};

Number operand(const Graph& g, const Argument& arg, const std::vector<RunValue>& values,
               const std::string& label) {
  Number n;
  if (arg.kind == Argument::Kind::Value) {
    const RunValue& v = values[arg.value];
    switch (g.value(arg.value).type) {
      case ValueType::SymInt:
        n.i = v.i;
        n.d = static_cast<double>(v.i);
        return n;
      case ValueType::SymFloat:
        n.d = v.d;
        n.is_float = true;
        return n;
      case ValueType::SymBool:
        n.i = v.b;
        n.d = v.b;
        return n;
      case ValueType::Tensor:
        break;
    }
  } else if (arg.kind == Argument::Kind::Constant) {
    const Value& c = arg.constant;
    if (c.is_int() || c.is_bool()) {
      n.i = c.is_int() ? c.to_int() : c.to_bool();
      n.d = static_cast<double>(n.i);
      return n;
    }
    if (c.is_double()) {
      n.d = c.to_double();
      n.is_float = true;
      return n;
    }
  }
  fail(std::string(kComponent), label, ": argument '", arg.name, "' is not a number");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

void run_builtin(const Graph& g, const Interpreter::Step& step, std::vector<RunValue>& values) {
  const Node& node = *step.node;
  const std::string& op = node.op;
  Number a = operand(g, node.arguments[0], values, step.label);
  Number b =
      node.arguments.size() > 1 ? operand(g, node.arguments[1], values, step.label) : Number{};
  bool fp = a.is_float || b.is_float;
  ValueId out = node.outputs[0];
  if (out == kNoValue) return;
  RunValue& r = values[out];
  ValueType type = g.value(out).type;
  auto set = [&](double d, int64_t i) {
    r.d = d;
    r.i = i;
    r.b = i != 0;
  };
  if (op == "sym::eq" || op == "sym::ne" || op == "sym::lt" || op == "sym::le" || op == "sym::gt" ||
      op == "sym::ge") {
    double x = a.d, y = b.d;
    bool t = op == "sym::eq"   ? x == y
             : op == "sym::ne" ? x != y
             : op == "sym::lt" ? x < y
             : op == "sym::le" ? x <= y
             : op == "sym::gt" ? x > y
                               : x >= y;
    set(t, t);
  } else if (op == "sym::truediv") {
    LOOM_CHECK(b.d != 0, std::string(kComponent), step.label, ": division by zero");
    set(a.d / b.d, static_cast<int64_t>(a.d / b.d));
  } else if (fp) {
    double d = op == "sym::add"   ? a.d + b.d
               : op == "sym::sub" ? a.d - b.d
               : op == "sym::mul" ? a.d * b.d
               : op == "sym::neg" ? -a.d
               : op == "sym::max" ? std::max(a.d, b.d)
               : op == "sym::min" ? std::min(a.d, b.d)
               : op == "sym::mod" ? a.d - std::floor(a.d / b.d) * b.d
                                  : std::floor(a.d / b.d);
    set(d, static_cast<int64_t>(d));
  } else {
    if (op == "sym::floordiv" || op == "sym::mod") {
      LOOM_CHECK(b.i != 0, std::string(kComponent), step.label, ": division by zero");
    }
    int64_t i = op == "sym::add"        ? a.i + b.i
                : op == "sym::sub"      ? a.i - b.i
                : op == "sym::mul"      ? a.i * b.i
                : op == "sym::neg"      ? -a.i
                : op == "sym::max"      ? std::max(a.i, b.i)
                : op == "sym::min"      ? std::min(a.i, b.i)
                : op == "sym::floordiv" ? floor_div(a.i, b.i)
                                        : a.i - floor_div(a.i, b.i) * b.i;
    set(static_cast<double>(i), i);
  }
  if (type == ValueType::SymInt && fp) r.i = static_cast<int64_t>(r.d);
}

// Moves the kernel's returns into the values of the graph.
void take_returns(const Graph& g, Interpreter::Step& step, LoomValue* returns,
                  std::vector<RunValue>& values) {
  const Node& node = *step.node;
  if (node.list_return) {
    LoomValue& list = returns[0];
    if (list.tag != LOOM_VALUE_TENSOR_LIST) {
      dispatch::release_value(list);
      fail(std::string(kComponent), step.label, ": expected a Tensor[] return");
    }
    for (uint32_t i = 0; i < list.length; ++i) {
      Tensor t = Tensor::adopt(reinterpret_cast<TensorImpl*>(list.u.tensors[i]));
      if (i < node.outputs.size() && node.outputs[i] != kNoValue) {
        values[node.outputs[i]].tensor = std::move(t);
      }
    }
    uint32_t length = list.length;
    std::free(const_cast<LoomTensor**>(list.u.tensors));
    list.tag = LOOM_VALUE_NONE;
    LOOM_CHECK(length == node.outputs.size(), std::string(kComponent), step.label,
               ": the graph expects ", node.outputs.size(), " tensors, the operator returned ",
               length);
    return;
  }
  for (size_t i = 0; i < step.num_returns; ++i) {
    LoomValue& r = returns[i];
    ValueId out = node.outputs[i];
    if (out == kNoValue) {
      dispatch::release_value(r);
      continue;
    }
    RunValue& v = values[out];
    switch (r.tag) {
      case LOOM_VALUE_TENSOR:
        v.tensor = r.u.tensor ? Tensor::adopt(reinterpret_cast<TensorImpl*>(r.u.tensor)) : Tensor();
        r.tag = LOOM_VALUE_NONE;
        break;
      case LOOM_VALUE_INT:
      case LOOM_VALUE_BOOL:
        v.i = r.u.i;
        v.d = static_cast<double>(r.u.i);
        v.b = r.u.i != 0;
        break;
      case LOOM_VALUE_DOUBLE:
        v.d = r.u.d;
        v.i = static_cast<int64_t>(r.u.d);
        break;
      default:
        dispatch::release_value(r);
        break;
    }
  }
}

// The row of `op`'s dispatch table for `key`, if any.
std::optional<dispatch::TableRow> row_for(dispatch::OperatorHandle op, DispatchKey key) {
  for (dispatch::TableRow& row : dispatch::Dispatcher::instance().dump_table(op)) {
    if (row.key == key) return std::move(row);
  }
  return std::nullopt;
}

// Note [How a node is served]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A backend kernel of the op is "kernel". A structured op's functional form is the op
// library's composite over its out= variant (`loom::add.out` for `loom::add.Tensor`,
// `loom::mm.out` for `loom::mm`): it is served by whoever has that kernel. View ops are the
// op library's one metadata kernel for every backend ("view"); decompositions into other
// ops are "decomposition" (the ops they call are not followed); a backend's whole-key
// fallback is "fallback"; anything else is "missing".
void describe(dispatch::OperatorHandle op, DispatchKey key, NodeSupport& s) {
  std::optional<dispatch::TableRow> row = row_for(op, key);
  s.how = "missing";
  if (!row) return;
  s.provider = row->provider;
  switch (row->source) {
    case dispatch::EntrySource::Kernel:
      s.how = "kernel";
      return;
    case dispatch::EntrySource::Decomposition:
      s.how = "decomposition";
      return;
    case dispatch::EntrySource::Fallback:
      s.how = "fallback";
      return;
    case dispatch::EntrySource::CompositeExplicit:
      break;
    default:
      s.provider.clear();
      return;
  }
  if (row->debug == "view") {
    s.how = "view";
    return;
  }
  if (row->debug != "structured functional") {
    s.how = "decomposition";
    return;
  }
  const std::string& name = op.name();
  size_t dot = name.find('.', name.rfind("::") + 2);
  std::string base = name.substr(0, dot);
  if (!base.empty() && base.back() == '_') base.pop_back();  // add_.Tensor: add.out
  std::vector<std::string> outs = {base + ".out"};
  if (dot != std::string::npos) outs.push_back(name + "_out");
  for (const std::string& out : outs) {
    std::optional<dispatch::OperatorHandle> out_op = dispatch::Dispatcher::instance().find(out);
    if (!out_op || !out_op->is_defined()) continue;
    std::optional<dispatch::TableRow> out_row = row_for(*out_op, key);
    if (out_row && out_row->source == dispatch::EntrySource::Kernel) {
      s.how = "kernel";
      s.provider = out_row->provider;
      return;
    }
  }
  s.how = "missing";
  s.provider.clear();
}

}  // namespace

Interpreter::Interpreter(const Graph& graph, Device device) : graph_(graph), device_(device) {
  graph.validate();
  const std::vector<Node>& nodes = graph.nodes();
  std::vector<int64_t> last_use(graph.values().size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (const Argument& arg : nodes[n].arguments) {
      if (arg.kind == Argument::Kind::Value) last_use[arg.value] = static_cast<int64_t>(n);
      for (const ListItem& item : arg.items) {
        if (item.value != kNoValue) last_use[item.value] = static_cast<int64_t>(n);
      }
    }
  }
  std::vector<uint8_t> is_output(graph.values().size(), 0);
  for (ValueId out : graph.outputs()) is_output[out] = 1;

  steps_.reserve(nodes.size());
  dispatch::Dispatcher& dispatcher = dispatch::Dispatcher::instance();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    Step& step = steps_.emplace_back();
    step.node = &node;
    step.name = node_name(graph, node);
    step.label = str_cat("node '", step.name, "' (", node.op, ")");
    for (ValueId out : node.outputs) {
      if (out != kNoValue && last_use[out] < 0 && !is_output[out]) step.frees.push_back(out);
    }
    if (is_symbolic_builtin(node.op)) {
      step.builtin = true;
    } else {
      step.op = dispatcher.find_defined(node.op);
      dispatch::FunctionSchema schema = step.op.schema();
      step.num_returns = schema.returns.size();
      LOOM_CHECK(step.num_returns <= kMaxReturns, std::string(kComponent), step.label,
                 ": the operator has ", step.num_returns, " returns, more than the ", kMaxReturns,
                 " the interpreter takes");
      step.args.reserve(node.arguments.size());
      for (size_t i = 0; i < node.arguments.size(); ++i) {
        const Argument& arg = node.arguments[i];
        const SchemaType& type = schema.arguments[i].type;
        switch (arg.kind) {
          case Argument::Kind::Constant:
            step.args.push_back(box_constant(step, type, arg.constant, device));
            break;
          case Argument::Kind::Value:
            step.reads.push_back({static_cast<uint32_t>(i), arg.value});
            step.args.push_back(dispatch::none());
            break;
          case Argument::Kind::List:
            step.args.push_back(box_list(step, type, arg));
            break;
        }
      }
    }
  }
  for (size_t v = 0; v < last_use.size(); ++v) {
    if (last_use[v] >= 0 && !is_output[v])
      steps_[last_use[v]].frees.push_back(static_cast<ValueId>(v));
  }
}

Interpreter::~Interpreter() = default;

std::unordered_map<std::string, int64_t> Interpreter::bind_symbols(
    std::span<const Tensor> inputs) const {
  const std::vector<GraphInput>& graph_inputs = graph_.inputs();
  LOOM_CHECK(inputs.size() == graph_inputs.size(), std::string(kComponent), "the graph takes ",
             graph_inputs.size(), " inputs, found ", inputs.size());
  std::unordered_map<std::string, int64_t> bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& info = graph_.value(graph_inputs[i].value);
    const Tensor& t = inputs[i];
    LOOM_CHECK(t.defined(), std::string(kComponent), "input %", info.name,
               " is an undefined tensor");
    LOOM_CHECK(t.device().type == device_.type, std::string(kComponent), "input %", info.name,
               " is on ", t.device().to_string(), ", expected ", device_.to_string());
    if (!info.meta) continue;
    const TensorMeta& meta = *info.meta;
    LOOM_CHECK(t.dtype() == meta.dtype, std::string(kComponent), "input %", info.name,
               " expects dtype ", scalar_type_name(meta.dtype), ", found ",
               scalar_type_name(t.dtype()));
    LOOM_CHECK(t.dim() == static_cast<int64_t>(meta.sizes.size()), std::string(kComponent),
               "input %", info.name, " expects ", meta_to_string(meta), ", found a ", t.dim(),
               "-dim tensor");
    for (size_t d = 0; d < meta.sizes.size(); ++d) {
      const SymSize& want = meta.sizes[d];
      int64_t have = t.sizes()[d];
      if (!want.is_symbolic()) {
        LOOM_CHECK(have == want.value, std::string(kComponent), "input %", info.name, " expects ",
                   meta_to_string(meta), ", found size ", have, " at dimension ", d);
        continue;
      }
      auto [it, inserted] = bound.emplace(want.symbol, have);
      LOOM_CHECK(inserted || it->second == have, std::string(kComponent), "input %", info.name,
                 " has size ", have, " at dimension ", d, " where ", want.symbol, " is ",
                 it->second, " already");
      if (const SymbolRange* range = graph_.find_symbol(want.symbol)) {
        LOOM_CHECK(have >= range->min && have <= range->max, std::string(kComponent), "input %",
                   info.name, " has size ", have, " at dimension ", d, ", outside ", want.symbol,
                   "'s range [", range->min, ", ", range->max, "]");
      }
    }
  }
  return bound;
}

std::vector<Tensor> Interpreter::operator()(std::span<const Tensor> inputs) {
  bind_symbols(inputs);
  std::lock_guard<std::mutex> lock(mutex_);
  const Graph& g = graph_;
  std::vector<RunValue> values(g.values().size());
  const std::vector<GraphInput>& graph_inputs = g.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) values[graph_inputs[i].value].tensor = inputs[i];

  dispatch::Dispatcher& dispatcher = dispatch::Dispatcher::instance();
  LoomValue returns[kMaxReturns];
  for (Step& step : steps_) {
    if (step.builtin) {
      run_builtin(g, step, values);
    } else {
      for (const Step::Read& read : step.reads) {
        step.args[read.arg] = box_read(g, values[read.value], read.value);
      }
      for (const Step::ListRead& read : step.list_reads) {
        if (read.tensor) {
          step.tensor_lists[read.list][read.index] = handle_of(values[read.value].tensor);
        } else {
          step.int_lists[read.list][read.index] = values[read.value].i;
        }
      }
      for (size_t r = 0; r < step.num_returns; ++r) returns[r] = dispatch::none();
      try {
        dispatcher.call(step.op, step.args.data(), step.args.size(), returns, step.num_returns);
      } catch (const Error& e) {
        throw Error(std::string(kComponent), str_cat(step.label, ": ", e.what()), e.code());
      }
      try {
        take_returns(g, step, returns, values);
      } catch (...) {
        for (size_t r = 0; r < step.num_returns; ++r) dispatch::release_value(returns[r]);
        throw;
      }
      for (const Step::Read& read : step.reads) step.args[read.arg] = dispatch::none();
    }
    for (ValueId v : step.frees) values[v] = RunValue{};
  }
  std::vector<Tensor> outputs;
  outputs.reserve(g.outputs().size());
  for (ValueId out : g.outputs()) {
    const RunValue& v = values[out];
    switch (g.value(out).type) {
      case ValueType::Tensor:
        outputs.push_back(v.tensor);
        break;
      case ValueType::SymInt:
        outputs.push_back(scalar_tensor(v.i, TensorOptions().dtype(ScalarType::Int64)));
        break;
      case ValueType::SymFloat:
        outputs.push_back(scalar_tensor(v.d, TensorOptions().dtype(ScalarType::Float64)));
        break;
      case ValueType::SymBool:
        outputs.push_back(scalar_tensor(v.b, TensorOptions().dtype(ScalarType::Bool)));
        break;
    }
  }
  return outputs;
}

std::vector<NodeSupport> Interpreter::support() const {
  std::vector<NodeSupport> out;
  DispatchKey backend = DeviceTypeRegistry::instance().backend(device_.type);
  for (const Step& step : steps_) {
    NodeSupport s;
    const Node& node = *step.node;
    s.node = step.name;
    s.op = node.op;
    if (step.builtin) {
      s.how = "builtin";
    } else {
      describe(step.op, backend, s);
    }
    out.push_back(std::move(s));
  }
  return out;
}

void propagate_metadata(Graph& graph) {
  std::vector<Tensor> inputs;
  for (const GraphInput& in : graph.inputs()) {
    const ValueInfo& info = graph.value(in.value);
    LOOM_CHECK(info.meta.has_value(), std::string(kComponent), "input %", info.name,
               " has no metadata to propagate from");
    std::vector<int64_t> sizes;
    for (const SymSize& s : info.meta->sizes) sizes.push_back(s.value);
    inputs.push_back(
        empty(sizes, TensorOptions().dtype(info.meta->dtype).device(Device{kMeta, -1})));
  }
  // Run node by node, keeping every value: the interpreter frees them, so record each
  // tensor output's metadata through a graph whose outputs are all values.
  Graph all = graph;
  for (size_t v = 0; v < graph.values().size(); ++v) {
    if (graph.values()[v].type == ValueType::Tensor) all.add_output(static_cast<ValueId>(v));
  }
  Interpreter everything(all, Device{kMeta, -1});
  std::vector<Tensor> results = everything(inputs);
  size_t k = graph.outputs().size();
  for (size_t v = 0; v < graph.values().size(); ++v) {
    ValueInfo& info = graph.value(static_cast<ValueId>(v));
    if (info.type != ValueType::Tensor) continue;
    const Tensor& t = results[k++];
    if (info.meta || !t.defined()) continue;
    TensorMeta meta;
    meta.dtype = t.dtype();
    for (int64_t s : t.sizes()) meta.sizes.push_back(SymSize{s, ""});
    info.meta = std::move(meta);
  }
}

}  // namespace loom::graph
