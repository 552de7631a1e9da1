// The graph IR's containers, its well-formedness check and its text form.
#include "loom/graph.h"

#include <algorithm>
#include <cmath>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/function_schema.h"

namespace loom::graph {
namespace {

constexpr std::string_view kComponent = "graph";
using dispatch::SchemaType;
using K = SchemaType::Kind;

constexpr std::string_view kSymbolicBuiltins[] = {
    "sym::add", "sym::sub",     "sym::mul", "sym::floordiv", "sym::mod",
    "sym::neg", "sym::truediv", "sym::eq",  "sym::ne",       "sym::lt",
    "sym::le",  "sym::gt",      "sym::ge",  "sym::max",      "sym::min"};

std::string number_text(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = str_cat(d);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string constant_text(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None:
      return "None";
    case Value::Kind::Int:
      return str_cat(v.to_int());
    case Value::Kind::Double:
      return number_text(v.to_double());
    case Value::Kind::Bool:
      return v.to_bool() ? "True" : "False";
    case Value::Kind::String:
      return str_cat("\"", v.to_string(), "\"");
    case Value::Kind::Dtype:
      return std::string(scalar_type_name(v.to_dtype()));
    case Value::Kind::Device:
      return v.to_device().to_string();
    case Value::Kind::IntList: {
      std::string s = "[";
      for (int64_t i : v.to_int_list()) s += str_cat(s.size() > 1 ? ", " : "", i);
      return s + "]";
    }
    case Value::Kind::DoubleList: {
      std::string s = "[";
      for (double d : v.to_double_list()) s += str_cat(s.size() > 1 ? ", " : "", number_text(d));
      return s + "]";
    }
    case Value::Kind::BoolList: {
      std::string s = "[";
      for (bool b : v.to_bool_list()) s += str_cat(s.size() > 1 ? ", " : "", b ? "True" : "False");
      return s + "]";
    }
    default:
      return str_cat("<", v.type_name(), ">");
  }
}

bool is_kind(const Graph& g, ValueId id, ValueType type) {
  return id >= 0 && id < static_cast<ValueId>(g.values().size()) && g.value(id).type == type;
}

// Why `arg` does not fit schema type `type`, or empty when it does.
std::string mismatch(const Graph& g, const SchemaType& type, const Argument& arg) {
  using AK = Argument::Kind;
  const SchemaType& base = type.kind == K::Optional ? *type.elem : type;
  if (type.kind == K::Optional && arg.kind == AK::Constant && arg.constant.is_none()) return "";
  auto expected = [&] { return str_cat("expects ", type.to_string()); };
  switch (arg.kind) {
    case AK::Value: {
      ValueType vt = g.value(arg.value).type;
      bool ok = false;
      switch (base.kind) {
        case K::Tensor:
          ok = vt == ValueType::Tensor;
          break;
        case K::Int:
          ok = vt == ValueType::SymInt;
          break;
        case K::Float:
        case K::Scalar:
          ok = vt != ValueType::Tensor;
          break;
        case K::Bool:
          ok = vt == ValueType::SymBool;
          break;
        default:
          break;
      }
      if (ok) return "";
      return str_cat(expected(), ", found %", g.value(arg.value).name, " (", value_type_name(vt),
                     ")");
    }
    case AK::List: {
      if (base.kind != K::List) return str_cat(expected(), ", found a list of values");
      const SchemaType& elem = *base.elem;
      for (const ListItem& item : arg.items) {
        if (item.value == kNoValue) {
          if (elem.kind == K::Tensor) return str_cat(expected(), ", found a list holding None");
          continue;
        }
        bool tensor_elem =
            elem.kind == K::Tensor || (elem.kind == K::Optional && elem.elem->kind == K::Tensor);
        ValueType want = tensor_elem ? ValueType::Tensor : ValueType::SymInt;
        if (!tensor_elem && elem.kind != K::Int)
          return str_cat(expected(), ", found a list of values");
        if (!is_kind(g, item.value, want)) {
          return str_cat(expected(), ", found %", g.value(item.value).name, " (",
                         value_type_name(g.value(item.value).type), ") in the list");
        }
      }
      return "";
    }
    case AK::Constant:
      break;
  }
  const Value& v = arg.constant;
  bool ok = false;
  switch (base.kind) {
    case K::Tensor:  // a number for a Tensor: a wrapped 0-dim tensor, as in loom::call
      ok = v.is_int() || v.is_double() || v.is_bool();
      break;
    case K::Int:
      ok = v.is_int();
      break;
    case K::Float:
      ok = v.is_int() || v.is_double();
      break;
    case K::Bool:
      ok = v.is_bool();
      break;
    case K::Str:
      ok = v.is_string();
      break;
    case K::Scalar:
      ok = v.is_int() || v.is_double() || v.is_bool();
      break;
    case K::ScalarType:
      ok = v.kind() == Value::Kind::Dtype;
      break;
    case K::Device:
      ok = v.kind() == Value::Kind::Device;
      break;
    case K::Layout:
    case K::MemoryFormat:
    case K::Generator:
      ok = v.is_int();
      break;
    case K::List:
      switch (base.elem->kind) {
        case K::Int:
          ok = v.kind() == Value::Kind::IntList;
          break;
        case K::Float:
          ok = v.kind() == Value::Kind::DoubleList || v.kind() == Value::Kind::IntList;
          break;
        case K::Bool:
          ok = v.kind() == Value::Kind::BoolList;
          break;
        default:
          break;
      }
      break;
    default:
      break;
  }
  if (ok) return "";
  return str_cat(expected(), ", found ", v.type_name(), " ", constant_text(v));
}

std::string argument_text(const Graph& g, const Argument& arg) {
  switch (arg.kind) {
    case Argument::Kind::Constant:
      return constant_text(arg.constant);
    case Argument::Kind::Value:
      return str_cat("%", g.value(arg.value).name);
    case Argument::Kind::List: {
      std::string s = "[";
      for (size_t i = 0; i < arg.items.size(); ++i) {
        const ListItem& item = arg.items[i];
        s += i ? ", " : "";
        s += item.value == kNoValue ? str_cat(item.constant)
                                    : str_cat("%", g.value(item.value).name);
      }
      return s + "]";
    }
  }
  return "";
}

// A Tensor?[] list prints its None elements as None, not as 0.
std::string list_argument_text(const Graph& g, const Argument& arg, const SchemaType* type) {
  if (arg.kind != Argument::Kind::List || type == nullptr) return argument_text(g, arg);
  const SchemaType& base = type->kind == K::Optional ? *type->elem : *type;
  if (base.kind != K::List || base.elem->kind != K::Optional) return argument_text(g, arg);
  std::string s = "[";
  for (size_t i = 0; i < arg.items.size(); ++i) {
    s += i ? ", " : "";
    s += arg.items[i].value == kNoValue ? "None" : str_cat("%", g.value(arg.items[i].value).name);
  }
  return s + "]";
}

std::string value_decl(const Graph& g, ValueId id) {
  const ValueInfo& v = g.value(id);
  std::string s = str_cat("%", v.name);
  if (v.meta) {
    s += str_cat(": ", meta_to_string(*v.meta));
  } else if (v.type != ValueType::Tensor) {
    s += str_cat(": ", value_type_name(v.type));
  }
  return s;
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::Tensor:
      return "Tensor";
    case ValueType::SymInt:
      return "SymInt";
    case ValueType::SymFloat:
      return "SymFloat";
    case ValueType::SymBool:
      return "SymBool";
  }
  return "?";
}

std::string_view input_role_name(InputRole role) {
  switch (role) {
    case InputRole::UserInput:
      return "input";
    case InputRole::Parameter:
      return "parameter";
    case InputRole::Buffer:
      return "buffer";
    case InputRole::Constant:
      return "constant";
  }
  return "?";
}

bool is_symbolic_builtin(std::string_view op) {
  return std::find(std::begin(kSymbolicBuiltins), std::end(kSymbolicBuiltins), op) !=
         std::end(kSymbolicBuiltins);
}

std::string meta_to_string(const TensorMeta& meta) {
  std::string s = str_cat(scalar_type_name(meta.dtype), "[");
  for (size_t i = 0; i < meta.sizes.size(); ++i) {
    s += i ? ", " : "";
    s += meta.sizes[i].is_symbolic() ? meta.sizes[i].symbol : str_cat(meta.sizes[i].value);
  }
  s += "]";
  if (meta.device != Device{}) s += str_cat(" on ", meta.device.to_string());
  return s;
}

Argument Argument::of_constant(std::string name, loom::Value constant) {
  Argument a;
  a.name = std::move(name);
  a.kind = Kind::Constant;
  a.constant = std::move(constant);
  return a;
}

Argument Argument::of_value(std::string name, ValueId value) {
  Argument a;
  a.name = std::move(name);
  a.kind = Kind::Value;
  a.value = value;
  return a;
}

Argument Argument::of_list(std::string name, std::vector<ListItem> items) {
  Argument a;
  a.name = std::move(name);
  a.kind = Kind::List;
  a.items = std::move(items);
  return a;
}

ValueId Graph::add_value(std::string name, ValueType type, std::optional<TensorMeta> meta) {
  LOOM_CHECK(!find_value(name), std::string(kComponent), "value '", name, "' is defined twice");
  LOOM_CHECK(!name.empty(), std::string(kComponent), "a value needs a name");
  const auto id = static_cast<ValueId>(values_.size());
  index_.emplace(name, id);
  values_.push_back(ValueInfo{std::move(name), type, std::move(meta)});
  return id;
}

void Graph::add_input(ValueId value, InputRole role, std::string target) {
  inputs_.push_back(GraphInput{value, role, std::move(target)});
}

void Graph::add_node(Node node) {
  nodes_.push_back(std::move(node));
}

void Graph::add_output(ValueId value) {
  outputs_.push_back(value);
}

void Graph::add_symbol(SymbolRange range) {
  LOOM_CHECK(range.min <= range.max, std::string(kComponent), "symbol ", range.symbol,
             " has an empty range [", range.min, ", ", range.max, "]");
  for (SymbolRange& s : symbols_) {
    if (s.symbol == range.symbol) {
      s = std::move(range);
      return;
    }
  }
  symbols_.push_back(std::move(range));
}

ValueInfo& Graph::value(ValueId id) {
  LOOM_CHECK(id >= 0 && id < static_cast<ValueId>(values_.size()), std::string(kComponent),
             "value id ", id, " is out of range [0, ", values_.size(), ")");
  return values_[id];
}

const ValueInfo& Graph::value(ValueId id) const {
  return const_cast<Graph*>(this)->value(id);
}

std::optional<ValueId> Graph::find_value(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

const SymbolRange* Graph::find_symbol(std::string_view symbol) const {
  for (const SymbolRange& s : symbols_) {
    if (s.symbol == symbol) return &s;
  }
  return nullptr;
}

void Graph::validate() const {
  const auto count = static_cast<ValueId>(values_.size());
  std::vector<uint8_t> defined(values_.size(), 0);
  auto in_range = [&](ValueId id) { return id >= 0 && id < count; };
  for (const GraphInput& in : inputs_) {
    LOOM_CHECK(in_range(in.value), std::string(kComponent), "an input refers to value id ",
               in.value, ", out of range [0, ", count, ")");
    LOOM_CHECK(!defined[in.value], std::string(kComponent), "input %", values_[in.value].name,
               " is defined twice");
    LOOM_CHECK(in.role == InputRole::UserInput || !in.target.empty(), std::string(kComponent),
               input_role_name(in.role), " %", values_[in.value].name, " has no target name");
    defined[in.value] = 1;
  }
  dispatch::Dispatcher& dispatcher = dispatch::Dispatcher::instance();
  for (const Node& node : nodes_) {
    std::string where =
        str_cat("node '",
                node.outputs.empty() || !in_range(node.outputs[0]) ? std::string("?")
                                                                   : values_[node.outputs[0]].name,
                "' (", node.op, ")");
    auto check_read = [&](ValueId id, const std::string& arg) {
      LOOM_CHECK(in_range(id), std::string(kComponent), where, ": argument '", arg,
                 "' refers to value id ", id, ", out of range [0, ", count, ")");
      LOOM_CHECK(defined[id], std::string(kComponent), where, ": argument '", arg, "' reads %",
                 values_[id].name, " before it is defined");
    };
    for (const Argument& arg : node.arguments) {
      if (arg.kind == Argument::Kind::Value) check_read(arg.value, arg.name);
      if (arg.kind == Argument::Kind::List) {
        for (const ListItem& item : arg.items) {
          if (item.value != kNoValue) check_read(item.value, arg.name);
        }
      }
    }
    if (is_symbolic_builtin(node.op)) {
      size_t want = node.op == "sym::neg" ? 1 : 2;
      LOOM_CHECK(node.arguments.size() == want && node.outputs.size() == 1, std::string(kComponent),
                 where, ": expected ", want, " argument", want == 1 ? "" : "s",
                 " and 1 output, found ", node.arguments.size(), " and ", node.outputs.size());
    } else {
      std::optional<dispatch::OperatorHandle> op = dispatcher.find(node.op);
      LOOM_CHECK(op && op->is_defined(), std::string(kComponent), where, ": unknown operator '",
                 node.op, "'");
      dispatch::FunctionSchema schema = op->schema();
      LOOM_CHECK(schema.arguments.size() == node.arguments.size(), std::string(kComponent), where,
                 ": the schema has ", schema.arguments.size(), " arguments, the node ",
                 node.arguments.size(), " (schema: ", schema.to_string(), ")");
      for (size_t i = 0; i < schema.arguments.size(); ++i) {
        const dispatch::Argument& want = schema.arguments[i];
        const Argument& have = node.arguments[i];
        LOOM_CHECK(want.name == have.name, std::string(kComponent), where, ": argument ", i,
                   " is '", want.name, "' in the schema, found '", have.name, "'");
        std::string why = mismatch(*this, want.type, have);
        LOOM_CHECK(why.empty(), std::string(kComponent), where, ": argument '", have.name, "' ",
                   why);
      }
      bool list_return = schema.returns.size() == 1 && schema.returns[0].type.kind == K::List;
      LOOM_CHECK(list_return == node.list_return, std::string(kComponent), where,
                 ": list_return is ", node.list_return, " but the schema returns ",
                 schema.returns.empty() ? "nothing" : schema.returns[0].type.to_string());
      LOOM_CHECK(list_return || node.outputs.size() == schema.returns.size(),
                 std::string(kComponent), where, ": the schema has ", schema.returns.size(),
                 " returns, the node ", node.outputs.size(), " outputs");
    }
    for (ValueId out : node.outputs) {
      if (out == kNoValue) continue;
      LOOM_CHECK(in_range(out), std::string(kComponent), where, ": an output refers to value id ",
                 out, ", out of range [0, ", count, ")");
      LOOM_CHECK(!defined[out], std::string(kComponent), where, ": %", values_[out].name,
                 " is defined twice");
      defined[out] = 1;
    }
  }
  for (ValueId out : outputs_) {
    LOOM_CHECK(in_range(out), std::string(kComponent), "an output refers to value id ", out,
               ", out of range [0, ", count, ")");
    LOOM_CHECK(defined[out], std::string(kComponent), "output %", values_[out].name,
               " is never defined");
  }
}

std::string Graph::to_text() const {
  std::string s = "graph(";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const GraphInput& in = inputs_[i];
    s += i ? ",\n      " : "";
    s += value_decl(*this, in.value);
    if (in.role != InputRole::UserInput) {
      s += str_cat(" ", input_role_name(in.role), " \"", in.target, "\"");
    }
  }
  s += "):\n";
  dispatch::Dispatcher& dispatcher = dispatch::Dispatcher::instance();
  for (const Node& node : nodes_) {
    std::vector<std::string> outs;
    for (ValueId out : node.outputs) outs.push_back(out == kNoValue ? "_" : value_decl(*this, out));
    s += "  ";
    if (node.list_return || outs.size() > 1) s += "(";
    for (size_t i = 0; i < outs.size(); ++i) s += str_cat(i ? ", " : "", outs[i]);
    if (node.list_return || outs.size() > 1) s += ")";
    s += str_cat(" = ", node.op, "(");
    std::optional<dispatch::FunctionSchema> schema;
    if (std::optional<dispatch::OperatorHandle> op = dispatcher.find(node.op);
        op && op->is_defined()) {
      schema = op->schema();
    }
    for (size_t i = 0; i < node.arguments.size(); ++i) {
      const Argument& arg = node.arguments[i];
      const SchemaType* type =
          schema && i < schema->arguments.size() ? &schema->arguments[i].type : nullptr;
      s += str_cat(i ? ", " : "", arg.name, "=", list_argument_text(*this, arg, type));
    }
    s += ")\n";
  }
  s += "  return (";
  for (size_t i = 0; i < outputs_.size(); ++i) {
    s += str_cat(i ? ", " : "", "%", values_[outputs_[i]].name);
  }
  s += ")\n";
  for (const SymbolRange& r : symbols_) {
    s += str_cat(r.symbol, " in [", r.min, ", ",
                 r.max == INT64_MAX ? std::string("inf") : str_cat(r.max), "]\n");
  }
  return s;
}

}  // namespace loom::graph
