// The `loom` CLI's subcommands: printing plugins, schemas and dispatch tables, and the
// smoke computation of the main job.
#include "commands.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/loom.h"
#include "loom/ops/op_library.h"
#include "loom/ops/samples.h"
#include "loom/ops/structured_schemas.h"

namespace loom::cli {

using dispatch::Dispatcher;
using dispatch::OperatorHandle;

int list_plugins() {
  std::vector<dispatch::PluginInfo> plugins = dispatch::PluginHost::instance().plugins();
  std::printf("%-16s %-9s %-5s %-18s %5s %8s %10s  %s\n", "plugin", "version", "abi", "devices",
              "ops", "kernels", "fallbacks", "file");
  for (const auto& p : plugins) {
    std::vector<std::string> device_list;
    for (size_t i = 0; i < p.device_types.size(); ++i) {
      int32_t n = i < p.device_counts.size() ? p.device_counts[i] : -1;
      device_list.push_back(n < 0 ? p.device_types[i]
                                  : p.device_types[i] + " x" + std::to_string(n));
    }
    std::string devices = device_list.empty() ? "-" : absl::StrJoin(device_list, ",");
    std::printf("%-16s %-9s %u.%-3u %-18s %5d %8d %10d  %s\n", p.name.c_str(), p.version.c_str(),
                p.abi_major, p.abi_minor, devices.c_str(), p.ops_defined, p.kernels, p.fallbacks,
                p.file.c_str());
    for (const auto& [key, value] : p.attributes) {
      std::printf("    %s = %s\n", key.c_str(), value.c_str());
    }
  }
  std::printf("%zu plugin(s) loaded; %zu operator(s) defined\n", plugins.size(),
              Dispatcher::instance().defined_operators().size());
  return 0;
}

int list_ops(const std::string& namespace_filter) {
  int shown = 0;
  for (const OperatorHandle& op : Dispatcher::instance().defined_operators()) {
    dispatch::FunctionSchema schema = op.schema();
    if (!namespace_filter.empty() && schema.name.ns != namespace_filter) continue;
    std::printf("%s\n", schema.to_string().c_str());
    ++shown;
  }
  if (shown == 0 && !namespace_filter.empty()) {
    std::fprintf(stderr, "[loom] no operators in namespace '%s'\n", namespace_filter.c_str());
    return 1;
  }
  return 0;
}

namespace {

std::string_view rule_name(OutputRule rule) {
  switch (rule) {
    case OutputRule::None:
      return "-";
    case OutputRule::Promoted:
      return "promoted";
    case OutputRule::PromotedFloat:
      return "promoted, float";
    case OutputRule::Bool:
      return "bool";
    case OutputRule::Shaped:
      return "shape rule";
  }
  return "?";
}

// A markdown cell: `|` would end the cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

// Note [The op table]
// ~~~~~~~~~~~~~~~~~~~
// `loom ops --format markdown` describes each op of the standard library (ops.def) as the
// running process sees it: the family and rule ops.def gives it, the variants the op
// library derives, which loaded backend has a kernel of its own for it (for a structured
// op, for its out= variant, the one backends implement), whether the op library computes
// it as a decomposition, whether the autograd plugin records it, and how many samples the
// op sweep and `loom conform` run. docs/ops.md is this table for the in-tree plugins
// (cpu, cuda and rocm, the GPU plugins loaded without a device), so every column comes
// from the registrations themselves and the ops_doc_up_to_date test keeps it true.
int ops_table() {
  Dispatcher& d = Dispatcher::instance();
  // The backends: each plugin, in load order, with the backend keys it has kernels for.
  std::vector<std::pair<std::string, std::string>> backends;  // plugin, dispatch key name
  {
    std::set<std::pair<std::string, std::string>> found;
    for (const OperatorHandle& op : d.defined_operators()) {
      for (const dispatch::TableRow& row : d.dump_table(op)) {
        if (row.source == dispatch::EntrySource::Kernel && is_backend_key(row.key) &&
            row.provider != "core") {
          found.emplace(row.provider, dispatch_key_name(row.key));
        }
      }
    }
    for (const dispatch::PluginInfo& p : dispatch::PluginHost::instance().plugins()) {
      for (const auto& [plugin, key] : found) {
        if (plugin == p.name) backends.emplace_back(plugin, key);
      }
    }
  }
  absl::flat_hash_map<std::string, int> samples;
  for (const ops::OpSample& s : ops::all_samples()) ++samples[s.op];
  absl::flat_hash_map<std::string, bool> recorded;  // op name -> differentiable
  if (autograd::is_available()) {
    for (const autograd::RecordedOp& op : autograd::recorded_ops()) {
      recorded[op.op] = op.differentiable;
    }
  }

  std::printf(
      "# The loom op set\n\n"
      "One row per op of the standard library (`ops/ops.def`, one file per family under\n"
      "`ops/schemas/`), as `loom ops --format markdown` prints it for the plugins it loaded;\n"
      "this page is its output for the in-tree plugins (`cmake --build build --target "
      "ops_doc`\n"
      "refreshes it, the `ops_doc_up_to_date` test fails when it is stale).\n\n"
      "- rule: how the op library computes a structured op's output (Note [Structured ops]);\n"
      "  backends implement its `out=` variant, listed under variants.\n"
      "- decomposition: the op library computes it from other ops (Note [Decompositions]).\n"
      "- one column per backend: `yes` when that plugin registers a kernel of its own.\n"
      "- backward: `formula` when the autograd plugin records the op with a backward\n"
      "  formula, `not differentiable` when it marks the op's outputs as such (backward\n"
      "  through them fails naming the op), `decomposes` when autograd records the ops of\n"
      "  its decomposition.\n"
      "- samples: the inputs the op sweep and `loom conform` run it on (ops/samples/).\n\n");
  std::string header = "| op | family | rule | variants | decomposition |";
  std::string rule_line = "|---|---|---|---|---|";
  for (const auto& backend : backends) {
    header += " " + backend.first + " |";
    rule_line += ":-:|";
  }
  std::printf("%s backward | samples |\n%s:-:|--:|\n", header.c_str(), rule_line.c_str());
  size_t rows = 0;
  for (const OpDefinition& def : standard_ops()) {
    const dispatch::FunctionSchema functional = dispatch::parse_schema(def.schema);
    const std::string name = functional.name.qualified();
    std::vector<std::string> variants;
    std::vector<std::string> kernel_ops = {name};  // where a backend's kernel would be
    if (def.output != OutputRule::None) {
      if (ops::has_inplace_variant(functional, def.output, def.tags)) {
        variants.push_back(ops::inplace_schema(functional).name.qualified());
      }
      const std::string out = ops::out_schema(functional).name.qualified();
      variants.push_back(out);
      kernel_ops = {out};
    }
    auto source_of = [&](const std::string& op, std::string_view key,
                         std::string* provider) -> std::optional<dispatch::EntrySource> {
      std::optional<OperatorHandle> handle = d.find(op);
      if (!handle) return std::nullopt;
      for (const dispatch::TableRow& row : d.dump_table(*handle)) {
        if (dispatch_key_name(row.key) != key) continue;
        if (provider != nullptr) *provider = row.provider;
        return row.source;
      }
      return std::nullopt;
    };
    const bool decomposition =
        source_of(name, "CPU", nullptr) == dispatch::EntrySource::Decomposition;
    std::string line = "| `" + cell(def.schema) + "` | " + std::string(def.family) + " | " +
                       std::string(rule_name(def.output)) + " | " +
                       (variants.empty() ? "-" : cell(absl::StrJoin(variants, ", "))) + " | " +
                       (decomposition ? "yes" : "") + " |";
    for (const auto& [plugin, key] : backends) {
      bool has = false;
      for (const std::string& op : kernel_ops) {
        std::string provider;
        has = has || (source_of(op, key, &provider) == dispatch::EntrySource::Kernel &&
                      provider == plugin);
      }
      line += has ? " yes |" : " |";
    }
    const std::optional<dispatch::EntrySource> autograd = source_of(name, "Autograd", nullptr);
    const auto formula = recorded.find(name);
    const char* backward = "";
    if (autograd == dispatch::EntrySource::Kernel && formula != recorded.end()) {
      backward = formula->second ? "formula" : "not differentiable";
    } else if (autograd == dispatch::EntrySource::Decomposition) {
      backward = "decomposes";
    }
    auto it = samples.find(name);
    std::printf("%s %s | %d |\n", line.c_str(), backward, it == samples.end() ? 0 : it->second);
    ++rows;
  }
  std::printf("\n%zu ops.\n", rows);
  return 0;
}

int show_dispatch(const std::string& op_name) {
  Dispatcher& d = Dispatcher::instance();
  OperatorHandle op = d.find_defined(op_name);
  std::printf("%s\n  defined by: %s\n", op.schema().to_string().c_str(), d.defined_by(op).c_str());
  std::printf("  %-18s %-20s %-14s %-28s %s\n", "key", "source", "plugin", "kernel", "dtypes");
  for (const dispatch::TableRow& row : d.dump_table(op)) {
    std::string source(dispatch::entry_source_name(row.source));
    std::string dtypes;  // the kernel's claim (Note [Dtype claims]); "-": any
    for (int t = 0; t < kNumScalarTypes; ++t) {
      if ((row.dtype_claim >> t) & 1) {
        if (!dtypes.empty()) dtypes += ",";
        dtypes += scalar_type_name(static_cast<ScalarType>(t));
      }
    }
    std::printf("  %-18s %-20s %-14s %-28s %s\n", dispatch_key_name(row.key).c_str(),
                source.c_str(), row.provider.empty() ? "-" : row.provider.c_str(),
                row.debug.empty() ? "-" : row.debug.c_str(), dtypes.empty() ? "-" : dtypes.c_str());
  }
  return 0;
}

namespace {

Tensor cpu_vector(std::initializer_list<float> values) {
  int64_t n = static_cast<int64_t>(values.size());
  Tensor t = empty(IntArrayRef(&n, 1), ScalarType::Float32);
  float* p = t.data<float>();
  for (float v : values) *p++ = v;
  return t;
}

}  // namespace

// a + 2 * b through loom::add.Tensor, then loom::sum, on whatever plugin serves CPU.
int run_smoke() {
  Dispatcher& d = Dispatcher::instance();
  Tensor a = cpu_vector({1, 2, 3});
  Tensor b = cpu_vector({10, 20, 30});
  LoomValue add_args[] = {dispatch::box(a), dispatch::box(b), dispatch::box(int64_t{2})};
  LoomValue add_ret[1];
  d.call(d.find_defined("loom::add.Tensor"), add_args, 3, add_ret, 1);
  Tensor c = dispatch::unbox_tensor(add_ret[0], "smoke");
  LoomValue sum_args[] = {dispatch::box(c), dispatch::none()};
  LoomValue sum_ret[1];
  d.call(d.find_defined("loom::sum"), sum_args, 2, sum_ret, 1);
  Tensor total = dispatch::unbox_tensor(sum_ret[0], "smoke");
  const float* cv = c.data<float>();
  std::printf("a + 2*b = [%g, %g, %g]; sum = %g\n", cv[0], cv[1], cv[2], *total.data<float>());
  bool ok = cv[0] == 21 && cv[1] == 42 && cv[2] == 63 && *total.data<float>() == 126;
  std::printf("smoke: %s\n", ok ? "ok" : "WRONG RESULT (expected [21, 42, 63] and 126)");
  return ok ? 0 : 1;
}

}  // namespace loom::cli
