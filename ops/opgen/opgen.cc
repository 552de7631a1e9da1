// loom_opgen: generates the typed op API from the op library (ops/ops.def), so no
// signature is written twice by hand (docs/ops.md comes from `loom ops --format markdown`).
//   loom_opgen --ops OUT/ops.h --sources OUT/ops_sources --methods OUT/tensor_methods.inc
//              --sdk OUT/sdk_ops.hpp
// ops.h: the declaration of a free function per op variant (loom::add, loom::add_,
// loom::add_out); ops_sources/<family>.cc: the definitions of the family's functions and
// Tensor methods, compiled into libloom_ops (Note [The typed op API is out of line]);
// tensor_methods.inc: the method declarations the op library's Tensor class
// (loom/ops/tensor.h) includes; sdk_ops.hpp: the same free functions for plugins
// (loom::sdk::op::add over sdk::Tensor, calling through the host table; loom/sdk/ops.hpp
// includes it).
//
// Note [The typed op API is out of line]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An app's loom::add is a declaration; its body (box the arguments, call the dispatcher,
// unbox the result) is compiled once, in libloom_ops, as libtorch's at::add is. So apps
// and the frontend do not parse the dispatcher's and the C ABI's headers (loom/loom.h
// does not expose them), and a file that includes loom/loom.h compiles faster. The cost
// is one call that cannot be inlined, against a dispatch of about 45 ns.
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_split.h"
#include "loom/core/error.h"
#include "loom/dispatcher/function_schema.h"
#include "loom/ops/op_library.h"
#include "loom/ops/structured_schemas.h"

namespace loom::opgen {
namespace {

using dispatch::Argument;
using dispatch::FunctionSchema;
using dispatch::SchemaType;
using Kind = SchemaType::Kind;

struct Variant {
  FunctionSchema schema;
  std::string cpp_name;  // add, add_, add_out
  bool is_out = false;
  bool is_method = false;
  std::string family;  // the .def file that declares the op
};

// The C++ value type of a scalar schema type, or empty for other kinds. Layout and
// MemoryFormat are int-coded at the ABI (PyTorch's enum values).
std::string value_type(Kind kind) {
  switch (kind) {
    case Kind::Int:
    case Kind::Layout:
    case Kind::MemoryFormat:
      return "int64_t";
    case Kind::Float:
      return "double";
    case Kind::Bool:
      return "bool";
    default:
      return "";
  }
}

// How the app's API (loom/ops/generated/ops.h) and the SDK's (loom/sdk/ops.hpp) spell
// the parameter types that differ between them.
struct Spelling {
  const char* str;
  const char* optional_str;
  const char* scalar_type;
  const char* device;
  const char* int_list;
  const char* optional_int_list;
  const char* optional_scalar;
  const char* float_list;
};
constexpr Spelling kAppSpelling{"const std::string&",
                                "const std::optional<std::string>&",
                                "ScalarType",
                                "Device",
                                "const IntList&",
                                "const OptionalIntList&",
                                "const std::optional<Scalar>&",
                                "const std::vector<double>&"};
constexpr Spelling kSdkSpelling{"std::string_view",
                                "std::optional<std::string_view>",
                                "LoomDType",
                                "LoomDevice",
                                "IntList",
                                "std::optional<IntList>",
                                "std::optional<Scalar>",
                                "std::span<const double>"};

std::string parameter_type(const SchemaType& t, const Spelling& spell) {
  if (std::string v = value_type(t.kind); !v.empty()) return v;
  switch (t.kind) {
    case Kind::Tensor:
      return "const Tensor&";
    case Kind::Str:
      return spell.str;
    case Kind::Scalar:
      return "const Scalar&";
    case Kind::ScalarType:
      return spell.scalar_type;
    case Kind::Device:
      return spell.device;
    case Kind::Optional: {
      const SchemaType& e = *t.elem;
      if (std::string v = value_type(e.kind); !v.empty()) return "std::optional<" + v + ">";
      switch (e.kind) {
        case Kind::Tensor:
          return "const std::optional<Tensor>&";
        case Kind::Scalar:
          return spell.optional_scalar;
        case Kind::ScalarType:
          return std::string("std::optional<") + spell.scalar_type + ">";
        case Kind::Device:
          return std::string("std::optional<") + spell.device + ">";
        case Kind::Str:
          return spell.optional_str;
        case Kind::List:
          if (e.elem->kind == Kind::Int) return spell.optional_int_list;
          break;
        default:
          break;
      }
      break;
    }
    case Kind::List:
      if (t.elem->kind == Kind::Int) return spell.int_list;
      if (t.elem->kind == Kind::Float) return spell.float_list;
      if (t.elem->kind == Kind::Tensor) return "const std::vector<Tensor>&";
      if (t.elem->kind == Kind::Optional && t.elem->elem->kind == Kind::Tensor) {
        return "const std::vector<std::optional<Tensor>>&";
      }
      break;
    default:
      break;
  }
  fail("opgen", "no C++ type for schema type ", t.to_string());
}

std::string cpp_type(const SchemaType& t) {
  return parameter_type(t, kAppSpelling);
}

// The parameter type of the SDK's typed op API (loom/sdk/ops.hpp).
std::string sdk_type(const SchemaType& t) {
  return parameter_type(t, kSdkSpelling);
}

std::string cpp_default(const Argument& a) {
  const dispatch::DefaultValue& v = *a.default_value;
  if (std::holds_alternative<std::monostate>(v)) return "std::nullopt";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    std::ostringstream out;
    out.precision(17);
    out << *d;
    std::string s = out.str();
    if (s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos &&
        s.find("nan") == std::string::npos) {
      s += ".0";
    }
    return s;
  }
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string>(&v)) return "\"" + *s + "\"";
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) {
    std::string s = "{";
    for (size_t i = 0; i < l->size(); ++i) s += (i ? ", " : "") + std::to_string((*l)[i]);
    return s + "}";
  }
  fail("opgen", "no C++ default for argument '", a.name, "'");
}

std::string cpp_return(const FunctionSchema& s) {
  if (s.returns.empty()) return "void";
  auto one = [](const SchemaType& t) -> std::string {
    if (t.kind == Kind::Tensor) return "Tensor";
    if (t.kind == Kind::List && t.elem->kind == Kind::Tensor) return "std::vector<Tensor>";
    if (std::string v = value_type(t.kind); !v.empty()) return v;
    fail("opgen", "no C++ return type for ", t.to_string());
  };

  if (s.returns.size() == 1) return one(s.returns[0].type);
  std::string out = "std::tuple<";
  for (size_t i = 0; i < s.returns.size(); ++i) out += (i ? ", " : "") + one(s.returns[i].type);
  return out + ">";
}

// Parameters in C++ order: the out= arguments first (like libtorch's *_out), then the rest.
std::vector<const Argument*> cpp_order(const Variant& v) {
  std::vector<const Argument*> order;
  const auto& args = v.schema.arguments;
  const size_t outs = v.is_out ? v.schema.returns.size() : 0;
  for (size_t i = args.size() - outs; i < args.size(); ++i) order.push_back(&args[i]);
  for (size_t i = 0; i + outs < args.size(); ++i) order.push_back(&args[i]);
  return order;
}

// "const Tensor& self, const Scalar& alpha = 1", skipping the first `skip` parameters.
std::string params(const Variant& v, bool defaults, size_t skip,
                   std::string (*type_of)(const SchemaType&) = cpp_type) {
  std::vector<const Argument*> order = cpp_order(v);
  // Defaults only on a suffix: stop giving them once a later argument has none.
  std::vector<bool> can_default(order.size(), false);
  bool suffix = true;
  for (size_t i = order.size(); i-- > 0;) {
    suffix = suffix && order[i]->default_value.has_value();
    can_default[i] = suffix;
  }
  std::string out;
  for (size_t i = skip; i < order.size(); ++i) {
    const Argument* a = order[i];
    out += (out.empty() ? "" : ", ") + type_of(a->type) + " " + a->name;
    if (defaults && can_default[i]) out += " = " + cpp_default(*a);
  }
  return out;
}

std::string call_body(const Variant& v, const std::string& self_expr) {
  std::string qualified = v.schema.name.qualified();
  std::ostringstream b;
  b << "  static const detail::OpRef op(\"" << qualified << "\");\n";
  const auto& args = v.schema.arguments;
  if (args.empty()) {
    b << "  return detail::call<" << cpp_return(v.schema) << ">(op, nullptr, 0);\n";
    return b.str();
  }
  b << "  detail::ArgBuffer buffer;\n";
  b << "  LoomValue args[] = {";
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i].name;
    if (i == 0 && !self_expr.empty()) name = self_expr;
    b << (i ? ", " : "") << "detail::box_arg(buffer, " << name << ")";
  }
  b << "};\n";
  b << "  return detail::call<" << cpp_return(v.schema) << ">(op, args, " << args.size() << ");\n";
  return b.str();
}

// The body of an SDK op function: arguments boxed on the stack, a call from the top
// through the host table (LoomHostApi::call_op), returns unboxed and owned.
std::string sdk_call_body(const Variant& v) {
  std::ostringstream b;
  b << "  static detail::OpHandle op(\"" << v.schema.name.qualified() << "\");\n";
  const auto& args = v.schema.arguments;
  b << "  detail::ArgBuffer buffer;\n";
  b << "  LoomValue args[] = {";
  for (size_t i = 0; i < args.size(); ++i) {
    b << (i ? ", " : "") << "detail::box_arg(buffer, " << args[i].name << ")";
  }
  if (args.empty()) b << "{}";
  b << "};\n";
  b << "  return detail::call_op<" << cpp_return(v.schema) << ">(op, args, " << args.size()
    << ");\n";
  return b.str();
}

std::vector<Variant> all_variants() {
  std::vector<Variant> out;
  for (const OpDefinition& def : standard_ops()) {
    // Note [Factory ops without a typed function]
    // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    // Ops tagged no_typed_api get no generated function: the factories as ops, whose
    // C++ names belong to loom/factories.h's TensorOptions functions (full, empty,
    // scalar_tensor, rand...), and ops the typed API cannot spell or tell apart (bool[3],
    // float[]?, a Scalar return; var.dim beside var.correction). Graphs and loom::call
    // call them by name.
    if (ops::has_tag(def.tags, "no_typed_api")) continue;
    FunctionSchema functional = dispatch::parse_schema(def.schema);
    auto add = [&](FunctionSchema s, std::string cpp_name, bool is_out) {
      Variant v{std::move(s), std::move(cpp_name), is_out, false, std::string(def.family)};
      v.is_method = !is_out && !v.schema.arguments.empty() &&
                    v.schema.arguments[0].name == "self" &&
                    v.schema.arguments[0].type.kind == Kind::Tensor;
      out.push_back(std::move(v));
    };
    std::string base = functional.name.name;
    // An op declared in its out= form (`arange.start_out`) gets libtorch's `arange_out(out, ...)`.
    const std::string& overload = functional.name.overload;
    const bool out_form = overload == "out" || (overload.size() > 4 && overload.ends_with("_out"));
    add(functional, out_form ? base + "_out" : base, out_form);
    if (def.output != OutputRule::None) {
      if (ops::has_inplace_variant(functional, def.output, def.tags)) {
        add(ops::inplace_schema(functional), base + "_", false);
      }
      add(ops::out_schema(functional), base + "_out", true);
    }
  }
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) fail("opgen", "cannot write '", path, "'");
  f << text;
}

int run(int argc, char** argv) {
  std::string ops_path, methods_path, sdk_path, sources_dir, families;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--ops")
      ops_path = argv[i + 1];
    else if (flag == "--methods")
      methods_path = argv[i + 1];
    else if (flag == "--sdk")
      sdk_path = argv[i + 1];
    else if (flag == "--sources")
      sources_dir = argv[i + 1];
    else if (flag == "--families")
      families = argv[i + 1];
    else
      fail("opgen", "unknown flag '", flag,
           "' (expected --ops, --sources, --families, --methods, --sdk)");
  }
  std::vector<Variant> variants = all_variants();
  const char* banner = "// Generated by ops/opgen from ops/ops.def. Do not edit.\n";

  if (!methods_path.empty()) {
    std::ostringstream m;
    m << banner;
    for (const Variant& v : variants) {
      if (!v.is_method) continue;
      m << cpp_return(v.schema) << " " << v.cpp_name << "(" << params(v, true, 1) << ") const;\n";
    }
    write_file(methods_path, m.str());
  }
  if (!ops_path.empty()) {
    std::ostringstream o;
    o << banner
      << "// Declarations only: the definitions are compiled into libloom_ops (Note [The typed\n"
         "// op API is out of line] in ops/opgen/opgen.cc).\n"
         "#pragma once\n\n#include <optional>\n#include <string>\n#include <tuple>\n"
         "#include <vector>\n\n#include \"loom/ops/tensor.h\"\n\nnamespace loom {\n\n";
    for (const Variant& v : variants) {
      o << "// " << v.schema.to_string() << "\n";
      o << cpp_return(v.schema) << " " << v.cpp_name << "(" << params(v, true, 0) << ");\n\n";
    }
    o << "}  // namespace loom\n";
    write_file(ops_path, o.str());
  }
  if (!sources_dir.empty()) {
    std::map<std::string, std::ostringstream> files;  // family -> its definitions
    for (const Variant& v : variants) {
      std::ostringstream& o = files[v.family];
      o << "// " << v.schema.to_string() << "\n";
      o << cpp_return(v.schema) << " " << v.cpp_name << "(" << params(v, false, 0) << ") {\n"
        << call_body(v, "") << "}\n\n";
      if (!v.is_method) continue;
      o << cpp_return(v.schema) << " Tensor::" << v.cpp_name << "(" << params(v, false, 1)
        << ") const {\n"
        << call_body(v, "*this") << "}\n\n";
    }
    // Every family CMake expects a file of (`--families a,b`), and every family with ops.
    for (absl::string_view name : absl::StrSplit(families, ',', absl::SkipEmpty())) {
      files[std::string(name)];
    }
    for (const auto& [family, definitions] : files) {
      write_file(sources_dir + "/" + family + ".cc",
                 std::string(banner) + "// The typed functions of the " + family +
                     " family (ops/schemas/" + family + ".def).\n" +
                     "#include \"loom/ops/generated/ops.h\"\n#include \"loom/ops/op_call.h\"\n\n" +
                     "namespace loom {\n\n" + definitions.str() + "}  // namespace loom\n");
    }
  }
  if (!sdk_path.empty()) {
    std::ostringstream o;
    o << banner << "// Included by loom/sdk/ops.hpp, which defines what these functions use.\n"
      << "#pragma once\n\nnamespace loom::sdk::op {\n\n";
    for (const Variant& v : variants) {
      o << "// " << v.schema.to_string() << "\n";
      o << "inline " << cpp_return(v.schema) << " " << v.cpp_name << "("
        << params(v, true, 0, sdk_type) << ") {\n"
        << sdk_call_body(v) << "}\n\n";
    }
    o << "}  // namespace loom::sdk::op\n";
    write_file(sdk_path, o.str());
  }
  return 0;
}

}  // namespace
}  // namespace loom::opgen

int main(int argc, char** argv) {
  try {
    return loom::opgen::run(argc, argv);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
