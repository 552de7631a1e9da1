// Printing and comparison for the schema data types; the parser lives in schema_parser.cc.
#include "loom/dispatcher/function_schema.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "loom/core/memory_format.h"

#include <charconv>
#include <cmath>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace loom::dispatch {
namespace {

// Shortest text that reads back as the same double and still looks like a float ("1.0", not
// "1"), so that a Scalar default keeps its kind across a round trip.
std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string out(buf, end);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

std::string quote_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  out += '"';
  return out;
}

bool same_double(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

bool same_default(const DefaultValue& a, const DefaultValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<double>(&a)) return same_double(*x, std::get<double>(b));
  if (const auto* x = std::get_if<std::vector<double>>(&a)) {
    const auto& y = std::get<std::vector<double>>(b);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i) {
      if (!same_double((*x)[i], y[i])) return false;
    }
    return true;
  }
  return a == b;
}

// Spell a type, putting `alias` right after the Tensor it annotates.
std::string type_to_string(const SchemaType& type, const AliasInfo* alias) {
  switch (type.kind) {
    case SchemaType::Kind::List: {
      std::string size = type.fixed_size ? absl::StrCat(*type.fixed_size) : "";
      return absl::StrCat(type_to_string(*type.elem, alias), "[", size, "]");
    }
    case SchemaType::Kind::Optional:
      return absl::StrCat(type_to_string(*type.elem, alias), "?");
    default:
      break;
  }
  std::string out(kind_name(type.kind));
  if (alias != nullptr) {
    absl::StrAppend(&out, "(", alias->set, alias->is_write ? "!" : "", ")");
  }
  return out;
}

}  // namespace

std::string OperatorName::qualified() const {
  if (overload.empty()) return absl::StrCat(ns, "::", name);
  return absl::StrCat(ns, "::", name, ".", overload);
}

SchemaType SchemaType::of(Kind base) {
  SchemaType t;
  t.kind = base;
  return t;
}

SchemaType SchemaType::list_of(SchemaType elem, std::optional<int64_t> fixed_size) {
  SchemaType t;
  t.kind = Kind::List;
  t.elem = std::make_shared<const SchemaType>(std::move(elem));
  t.fixed_size = fixed_size;
  return t;
}

SchemaType SchemaType::optional_of(SchemaType elem) {
  SchemaType t;
  t.kind = Kind::Optional;
  t.elem = std::make_shared<const SchemaType>(std::move(elem));
  return t;
}

std::string SchemaType::to_string() const {
  return type_to_string(*this, nullptr);
}

bool operator==(const SchemaType& a, const SchemaType& b) {
  if (a.kind != b.kind || a.fixed_size != b.fixed_size) return false;
  if (a.elem == nullptr || b.elem == nullptr) return a.elem == b.elem;
  return *a.elem == *b.elem;
}

std::string_view kind_name(SchemaType::Kind kind) {
  using Kind = SchemaType::Kind;
  switch (kind) {
    case Kind::Tensor:
      return "Tensor";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::Bool:
      return "bool";
    case Kind::Str:
      return "str";
    case Kind::Scalar:
      return "Scalar";
    case Kind::ScalarType:
      return "ScalarType";
    case Kind::Device:
      return "Device";
    case Kind::Generator:
      return "Generator";
    case Kind::Layout:
      return "Layout";
    case Kind::MemoryFormat:
      return "MemoryFormat";
    case Kind::List:
      return "List";
    case Kind::Optional:
      return "Optional";
  }
  return "?";
}

std::string default_value_to_string(const DefaultValue& value) {
  struct Printer {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(int64_t v) const { return absl::StrCat(v); }
    std::string operator()(double v) const { return format_double(v); }
    std::string operator()(bool v) const { return v ? "True" : "False"; }
    std::string operator()(const std::string& v) const { return quote_string(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
    std::string operator()(const std::vector<double>& v) const {
      std::vector<std::string> parts;
      for (double d : v) parts.push_back(format_double(d));
      return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
    }
    std::string operator()(const std::vector<bool>& v) const {
      std::vector<std::string> parts;
      for (bool b : v) parts.push_back(b ? "True" : "False");
      return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
    }
  };
  return std::visit(Printer{}, value);
}

std::string Argument::to_string() const {
  std::string out = type_to_string(type, alias ? &*alias : nullptr);
  if (!name.empty()) absl::StrAppend(&out, " ", name);
  if (default_value) {
    // A memory format prints by name (Note [Memory format codes]), so the text reads back.
    const SchemaType& base = type.is_optional() ? *type.elem : type;
    const int64_t* code = std::get_if<int64_t>(&*default_value);
    std::string_view name = code && base.kind == SchemaType::Kind::MemoryFormat
                                ? memory_format_code_name(*code)
                                : std::string_view{};
    absl::StrAppend(&out, "=",
                    name.empty() ? default_value_to_string(*default_value) : std::string(name));
  }
  return out;
}

bool operator==(const Argument& a, const Argument& b) {
  if (a.name != b.name || !(a.type == b.type) || a.kwarg_only != b.kwarg_only ||
      a.alias != b.alias || a.default_value.has_value() != b.default_value.has_value()) {
    return false;
  }
  return !a.default_value || same_default(*a.default_value, *b.default_value);
}

std::string FunctionSchema::to_string() const {
  std::vector<std::string> args;
  bool in_kwargs = false;
  for (const Argument& arg : arguments) {
    if (arg.kwarg_only && !in_kwargs) {
      args.push_back("*");
      in_kwargs = true;
    }
    args.push_back(arg.to_string());
  }
  std::string out = absl::StrCat(name.qualified(), "(", absl::StrJoin(args, ", "), ") -> ");
  if (returns.size() == 1 && returns[0].name.empty()) {
    absl::StrAppend(&out, returns[0].to_string());
  } else {
    std::vector<std::string> rets;
    for (const Argument& ret : returns) rets.push_back(ret.to_string());
    absl::StrAppend(&out, "(", absl::StrJoin(rets, ", "), ")");
  }
  return out;
}

bool FunctionSchema::is_mutable() const {
  for (const Argument& arg : arguments) {
    if (arg.alias && arg.alias->is_write) return true;
  }
  return false;
}

}  // namespace loom::dispatch
