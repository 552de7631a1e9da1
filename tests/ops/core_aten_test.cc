// loom's op set against PyTorch's Core ATen IR (tests/ops/core_aten_ir.txt, the schemas
// native_functions.yaml tags `core`): each is defined as loom::<name>.<overload> with
// the same arguments (names, types, defaults, keyword-only marks) and returns, except
// the differences listed here with their reasons and the ops not written yet, a list
// this test keeps honest (an op on it that loom defines fails the test).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/function_schema.h"
#include "loom/loom.h"

namespace loom {
namespace {

using dispatch::Argument;
using dispatch::FunctionSchema;
using dispatch::SchemaType;

// Ops whose schema differs from PyTorch's on purpose.
const std::map<std::string, std::string>& kDifferences() {
  static const std::map<std::string, std::string> differences = {
      // Plugins built for SDK 1.0 call clone with one argument: its schema is frozen. A
      // graph's clone(memory_format=contiguous_format) runs as loom::contiguous
      // (Note [clone's memory format]).
      {"clone", "no memory_format argument (frozen by the plugin ABI)"},
      // dim has no default: with one, the typed call loom::any(x) would be ambiguous
      // between any(Tensor) and any.dims (C++ has no keyword arguments to tell them apart).
      {"any.dims", "dim has no default (int[1]? dim)"},
      // The schema grammar reads a ScalarType default as a number: PyTorch's dtype=long is
      // dtype=None here, which the op reads as int64.
      {"randperm", "dtype=None for dtype=long"},
  };
  return differences;
}

// Core ATen ops loom does not define yet (none: the list stays for the next PyTorch's).
const std::set<std::string>& kNotYet() {
  static const std::set<std::string> not_yet = {};
  return not_yet;
}

struct CoreOp {
  std::string name;    // "add.Tensor"
  std::string schema;  // PyTorch's text
};

std::vector<CoreOp> core_ops() {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/tests/ops/core_aten_ir.txt");
  EXPECT_TRUE(in.good()) << "tests/ops/core_aten_ir.txt is missing";
  std::vector<CoreOp> ops;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ops.push_back(CoreOp{line.substr(0, line.find('(')), line});
  }
  return ops;
}

// A default as a list when the type is a list: PyTorch writes `int[2] padding=0` for
// [0, 0].
dispatch::DefaultValue normalized_default(const Argument& a) {
  const dispatch::DefaultValue& d = *a.default_value;
  const SchemaType& t = a.type.kind == SchemaType::Kind::Optional ? *a.type.elem : a.type;
  if (t.kind == SchemaType::Kind::List && std::holds_alternative<int64_t>(d)) {
    return std::vector<int64_t>(t.fixed_size.value_or(1), std::get<int64_t>(d));
  }
  return d;
}

// What differs between PyTorch's argument (or return) and loom's, or empty.
std::string compare(const Argument& torch, const Argument& ours) {
  if (torch.name != ours.name) return "name " + torch.name + " vs " + ours.name;
  if (!(torch.type == ours.type)) {
    return torch.name + ": type " + torch.type.to_string() + " vs " + ours.type.to_string();
  }
  if (torch.kwarg_only != ours.kwarg_only) return torch.name + ": keyword-only differs";
  if (torch.default_value.has_value() != ours.default_value.has_value()) {
    return torch.name + ": default " + (torch.default_value ? "given" : "none") + " vs " +
           (ours.default_value ? "given" : "none");
  }
  if (torch.default_value && normalized_default(torch) != normalized_default(ours)) {
    return torch.name + ": default " + dispatch::default_value_to_string(*torch.default_value) +
           " vs " + dispatch::default_value_to_string(*ours.default_value);
  }
  return "";
}

TEST(CoreAtenIr, LoomDefinesEveryOpWithPyTorchsSchema) {
  Runtime::load_default();
  std::vector<CoreOp> ops = core_ops();
  ASSERT_GT(ops.size(), 180u);
  dispatch::Dispatcher& d = dispatch::Dispatcher::instance();
  int matched = 0;
  for (const CoreOp& op : ops) {
    std::optional<dispatch::OperatorHandle> h = d.find("loom::" + op.name);
    const bool defined = h && h->is_defined();
    if (kNotYet().contains(op.name)) {
      EXPECT_FALSE(defined) << "loom::" << op.name << " is defined now: take it off kNotYet";
      continue;
    }
    if (!defined) {
      ADD_FAILURE() << "loom does not define loom::" << op.name << " (" << op.schema << ")";
      continue;
    }
    if (kDifferences().contains(op.name)) continue;
    FunctionSchema ours = h->schema();
    FunctionSchema torch;
    try {
      torch = dispatch::parse_schema("loom::" + op.schema);
    } catch (const Error& e) {
      ADD_FAILURE() << "PyTorch's schema of " << op.name << " does not parse: " << e.what();
      continue;
    }
    std::string why;
    if (torch.arguments.size() != ours.arguments.size()) {
      why = "argument count " + std::to_string(torch.arguments.size()) + " vs " +
            std::to_string(ours.arguments.size());
    }
    for (size_t i = 0; why.empty() && i < torch.arguments.size(); ++i) {
      why = compare(torch.arguments[i], ours.arguments[i]);
    }
    if (why.empty() && torch.returns.size() != ours.returns.size()) why = "return count";
    for (size_t i = 0; why.empty() && i < torch.returns.size(); ++i) {
      if (!(torch.returns[i].type == ours.returns[i].type)) {
        why = "return " + torch.returns[i].type.to_string() + " vs " +
              ours.returns[i].type.to_string();
      }
    }
    EXPECT_EQ(why, "") << op.name << "\n  PyTorch: " << op.schema
                       << "\n  loom:    " << ours.to_string();
    matched += why.empty();
  }
  std::printf(
      "Core ATen IR: %d of %zu schemas match PyTorch's, %zu differ on purpose, %zu not yet\n",
      matched, ops.size(), kDifferences().size(), kNotYet().size());
}

}  // namespace
}  // namespace loom
