// `loom conform` (conform_command.h): options, the probe, the children, the reports.
#include "conform_command.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "absl/strings/str_split.h"
#include "expectations.h"
#include "loom/core/device.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/op_library.h"
#include "loom/ops/samples.h"
#include "loom/runtime.h"
#include "op_calls.h"
#include "op_checks.h"
#include "report_writers.h"
#include "worker_pool.h"

namespace loom::conform {
namespace {

struct LibraryOp {
  std::string name;
  bool structured;
};

Runtime load_runtime(const std::string& manifest) {
  return manifest.empty() ? Runtime::load_default() : Runtime::load_file(manifest);
}

// The Quantized key's target (Note [Conformance checks]): present once a loaded plugin
// registers a kernel at that key.
Target quantized_target() {
  dispatch::Dispatcher& d = dispatch::Dispatcher::instance();
  bool registered = false;
  for (const OpDefinition& def : standard_ops()) {
    const std::string name = op_name_of(def.schema);
    if (!is_defined(name)) continue;
    for (const dispatch::TableRow& row : d.dump_table(d.find_defined(name))) {
      registered = registered || (row.key == DispatchKey::Quantized &&
                                  row.source == dispatch::EntrySource::Kernel);
    }
    if (registered) break;
  }
  if (!registered) {
    throw Error("conform",
                "--backend quantized: no loaded plugin has kernels at the Quantized key "
                "(expected the quantization plugin, libloom_quantization, in the manifest)");
  }
  Target t;
  t.backend = "quantized";
  t.device = Device{kCPU, -1};
  t.key = DispatchKey::Quantized;
  t.quantized = true;
  return t;
}

// The backend's device and key, in a process whose runtime is loaded.
Target target_of(const std::string& backend) {
  if (backend == "meta") {
    throw Error("conform",
                "--backend: meta holds no values to check (the op sweep checks "
                "meta shapes); expected a device type with memory");
  }
  if (backend == "quantized") return quantized_target();
  const DeviceType type = DeviceTypeRegistry::instance().find(backend);
  if (type < 0) {
    std::string known;
    for (const dispatch::PluginInfo& p : dispatch::PluginHost::instance().plugins()) {
      for (const std::string& d : p.device_types) known += ", " + d;
    }
    throw Error("conform", str_cat("--backend: no device type '", backend,
                                   "' in the loaded plugins (expected cpu", known, ")"));
  }
  Target t;
  t.backend = backend;
  t.device = Device{type, 0};
  if (backend == "cpu") t.device = Device{kCPU, -1};
  t.key = DeviceTypeRegistry::instance().backend(type);
  t.gradients = autograd::is_available();
  return t;
}

std::set<std::string> parse_dtypes(const std::string& list) {
  std::set<std::string> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    const std::string name(absl::StripAsciiWhitespace(part));
    out.insert(name == "none" ? name : std::string(scalar_type_name(parse_scalar_type(name))));
  }
  return out;
}

// The ops matching --ops; for the quantized backend without --ops, the ops with quantized
// samples (the rest have nothing to check at that key).
std::vector<LibraryOp> selected_ops(const std::string& pattern, bool quantized) {
  std::set<std::string> with_quantized_samples;
  for (const ops::OpSample& s : ops::all_samples()) {
    if (ops::has_quantized_tensors(s)) with_quantized_samples.insert(s.op);
  }
  std::regex re;
  try {
    re = std::regex(pattern.empty() ? ".*" : pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error("conform", str_cat("--ops: expected a regular expression, found '", pattern, "' (",
                                   e.what(), ")"));
  }
  std::vector<LibraryOp> out;
  for (const OpDefinition& def : standard_ops()) {
    std::string name = op_name_of(def.schema);
    if (quantized && pattern.empty() && !with_quantized_samples.count(name)) continue;
    if (std::regex_match(name, re)) out.push_back({name, def.output != OutputRule::None});
  }
  if (out.empty()) {
    throw Error("conform", str_cat("--ops: '", pattern, "' matches no op of the library"));
  }
  return out;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error("conform", str_cat("cannot write '", path.string(), "'"));
}

// Runs the probe: a child that loads the manifest and checks the backend, so the parent
// never loads a plugin (Note [Conformance isolation]).
Report probe(const ConformOptions& options) {
  Report header;
  std::string error;
  run_in_children(
      1, {1, options.timeout_seconds},
      [&](size_t, const FrameWriter& w) {
        try {
          Runtime runtime = load_runtime(options.manifest);
          const Target t = target_of(options.backend);
          Report r;
          r.set_gradients_checked(t.gradients);
          for (const dispatch::PluginInfo& p : dispatch::PluginHost::instance().plugins()) {
            r.add_plugins(p.name + " " + p.version);
          }
          w.write('I', r.SerializeAsString());
        } catch (const std::exception& e) {
          w.write('E', e.what());
        }
        return 0;
      },
      [&](size_t, char kind, const std::string& bytes) {
        if (kind == 'I') header.ParseFromString(bytes);
        if (kind == 'E') error = bytes;
      },
      [&](size_t, const ChildEnd& end) {
        if (error.empty() && (end.signal != 0 || end.timed_out)) {
          error = end.timed_out ? "[conform] loading the manifest ran past the time limit"
                                : str_cat("[conform] loading the manifest crashed (signal ",
                                          strsignal(end.signal), ")");
        }
      });
  if (!error.empty()) {
    // The child's loom::Error, "[component] detail", raised again as it was.
    const size_t close = error.find("] ");
    if (error.starts_with("[") && close != std::string::npos) {
      throw Error(error.substr(1, close - 1), error.substr(close + 2));
    }
    throw Error("conform", error);
  }
  return header;
}

}  // namespace

int run_conform(const ConformOptions& options) {
  if (options.backend.empty())
    throw Error("conform", "expected --backend (a device type: cpu, ...)");
  if (options.jobs < 1) {
    throw Error("conform", str_cat("--jobs: expected at least 1, found ", options.jobs));
  }
  if (!(options.timeout_seconds > 0)) {
    throw Error("conform",
                str_cat("--timeout: expected seconds > 0, found ", options.timeout_seconds));
  }
  const std::vector<LibraryOp> ops = selected_ops(options.ops, options.backend == "quantized");
  const std::set<std::string> dtypes = parse_dtypes(options.dtypes);
  const std::vector<Expectation> expectations =
      options.xfail.empty() ? std::vector<Expectation>{}
                            : read_expectations(options.xfail, options.backend);
  const std::optional<Report> baseline = options.baseline.empty()
                                             ? std::nullopt
                                             : std::optional<Report>(read_report(options.baseline));
  if (!options.report_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.report_dir, ec);
    if (ec) {
      throw Error("conform",
                  str_cat("--report: cannot create '", options.report_dir, "': ", ec.message()));
    }
  }

  const auto started = std::chrono::steady_clock::now();
  Report report = probe(options);
  report.set_backend(options.backend);
  report.set_manifest(options.manifest);
  report.set_started(now_utc());
  report.set_jobs(options.jobs);

  // Per op: its results, coverage and the sample it announced last.
  struct OpState {
    std::vector<CheckResult> results;
    OpCoverage coverage;
    CheckResult progress;
  };
  std::vector<OpState> state(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) state[i].coverage.set_op(ops[i].name);
  size_t done = 0;
  const bool show_progress = isatty(STDERR_FILENO);
  run_in_children(
      ops.size(), {options.jobs, options.timeout_seconds},
      [&](size_t i, const FrameWriter& w) {
        // Quiet: a kernel's own output must not mix with the summary.
        if (std::FILE* null = std::freopen("/dev/null", "w", stdout); null == nullptr) return 3;
        try {
          Runtime runtime = load_runtime(options.manifest);
          const Target target = target_of(options.backend);
          OpCoverage coverage = check_op(
              {ops[i].name, ops[i].structured, dtypes}, target,
              [&](const CheckResult& r) { w.write('R', r.SerializeAsString()); },
              [&](const CheckResult& p) { w.write('P', p.SerializeAsString()); });
          w.write('C', coverage.SerializeAsString());
        } catch (const std::exception& e) {
          CheckResult r;
          r.set_op(ops[i].name);
          r.set_sample(-1);
          r.set_check("availability");
          r.set_status(ERROR);
          r.set_message(str_cat("the worker raised: ", e.what()));
          w.write('R', r.SerializeAsString());
        }
        return 0;
      },
      [&](size_t i, char kind, const std::string& bytes) {
        OpState& s = state[i];
        if (kind == 'R') s.results.emplace_back().ParseFromString(bytes);
        if (kind == 'P') s.progress.ParseFromString(bytes);
        if (kind == 'C') s.coverage.ParseFromString(bytes);
      },
      [&](size_t i, const ChildEnd& end) {
        OpState& s = state[i];
        s.coverage.set_seconds(end.seconds);
        if (end.timed_out || end.signal != 0 || end.exit_status != 0) {
          CheckResult r = s.progress;
          r.set_op(ops[i].name);
          if (s.progress.op().empty()) r.set_sample(-1);
          r.set_check(s.progress.check().empty() ? "availability" : s.progress.check());
          const std::string during = s.progress.op().empty()
                                         ? "before its first sample"
                                         : str_cat("during sample ", s.progress.sample(), " (",
                                                   s.progress.sample_text(), ")");
          if (end.timed_out) {
            r.set_status(TIMEOUT);
            r.set_message(str_cat("ran past the ", options.timeout_seconds, " s limit ", during));
          } else {
            r.set_status(CRASH);
            r.set_message(end.signal != 0 ? str_cat("killed by signal ", end.signal, " (",
                                                    strsignal(end.signal), ") ", during)
                                          : str_cat("the worker exited with status ",
                                                    end.exit_status, " ", during));
          }
          s.results.push_back(r);
        }
        if (show_progress) std::fprintf(stderr, "\r[conform] %zu/%zu ops", ++done, ops.size());
      });
  if (show_progress) std::fprintf(stderr, "\n");
  for (OpState& s : state) {
    *report.add_ops() = s.coverage;
    for (CheckResult& r : s.results) *report.add_results() = std::move(r);
  }
  apply_expectations(expectations, report);
  for (const CheckResult& r : report.results())
    ++(*report.mutable_counts())[status_name(r.status())];
  report.set_wall_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());

  if (!options.report_dir.empty()) {
    const std::filesystem::path dir(options.report_dir);
    write_file(dir / "report.json", to_json(report));
    write_file(dir / "coverage.md", to_markdown(report));
    write_file(dir / "report.html", to_html(report));
  }
  std::printf("loom conform: backend %s, %d ops, %d results in %.1f s (%d jobs)\n",
              options.backend.c_str(), report.ops_size(), report.results_size(),
              report.wall_seconds(), options.jobs);
  for (const char* status :
       {"pass", "fail", "error", "crash", "timeout", "missing", "skipped", "xfail", "xpass"}) {
    auto it = report.counts().find(status);
    if (it != report.counts().end()) std::printf("  %-8s %d\n", status, it->second);
  }
  int failures = 0;
  for (const CheckResult& r : report.results()) {
    if (!is_failure(r.status())) continue;
    if (++failures <= 20) {
      std::printf(
          "  %s %s %s sample %d %s: %s\n", status_name(r.status()).c_str(), r.op().c_str(),
          r.dtype().c_str(), r.sample(), r.check().c_str(),
          (r.worst_element().empty() ? r.message() : r.worst_element()).substr(0, 300).c_str());
    }
  }
  if (failures > 20) std::printf("  ... and %d more (see the report)\n", failures - 20);
  if (!options.report_dir.empty()) {
    std::printf("reports: %s/{report.json,coverage.md,report.html}\n", options.report_dir.c_str());
  }
  if (baseline) {
    const std::vector<std::string> regressed = regressions(*baseline, report);
    std::printf("baseline %s: %zu regressions\n", options.baseline.c_str(), regressed.size());
    for (const std::string& line : regressed) std::printf("  regression: %s\n", line.c_str());
    return regressed.empty() ? 0 : 1;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace loom::conform
