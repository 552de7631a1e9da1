// The .pt2 reader (Note [Reading a .pt2 archive] in loom/exported_program.h): the
// archive's layout, PyTorch's export-schema JSON into a loom graph, and the weights
// into tensors, each checked before it is used.
#include <cstring>
#include <limits>
#include <regex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "loom/core/error.h"
#include "loom/core/memory_format.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/exported_program.h"
#include "loom/factories.h"
#include "loom/ops/generated/ops.h"
#include "loom/schema_default.h"
#include "pt2_reader.h"
#include "zip_archive.h"

namespace loom {
namespace {

using graph::Argument;
using graph::Graph;
using graph::InputRole;
using graph::ListItem;
using graph::Node;
using graph::SymSize;
using graph::TensorMeta;
using graph::ValueId;
using graph::ValueType;
using json = nlohmann::json;
using dispatch::SchemaType;
using K = SchemaType::Kind;

constexpr std::string_view kComponent = "pt2";
// The major version of PyTorch's export schema this reader knows (torch/_export/serde/
// schema.py, SCHEMA_VERSION; minor versions only add fields).
constexpr int64_t kSchemaMajor = 8;
constexpr uint64_t kMaxJsonBytes = uint64_t{256} << 20;
constexpr size_t kMaxJsonDepth = 128;
constexpr size_t kMaxRank = 64;

// The export schema's ScalarType enum to loom's.
std::optional<ScalarType> dtype_of_export(int64_t v) {
  switch (v) {
    case 1:
      return ScalarType::UInt8;
    case 2:
      return ScalarType::Int8;
    case 3:
      return ScalarType::Int16;
    case 4:
      return ScalarType::Int32;
    case 5:
      return ScalarType::Int64;
    case 6:
      return ScalarType::Float16;
    case 7:
      return ScalarType::Float32;
    case 8:
      return ScalarType::Float64;
    case 10:
      return ScalarType::ComplexFloat;
    case 11:
      return ScalarType::ComplexDouble;
    case 12:
      return ScalarType::Bool;
    case 13:
      return ScalarType::BFloat16;
    default:
      return std::nullopt;
  }
}

class Reader {
 public:
  explicit Reader(const graph::ArchiveEntries& zip) : zip_(zip) {}

  template <typename... Args>
  [[noreturn]] void error(const Args&... detail) const {
    fail(std::string(kComponent), zip_.name(), ": ", entry_, entry_.empty() ? "" : ": ", detail...);
  }

  void find_root() {
    for (const std::string& e : zip_.entries()) {
      if (e == "archive_format" || e.ends_with("/archive_format")) {
        std::string prefix = e.substr(0, e.size() - std::string_view("archive_format").size());
        if (prefix.find('/') == prefix.size() - 1 || prefix.empty()) {
          root_ = prefix;
          break;
        }
      }
    }
    entry_ = "archive_format";
    if (!zip_.has(root_ + "archive_format")) {
      error("missing: not a PyTorch .pt2 archive (written by torch.export.save)");
    }
    std::string format = zip_.read(root_ + "archive_format", 64);
    if (format != "pt2") error("expected \"pt2\", found \"", format, "\"");
    if (zip_.has(root_ + "byteorder")) {
      entry_ = "byteorder";
      std::string order = zip_.read(root_ + "byteorder", 64);
      if (order != "little") error("expected \"little\", found \"", order, "\"");
    }
  }

  json read_json(const std::string& entry) {
    entry_ = entry;
    if (!zip_.has(root_ + entry)) error("missing entry");
    std::string text = zip_.read(root_ + entry, kMaxJsonBytes);
    bool too_deep = false;
    json::parser_callback_t depth_check = [&](int depth, json::parse_event_t, json&) {
      if (static_cast<size_t>(depth) > kMaxJsonDepth) too_deep = true;
      return true;
    };
    json j = json::parse(text, depth_check, /*allow_exceptions=*/false);
    if (j.is_discarded()) error("not valid JSON");
    if (too_deep) error("JSON nested deeper than ", kMaxJsonDepth, " levels");
    return j;
  }

  bool has(const std::string& entry) const { return zip_.has(root_ + entry); }
  uint64_t entry_size(const std::string& entry) const { return zip_.size_of(root_ + entry); }
  std::string read_entry(const std::string& entry, uint64_t max_bytes) {
    std::string saved = std::exchange(entry_, entry);
    std::string bytes = zip_.read(root_ + entry, max_bytes);
    entry_ = std::move(saved);
    return bytes;
  }

  // --- checked JSON access ---
  const json& field(const json& obj, const char* key, std::string_view where) const {
    if (!obj.is_object()) error(where, " is not an object");
    auto it = obj.find(key);
    if (it == obj.end()) error(where, " has no '", key, "'");
    return *it;
  }
  const json* optional_field(const json& obj, const char* key) const {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }
  int64_t integer(const json& j, std::string_view where) const {
    if (j.is_number_integer()) {
      if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t{INT64_MAX}) {
        error(where, " is out of the range of int64");
      }
      return j.get<int64_t>();
    }
    error(where, " should be an integer, found ", j.type_name());
  }
  double number(const json& j, std::string_view where) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
      const std::string& s = j.get_ref<const std::string&>();
      if (s == "Infinity") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
      if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    }
    error(where, " should be a number, found ", j.dump().substr(0, 40));
  }
  bool boolean(const json& j, std::string_view where) const {
    if (j.is_boolean()) return j.get<bool>();
    error(where, " should be a bool, found ", j.type_name());
  }
  const std::string& text(const json& j, std::string_view where) const {
    if (j.is_string()) return j.get_ref<const std::string&>();
    error(where, " should be a string, found ", j.type_name());
  }
  const json& array(const json& j, std::string_view where) const {
    if (j.is_array()) return j;
    error(where, " should be a list, found ", j.type_name());
  }
  // A union of the export schema: an object with exactly one key.
  std::pair<std::string, const json*> union_of(const json& j, std::string_view where) const {
    if (!j.is_object() || j.size() != 1) error(where, " should be an object with one key");
    return {j.begin().key(), &j.begin().value()};
  }

  ScalarType dtype(const json& j, std::string_view where) const {
    int64_t v = integer(j, where);
    std::optional<ScalarType> t = dtype_of_export(v);
    if (!t) error(where, ": dtype ", v, " of the export schema has no loom dtype");
    return *t;
  }

  // "Symbol('s77', positive=True, integer=True)" -> "s77"; other expressions stay whole.
  static std::string symbol_of(const std::string& expr) {
    static const std::regex symbol(R"(^Symbol\('([A-Za-z_][A-Za-z0-9_]*)'.*\)$)");
    std::smatch m;
    if (std::regex_match(expr, m, symbol)) return m[1];
    return expr;
  }

  SymSize sym_size(const json& j, std::string_view where) const {
    auto [kind, v] = union_of(j, where);
    if (kind == "as_int") {
      int64_t s = integer(*v, where);
      if (s < 0) error(where, " is negative (", s, ")");
      return SymSize{s, ""};
    }
    if (kind == "as_expr") {
      std::string expr = text(field(*v, "expr_str", where), where);
      int64_t hint = 0;
      if (const json* h = optional_field(*v, "hint")) {
        auto [hk, hv] = union_of(*h, where);
        if (hk == "as_int") hint = integer(*hv, where);
      }
      if (expr.empty()) error(where, " has an empty expression");
      return SymSize{hint, symbol_of(expr)};
    }
    error(where, ": unknown size kind '", kind, "'");
  }

  TensorMeta tensor_meta(const json& j, std::string_view where) const {
    TensorMeta meta;
    meta.dtype = dtype(field(j, "dtype", where), where);
    const json& sizes = array(field(j, "sizes", where), where);
    if (sizes.size() > kMaxRank) error(where, " has ", sizes.size(), " dims, more than ", kMaxRank);
    for (const json& s : sizes) meta.sizes.push_back(sym_size(s, where));
    if (const json* layout = optional_field(j, "layout")) {
      int64_t l = integer(*layout, where);
      if (l != kStridedLayoutCode)
        error(where, ": layout ", l, " is not strided (7); loom has dense tensors only");
    }
    return meta;
  }

  std::string root_;
  std::string entry_;

 private:
  const graph::ArchiveEntries& zip_;
};

// Builds the graph from models/model.json.
class GraphBuilder {
 public:
  GraphBuilder(Reader& r, Graph& g) : r_(r), g_(g) {}

  void read_symbols(const json& model) {
    const json* ranges = r_.optional_field(model, "range_constraints");
    if (ranges == nullptr) return;
    if (!ranges->is_object()) r_.error("range_constraints should be an object");
    for (const auto& item : ranges->items()) {
      const std::string& symbol = item.key();
      const json& range = item.value();
      std::string where = str_cat("range_constraints[", symbol, "]");
      graph::SymbolRange sr{symbol, 0, INT64_MAX};
      auto bound = [&](const char* key, int64_t fallback) {
        const json* b = r_.optional_field(range, key);
        if (b == nullptr) return fallback;
        if (b->is_number_unsigned() && b->get<uint64_t>() > uint64_t{INT64_MAX}) return INT64_MAX;
        if (b->is_number_float()) {  // PyTorch writes unbounded ends as huge floats
          double d = b->get<double>();
          return d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(d);
        }
        return r_.integer(*b, where);
      };
      sr.min = bound("min_val", 0);
      sr.max = bound("max_val", INT64_MAX);
      if (sr.min > sr.max) r_.error(where, ": min ", sr.min, " is above max ", sr.max);
      g_.add_symbol(sr);
    }
  }

  ValueId define(const std::string& name, ValueType type, std::string_view where) {
    if (name.empty()) r_.error(where, " defines a value with no name");
    if (g_.find_value(name)) r_.error(where, " defines '", name, "' a second time");
    std::optional<TensorMeta> meta;
    if (type == ValueType::Tensor) {
      if (const json* tv = r_.optional_field(*tensor_values_, name.c_str())) {
        meta = r_.tensor_meta(*tv, str_cat("tensor_values[", name, "]"));
      }
    }
    return g_.add_value(name, type, std::move(meta));
  }

  ValueId lookup(const std::string& name, ValueType type, std::string_view where) const {
    std::optional<ValueId> id = g_.find_value(name);
    if (!id) r_.error(where, " reads '", name, "', which is not defined before it");
    if (g_.value(*id).type != type) {
      r_.error(where, " reads '", name, "' as a ", graph::value_type_name(type), ", but it is a ",
               graph::value_type_name(g_.value(*id).type));
    }
    return *id;
  }

  std::string name_in(const json& j, const char* key, std::string_view where) const {
    return r_.text(r_.field(j, key, where), where);
  }

  // A sym_int / sym_float / sym_bool argument: {"as_name": n} or a constant.
  Argument symbolic(const std::string& arg_name, const json& j, ValueType type,
                    std::string_view where) const {
    auto [kind, v] = r_.union_of(j, where);
    if (kind == "as_name") {
      return Argument::of_value(arg_name, lookup(r_.text(*v, where), type, where));
    }
    if (kind == "as_int") return Argument::of_constant(arg_name, r_.integer(*v, where));
    if (kind == "as_float") return Argument::of_constant(arg_name, r_.number(*v, where));
    if (kind == "as_bool") return Argument::of_constant(arg_name, r_.boolean(*v, where));
    r_.error(where, ": unknown symbolic kind '", kind, "'");
  }

  Argument argument(const std::string& arg_name, const json& j, std::string_view where) const {
    auto [kind, v] = r_.union_of(j, where);
    const json& x = *v;
    if (kind == "as_none") return Argument::of_constant(arg_name, Value());
    if (kind == "as_tensor") {
      return Argument::of_value(arg_name,
                                lookup(name_in(x, "name", where), ValueType::Tensor, where));
    }
    if (kind == "as_optional_tensor") {
      auto [ok, ov] = r_.union_of(x, where);
      if (ok == "as_none") return Argument::of_constant(arg_name, Value());
      if (ok != "as_tensor") r_.error(where, ": unknown optional tensor kind '", ok, "'");
      return Argument::of_value(arg_name,
                                lookup(name_in(*ov, "name", where), ValueType::Tensor, where));
    }
    if (kind == "as_tensors") {
      std::vector<ListItem> items;
      for (const json& t : r_.array(x, where)) {
        items.push_back(ListItem{lookup(name_in(t, "name", where), ValueType::Tensor, where), 0});
      }
      return Argument::of_list(arg_name, std::move(items));
    }
    if (kind == "as_optional_tensors") {
      std::vector<ListItem> items;
      for (const json& t : r_.array(x, where)) {
        auto [ok, ov] = r_.union_of(t, where);
        if (ok == "as_none") {
          items.push_back(ListItem{});
        } else if (ok == "as_tensor") {
          items.push_back(
              ListItem{lookup(name_in(*ov, "name", where), ValueType::Tensor, where), 0});
        } else {
          r_.error(where, ": unknown optional tensor kind '", ok, "'");
        }
      }
      return Argument::of_list(arg_name, std::move(items));
    }
    if (kind == "as_int") return Argument::of_constant(arg_name, r_.integer(x, where));
    if (kind == "as_float") return Argument::of_constant(arg_name, r_.number(x, where));
    if (kind == "as_bool") return Argument::of_constant(arg_name, r_.boolean(x, where));
    if (kind == "as_string") return Argument::of_constant(arg_name, r_.text(x, where));
    if (kind == "as_ints") {
      std::vector<int64_t> ints;
      for (const json& i : r_.array(x, where)) ints.push_back(r_.integer(i, where));
      return Argument::of_constant(arg_name, std::move(ints));
    }
    if (kind == "as_floats") {
      std::vector<double> ds;
      for (const json& d : r_.array(x, where)) ds.push_back(r_.number(d, where));
      return Argument::of_constant(arg_name, std::move(ds));
    }
    if (kind == "as_bools") {
      std::vector<bool> bs;
      for (const json& b : r_.array(x, where)) bs.push_back(r_.boolean(b, where));
      return Argument::of_constant(arg_name, std::move(bs));
    }
    if (kind == "as_sym_int") return symbolic(arg_name, x, ValueType::SymInt, where);
    if (kind == "as_sym_float") return symbolic(arg_name, x, ValueType::SymFloat, where);
    if (kind == "as_sym_bool") return symbolic(arg_name, x, ValueType::SymBool, where);
    if (kind == "as_sym_ints") {
      std::vector<ListItem> items;
      bool any_value = false;
      for (const json& s : r_.array(x, where)) {
        Argument a = symbolic(arg_name, s, ValueType::SymInt, where);
        if (a.kind == Argument::Kind::Value) {
          items.push_back(ListItem{a.value, 0});
          any_value = true;
        } else if (a.constant.is_int()) {
          items.push_back(ListItem{graph::kNoValue, a.constant.to_int()});
        } else {
          r_.error(where, ": a size that is not an int");
        }
      }
      if (any_value) return Argument::of_list(arg_name, std::move(items));
      std::vector<int64_t> ints;
      for (const ListItem& item : items) ints.push_back(item.constant);
      return Argument::of_constant(arg_name, std::move(ints));
    }
    if (kind == "as_scalar_type") return Argument::of_constant(arg_name, r_.dtype(x, where));
    if (kind == "as_layout") {
      int64_t layout = r_.integer(x, where);
      if (layout != kStridedLayoutCode) {
        r_.error(where, ": layout ", layout, " is not strided (7); loom has dense tensors only");
      }
      return Argument::of_constant(arg_name, layout);
    }
    if (kind == "as_memory_format") return Argument::of_constant(arg_name, r_.integer(x, where));
    if (kind == "as_device") {
      r_.text(r_.field(x, "type", where), where);
      return Argument::of_constant(arg_name, Device{});  // the interpreter runs on its own device
    }
    r_.error(where, ": argument kind '", kind, "' is not supported by loom");
  }

  // "torch.ops.aten.addmm.default" -> "loom::addmm"; Python's operator.* -> "sym::*".
  std::string op_name(const std::string& target, std::string_view where) const {
    static constexpr std::pair<std::string_view, std::string_view> kBuiltins[] = {
        {"_operator.add", "sym::add"},         {"_operator.sub", "sym::sub"},
        {"_operator.mul", "sym::mul"},         {"_operator.floordiv", "sym::floordiv"},
        {"_operator.mod", "sym::mod"},         {"_operator.neg", "sym::neg"},
        {"_operator.truediv", "sym::truediv"}, {"_operator.eq", "sym::eq"},
        {"_operator.ne", "sym::ne"},           {"_operator.lt", "sym::lt"},
        {"_operator.le", "sym::le"},           {"_operator.gt", "sym::gt"},
        {"_operator.ge", "sym::ge"},           {"torch.sym_max", "sym::max"},
        {"torch.sym_min", "sym::min"}};
    for (const auto& [python, builtin] : kBuiltins) {
      if (target == python) return std::string(builtin);
    }
    constexpr std::string_view kPrefix = "torch.ops.";
    if (!target.starts_with(kPrefix))
      r_.error(where, ": target '", target, "' is not an operator loom knows");
    std::string rest = target.substr(kPrefix.size());
    size_t dot1 = rest.find('.');
    size_t dot2 = dot1 == std::string::npos ? dot1 : rest.find('.', dot1 + 1);
    if (dot2 == std::string::npos || rest.find('.', dot2 + 1) != std::string::npos) {
      r_.error(where, ": target '", target, "' is not torch.ops.<namespace>.<name>.<overload>");
    }
    std::string ns = rest.substr(0, dot1);
    std::string name = rest.substr(dot1 + 1, dot2 - dot1 - 1);
    std::string overload = rest.substr(dot2 + 1);
    if (ns == "aten") ns = "loom";
    return overload == "default" ? str_cat(ns, "::", name) : str_cat(ns, "::", name, ".", overload);
  }

  void read_node(const json& jn, size_t index) {
    std::string where = str_cat("node ", index);
    std::string target = r_.text(r_.field(jn, "target", where), where);
    if (const json* n = r_.optional_field(jn, "name"); n && n->is_string()) {
      where = str_cat("node '", n->get<std::string>(), "' (", target, ")");
    } else {
      where = str_cat("node ", index, " (", target, ")");
    }
    Node node;
    node.source = target;
    node.op = op_name(target, where);
    const json& inputs = r_.array(r_.field(jn, "inputs", where), where);
    if (graph::is_symbolic_builtin(node.op)) {
      static constexpr const char* kOperands[] = {"a", "b"};
      if (inputs.size() > 2)
        r_.error(where, ": expected at most 2 operands, found ", inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        node.arguments.push_back(argument(kOperands[i], r_.field(inputs[i], "arg", where), where));
      }
    } else {
      std::optional<dispatch::OperatorHandle> op = dispatch::Dispatcher::instance().find(node.op);
      if (!op || !op->is_defined()) {
        unknown_.push_back(str_cat(target, " (", where.substr(0, where.find(" (")), ")"));
        read_outputs(node, jn, where);  // later nodes may read them: report every unknown op
        return;
      }
      bind_arguments(node, op->schema(), inputs, where);
    }
    read_outputs(node, jn, where);
    g_.add_node(std::move(node));
  }

  void bind_arguments(Node& node, const dispatch::FunctionSchema& schema, const json& inputs,
                      const std::string& where) {
    std::unordered_map<std::string, const json*> given;
    for (const json& in : inputs) {
      std::string name = r_.text(r_.field(in, "name", where), where);
      if (!given.emplace(name, &r_.field(in, "arg", where)).second) {
        r_.error(where, ": argument '", name, "' is given twice");
      }
    }
    // Note [clone's memory format]
    // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    // loom's clone has no memory_format argument (its schema is part of the frozen plugin
    // ABI): clone(memory_format=contiguous_format) runs as loom::contiguous, and
    // preserve_format as loom's clone. Graphs from export are functional, so the alias
    // contiguous may return is never written.
    if (node.op == "loom::clone" && given.contains("memory_format")) {
      Argument format = argument("memory_format", *given["memory_format"], where);
      given.erase("memory_format");
      if (format.kind == Argument::Kind::Constant && format.constant.is_int() &&
          format.constant.to_int() == memory_format_code::kContiguous) {
        node.op = "loom::contiguous";
      } else if (!(format.kind == Argument::Kind::Constant &&
                   (format.constant.is_none() ||
                    (format.constant.is_int() &&
                     format.constant.to_int() == memory_format_code::kPreserve)))) {
        r_.error(where, ": clone with memory format ", argument_kind_text(format),
                 " (loom's clone keeps the layout or makes it contiguous)");
      }
    }
    for (const auto& [name, arg] : given) {
      bool known = false;
      for (const dispatch::Argument& a : schema.arguments) known = known || a.name == name;
      if (!known) r_.error(where, ": loom's ", schema.to_string(), " has no argument '", name, "'");
    }
    for (const dispatch::Argument& want : schema.arguments) {
      auto it = given.find(want.name);
      if (it != given.end()) {
        node.arguments.push_back(
            argument(want.name, *it->second, str_cat(where, ": argument '", want.name, "'")));
        given.erase(it);
        continue;
      }
      if (!want.default_value) {
        r_.error(where, ": argument '", want.name, "' of ", schema.to_string(), " is missing");
      }
      node.arguments.push_back(
          Argument::of_constant(want.name, value_of_default(*want.default_value)));
    }
    node.list_return = schema.returns.size() == 1 && schema.returns[0].type.kind == K::List;
  }

  static std::string argument_kind_text(const Argument& a) {
    if (a.kind == Argument::Kind::Constant && a.constant.is_int())
      return str_cat(a.constant.to_int());
    return "that is not a constant";
  }

  void read_outputs(Node& node, const json& jn, const std::string& where) {
    const json& outputs = r_.array(r_.field(jn, "outputs", where), where);
    for (const json& out : outputs) {
      auto [kind, v] = r_.union_of(out, where);
      if (kind == "as_tensor") {
        node.outputs.push_back(define(name_in(*v, "name", where), ValueType::Tensor, where));
      } else if (kind == "as_tensors") {
        if (outputs.size() != 1) r_.error(where, ": a Tensor[] output must be the only one");
        for (const json& t : r_.array(*v, where)) {
          node.outputs.push_back(define(name_in(t, "name", where), ValueType::Tensor, where));
        }
      } else if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") {
        ValueType type = kind == "as_sym_int"     ? ValueType::SymInt
                         : kind == "as_sym_float" ? ValueType::SymFloat
                                                  : ValueType::SymBool;
        node.outputs.push_back(define(name_in(*v, "as_name", where), type, where));
      } else if (kind == "as_none") {
        node.outputs.push_back(graph::kNoValue);
      } else if (kind == "as_int" || kind == "as_float" || kind == "as_bool") {
        node.outputs.push_back(graph::kNoValue);  // a return PyTorch folded to a constant
      } else {
        r_.error(where, ": output kind '", kind, "' is not supported by loom");
      }
    }
    if (node.list_return && outputs.size() == 1 &&
        r_.union_of(outputs[0], where).first != "as_tensors") {
      r_.error(where, ": expected a Tensor[] output");
    }
  }

  void finish() {
    if (unknown_.empty()) return;
    std::string list;
    for (const std::string& u : unknown_) list += str_cat("\n  ", u);
    r_.error(unknown_.size(), " node",
             unknown_.size() == 1 ? " calls an operator" : "s call operators",
             " loom does not have:", list);
  }

  const json* tensor_values_ = nullptr;

 private:
  Reader& r_;
  Graph& g_;
  std::vector<std::string> unknown_;
};

// One state entry: its file's bytes as a tensor of the metadata it is described with.
Tensor read_state_tensor(Reader& r, const std::string& folder, const std::string& name,
                         const json& entry) {
  std::string where = str_cat("state entry '", name, "'");
  if (const json* pickle = r.optional_field(entry, "use_pickle");
      pickle && r.boolean(*pickle, where)) {
    r.error(where,
            " is pickled, which loom does not read (re-export with torch.export.save of "
            "PyTorch 2.6 or newer, which stores raw bytes)");
  }
  std::string path = r.text(r.field(entry, "path_name", where), where);
  if (path.empty() || path.find('/') != std::string::npos || path == "." || path == "..") {
    r.error(where, ": path_name '", path, "' is not a file name");
  }
  const json& meta = r.field(entry, "tensor_meta", where);
  ScalarType dtype = r.dtype(r.field(meta, "dtype", where), where);
  std::vector<int64_t> sizes, strides;
  for (const json& s : r.array(r.field(meta, "sizes", where), where)) {
    SymSize size = r.sym_size(s, where);
    if (size.is_symbolic()) r.error(where, " has a symbolic size");
    sizes.push_back(size.value);
  }
  for (const json& s : r.array(r.field(meta, "strides", where), where)) {
    SymSize stride = r.sym_size(s, where);
    if (stride.is_symbolic()) r.error(where, " has a symbolic stride");
    strides.push_back(stride.value);
  }
  if (strides.size() != sizes.size()) {
    r.error(where, " has ", sizes.size(), " sizes but ", strides.size(), " strides");
  }
  if (sizes.size() > kMaxRank) r.error(where, " has ", sizes.size(), " dims, more than ", kMaxRank);
  int64_t offset = 0;
  if (const json* o = r.optional_field(meta, "storage_offset"))
    offset = r.sym_size(*o, where).value;
  // The elements the layout spans, without overflow: offset + sum((size - 1) * stride) + 1.
  const int64_t elem = static_cast<int64_t>(element_size(dtype));
  __int128 numel = 1, span = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    numel *= sizes[d];
    if (numel > (__int128{1} << 50)) r.error(where, " has too many elements");
    if (sizes[d] > 0) span += static_cast<__int128>(sizes[d] - 1) * strides[d];
  }
  span = numel == 0 ? 0 : span + 1;
  if (span > (__int128{1} << 50)) r.error(where, ": its layout spans too many elements");
  const uint64_t needed = static_cast<uint64_t>(span) * static_cast<uint64_t>(elem);
  std::string file = str_cat(folder, path);
  if (!r.has(file)) r.error(where, ": missing entry '", file, "'");
  // The file holds the tensor's storage: at least the bytes its layout spans, more for a
  // view of a larger storage (not more than twice, so a lying size allocates little).
  uint64_t have = r.entry_size(file);
  if (have < needed || have % elem != 0 || have > 2 * needed + 4096) {
    r.error(where, ": its ", scalar_type_name(dtype), " layout spans ", needed, " bytes, but '",
            file, "' holds ", have);
  }
  std::string bytes = r.read_entry(file, have);
  if (dtype == ScalarType::Bool) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (static_cast<unsigned char>(bytes[i]) > 1) {
        r.error(where, ": byte ", i, " of its bool data is ",
                static_cast<int>(static_cast<unsigned char>(bytes[i])), ", not 0 or 1");
      }
    }
  }
  Tensor storage = empty({static_cast<int64_t>(have / elem)}, TensorOptions().dtype(dtype));
  if (have > 0) std::memcpy(storage.data_ptr(), bytes.data(), have);
  if (numel == 0) return empty(sizes, TensorOptions().dtype(dtype));
  return loom::contiguous(loom::as_strided(storage, sizes, strides, offset));
}

std::string model_entry(const Reader& r, const graph::ArchiveEntries& zip) {
  if (r.has("models/model.json")) return "models/model.json";
  std::string found;
  for (const std::string& e : zip.entries()) {
    std::string_view rest = std::string_view(e).substr(std::min(e.size(), r.root_.size()));
    if (e.starts_with(r.root_) && rest.starts_with("models/") && rest.ends_with(".json")) {
      if (!found.empty()) r.error("more than one model (", found, ", ", rest, "); loom reads one");
      found = rest;
    }
  }
  if (found.empty()) r.error("missing entry models/model.json");
  return found;
}

// The graph input a signature entry names: {"arg": {"name": n}} or, for user inputs,
// {"arg": {"as_tensor": {"name": n}}}.
std::string spec_input_name(const Reader& r, const json& spec, bool user, std::string_view where) {
  const json& arg = r.field(spec, "arg", where);
  if (!user) return r.text(r.field(arg, "name", where), where);
  auto [kind, v] = r.union_of(arg, where);
  if (kind != "as_tensor")
    r.error(where, ": a user input of kind '", kind, "' (loom takes tensors)");
  return r.text(r.field(*v, "name", where), where);
}

}  // namespace

ExportedProgram read_exported_program(const graph::ArchiveEntries& zip) {
  Reader r(zip);
  r.find_root();
  json model = r.read_json(model_entry(r, zip));
  const json& version = r.field(model, "schema_version", "the model");
  int64_t major = r.integer(r.field(version, "major", "schema_version"), "schema_version.major");
  int64_t minor = r.integer(r.field(version, "minor", "schema_version"), "schema_version.minor");
  if (major != kSchemaMajor) {
    r.error("export schema version ", major, ".", minor, " is not one loom reads (major version ",
            kSchemaMajor, ")");
  }
  const json& module = r.field(model, "graph_module", "the model");
  const json& jg = r.field(module, "graph", "graph_module");
  const json& signature = r.field(module, "signature", "graph_module");

  auto g = std::make_unique<Graph>();
  GraphBuilder b(r, *g);
  static const json kNoTensorValues = json::object();
  const json* tensor_values = r.optional_field(jg, "tensor_values");
  b.tensor_values_ = tensor_values && tensor_values->is_object() ? tensor_values : &kNoTensorValues;
  b.read_symbols(model);

  const json& inputs = r.array(r.field(jg, "inputs", "graph"), "graph.inputs");
  const json& input_specs = r.array(r.field(signature, "input_specs", "signature"), "input_specs");
  if (inputs.size() != input_specs.size()) {
    r.error("the graph has ", inputs.size(), " inputs but the signature describes ",
            input_specs.size());
  }
  for (size_t i = 0; i < input_specs.size(); ++i) {
    std::string where = str_cat("input_specs[", i, "]");
    auto [kind, spec] = r.union_of(input_specs[i], where);
    InputRole role;
    std::string target;
    if (kind == "user_input") {
      role = InputRole::UserInput;
    } else if (kind == "parameter") {
      role = InputRole::Parameter;
      target = r.text(r.field(*spec, "parameter_name", where), where);
    } else if (kind == "buffer") {
      role = InputRole::Buffer;
      target = r.text(r.field(*spec, "buffer_name", where), where);
    } else if (kind == "tensor_constant") {
      role = InputRole::Constant;
      target = r.text(r.field(*spec, "tensor_constant_name", where), where);
    } else {
      r.error(where, ": an input of kind '", kind, "' is not supported by loom");
    }
    std::string name = spec_input_name(r, *spec, role == InputRole::UserInput, where);
    auto [graph_kind, graph_input] = r.union_of(inputs[i], str_cat("graph.inputs[", i, "]"));
    if (graph_kind != "as_tensor" || r.text(r.field(*graph_input, "name", where), where) != name) {
      r.error(where, " names '", name, "', which is not the graph's input ", i);
    }
    if (role != InputRole::UserInput && target.empty()) r.error(where, " has an empty target name");
    g->add_input(b.define(name, ValueType::Tensor, where), role, target);
  }

  const json& nodes = r.array(r.field(jg, "nodes", "graph"), "graph.nodes");
  for (size_t i = 0; i < nodes.size(); ++i) b.read_node(nodes[i], i);
  b.finish();

  const json& outputs = r.array(r.field(jg, "outputs", "graph"), "graph.outputs");
  const json& output_specs =
      r.array(r.field(signature, "output_specs", "signature"), "output_specs");
  if (outputs.size() != output_specs.size()) {
    r.error("the graph has ", outputs.size(), " outputs but the signature describes ",
            output_specs.size());
  }
  std::vector<ExportedProgram::OutputSpec> specs;
  for (size_t i = 0; i < output_specs.size(); ++i) {
    std::string where = str_cat("output_specs[", i, "]");
    auto [kind, spec] = r.union_of(output_specs[i], where);
    ExportedProgram::OutputSpec out;
    if (kind == "user_output" || kind == "loss_output") {
      out.kind = ExportedProgram::OutputSpec::Kind::User;
    } else if (kind == "buffer_mutation") {
      out.kind = ExportedProgram::OutputSpec::Kind::BufferMutation;
      out.target = r.text(r.field(*spec, "buffer_name", where), where);
    } else if (kind == "user_input_mutation") {
      out.kind = ExportedProgram::OutputSpec::Kind::UserInputMutation;
      out.target = r.text(r.field(*spec, "user_input_name", where), where);
    } else {
      r.error(where, ": an output of kind '", kind, "' is not supported by loom");
    }
    Argument value = b.argument("output", outputs[i], str_cat("graph.outputs[", i, "]"));
    if (value.kind != Argument::Kind::Value) {
      r.error(where, ": a constant output (loom returns values of the graph)");
    }
    g->add_output(value.value);
    specs.push_back(std::move(out));
  }
  r.entry_ = "models/model.json";
  try {
    g->validate();
  } catch (const Error& e) {
    r.error(e.what());
  }

  json empty_config = json::object();
  json weights = r.has("data/weights/model_weights_config.json")
                     ? r.read_json("data/weights/model_weights_config.json")
                     : json::object();
  json constants = r.has("data/constants/model_constants_config.json")
                       ? r.read_json("data/constants/model_constants_config.json")
                       : json::object();
  auto config_of = [&](const json& j) -> const json& {
    const json* c = r.optional_field(j, "config");
    if (c == nullptr) return empty_config;
    if (!c->is_object()) r.error("'config' should be an object");
    return *c;
  };
  const json& weight_config = config_of(weights);
  const json& constant_config = config_of(constants);
  NamedTensorList state;
  for (const graph::GraphInput& in : g->inputs()) {
    if (in.role == InputRole::UserInput) continue;
    bool seen = false;
    for (const auto& [name, t] : state) seen = seen || name == in.target;
    if (seen) continue;
    r.entry_ = "data/weights/model_weights_config.json";
    const json* entry = r.optional_field(weight_config, in.target.c_str());
    std::string folder = "data/weights/";
    if (entry == nullptr) {
      r.entry_ = "data/constants/model_constants_config.json";
      entry = r.optional_field(constant_config, in.target.c_str());
      folder = "data/constants/";
    }
    if (entry == nullptr) {
      r.entry_.clear();
      r.error(graph::input_role_name(in.role), " '", in.target,
              "' is in neither data/weights/ nor data/constants/");
    }
    Tensor t = read_state_tensor(r, folder, in.target, *entry);
    const graph::ValueInfo& info = g->value(in.value);
    if (info.meta) {
      bool same =
          t.dtype() == info.meta->dtype && t.dim() == static_cast<int64_t>(info.meta->sizes.size());
      for (size_t d = 0; same && d < info.meta->sizes.size(); ++d) {
        same = t.sizes()[d] == info.meta->sizes[d].value;
      }
      if (!same) {
        TensorMeta found{t.dtype(), {}, Device{}};
        for (int64_t s : t.sizes()) found.sizes.push_back(SymSize{s, ""});
        r.error("state entry '", in.target, "' is ", graph::meta_to_string(found),
                " but the graph's %", info.name, " is ", graph::meta_to_string(*info.meta));
      }
    }
    state.emplace_back(in.target, std::move(t));
  }
  ExportedProgram program(std::move(g), std::move(state), std::move(specs));
  program.archive = zip.name();
  program.schema_major = static_cast<int>(major);
  program.schema_minor = static_cast<int>(minor);
  if (const json* tv = r.optional_field(model, "torch_version"); tv && tv->is_string()) {
    program.torch_version = tv->get<std::string>();
  }
  return program;
}

ExportedProgram load_exported(const std::string& path) {
  return read_exported_program(graph::ZipArchive::open_file(path));
}

ExportedProgram load_exported_from_bytes(std::string bytes, std::string name) {
  return read_exported_program(graph::ZipArchive::open_bytes(std::move(bytes), std::move(name)));
}

}  // namespace loom
