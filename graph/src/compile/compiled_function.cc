// loom::compile's runtime: specialisations with their guards, recompiles, automatic
// dynamic shapes, the eager fallback and the report (loom/compile.h).
//
// Note [The compile pipeline]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A call that no specialisation's guards accept is captured: the function runs once with
// the compiler plugin recording its op calls (so that call's results are the function's
// own), and the records become a graph (Note [From op calls to a graph]). Dead code and
// common subexpressions are removed and constants folded (loom/graph_passes.h); with the
// "loom" backend, activations join the convolutions and matrix products before them (Note
// [Fused epilogues]) and runs of pointwise ops become fused kernels (Note [Pointwise fusion]),
// in the forward and the backward graph of a call that records gradients (Note
// [Compiling training]; there relu's gradient mask moves before max pooling's gradient
// first, Note [Masks before max-pool gradients]). The graph runs on the
// interpreter (Note [Prepared calls]) with the call's tensors and the tensors the
// function holds. Each specialisation keeps its guards (guards.h); a call that fails
// them all compiles again, up to recompile_limit times per function, after which the
// function runs eagerly for good with one warning. A failure in sizes alone makes those
// dimensions symbolic (Note [Automatic dynamic shapes]). LOOM_LOGS=recompiles prints each
// recompile with its reason; LOOM_COMPILE_DEBUG=DIR writes each graph before and after
// the passes and each kernel's program and source.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "compile_internal.h"
#include "dynamic_shapes.h"
#include "guards.h"
#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/graph_interpreter.h"
#include "loom/graph_passes.h"
#include "loom/tensor_io.h"

namespace loom::compiler {
namespace {

using detail::Captured;
using detail::DynamicDims;
using detail::Guards;

bool log_recompiles() {
  const char* logs = std::getenv("LOOM_LOGS");
  return logs != nullptr && std::string_view(logs).find("recompiles") != std::string_view::npos;
}

std::string debug_dir() {
  const char* dir = std::getenv("LOOM_COMPILE_DEBUG");
  return dir != nullptr ? dir : "";
}

void write_debug(const std::string& dir, const std::string& name, const std::string& text) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream(dir + "/" + name) << text;
}

bool any_requires_grad(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (const Tensor& t : a) {
    if (t.defined() && t.requires_grad()) return true;
  }
  for (const Tensor& t : b) {
    if (t.requires_grad()) return true;
  }
  return false;
}

std::vector<std::vector<int64_t>> sizes_of(const std::vector<Tensor>& tensors) {
  std::vector<std::vector<int64_t>> out;
  for (const Tensor& t : tensors) out.emplace_back(t.sizes().begin(), t.sizes().end());
  return out;
}

}  // namespace

// One specialisation: a graph with its guards.
struct Entry {
  Entry(Captured c, Guards g) : captured(std::move(c)), guards(std::move(g)) {}
  Captured captured;
  graph::Graph raw;  // the captured graph before the passes (Note [Automatic dynamic shapes])
  Guards guards;
  std::vector<std::vector<int64_t>> sizes;  // the call's tensors' sizes when captured
  std::unique_ptr<graph::Interpreter> interpreter;
  std::vector<graph::FusedKernel> kernels;
  std::shared_ptr<detail::BackwardGraph> backward;  // training (Note [Compiling training])
  std::string backward_note;                        // why there is none, when it was tried
};

struct CompiledFunction::State {
  CompileOptions options;
  std::string name;
  std::unordered_map<const void*, std::string> state_names;
  std::mutex mutex;
  std::vector<std::unique_ptr<Entry>> entries;  // newest last
  DynamicDims dynamic;
  int compiles = 0;
  bool eager = false;
  std::string eager_reason;
  std::vector<std::string> recompiles;

  std::vector<Tensor> compile(const std::vector<Tensor>& tensors,
                              const std::vector<double>& numbers, uint64_t flags,
                              const Eager& eager_fn, const std::string& reason);
  std::vector<Tensor> go_eager(const std::string& why, const Eager& eager_fn) {
    eager = true;
    eager_reason = why;
    std::fprintf(stderr, "[compile] %s: %s; running it eagerly from now on\n", name.c_str(),
                 why.c_str());
    return eager_fn();
  }
};

CompiledFunction::CompiledFunction(CompileOptions options, std::string name,
                                   std::vector<std::pair<std::string, Tensor>> state)
    : state_(std::make_unique<State>()) {
  static const char* kModes[] = {"default", "reduce-overhead", "max-autotune",
                                 "max-autotune-no-cudagraphs"};
  bool mode_known = false;
  for (const char* m : kModes) mode_known = mode_known || options.mode == m;
  LOOM_CHECK(mode_known, std::string(detail::kComponent), "unknown mode '", options.mode,
             "' (expected default, reduce-overhead, max-autotune or max-autotune-no-cudagraphs)");
  LOOM_CHECK(options.backend == "loom" || options.backend == "eager",
             std::string(detail::kComponent), "unknown backend '", options.backend,
             "' (expected loom or eager)");
  LOOM_CHECK(options.recompile_limit >= 1, std::string(detail::kComponent),
             "recompile_limit must be at least 1, found ", options.recompile_limit);
  LOOM_CHECK(options.min_fused_ops >= 1, std::string(detail::kComponent),
             "min_fused_ops must be at least 1, found ", options.min_fused_ops);
  state_->options = std::move(options);
  state_->name = std::move(name);
  for (auto& [key, t] : state) state_->state_names.emplace(t.impl(), key);
}

CompiledFunction::~CompiledFunction() = default;

const CompileOptions& CompiledFunction::options() const {
  return state_->options;
}

std::vector<Tensor> CompiledFunction::State::compile(const std::vector<Tensor>& tensors,
                                                     const std::vector<double>& numbers,
                                                     uint64_t flags, const Eager& eager_fn,
                                                     const std::string& reason) {
  if (compiles >= options.recompile_limit) {
    return go_eager(str_cat("the recompile limit (", options.recompile_limit,
                            ") is reached; the last reason: ", reason),
                    eager_fn);
  }
  if (compiles > 0) {
    recompiles.push_back(reason);
    if (log_recompiles())
      std::fprintf(stderr, "[compile] recompiling %s: %s\n", name.c_str(), reason.c_str());
  }
  ++compiles;
  const bool grad_mode = autograd::is_enabled();
  const std::string autocast = detail::autocast_state(tensors);
  std::vector<Tensor> outputs;
  Captured captured = detail::capture(tensors, eager_fn, state_names, &outputs);
  if (options.fullgraph && !captured.breaks.empty()) {
    const GraphBreak& b = captured.breaks.front();
    fail(std::string(detail::kComponent), name, ": fullgraph=true, but ", b.op,
         " cannot be captured in one graph: ", b.reason);
  }
  if (!captured.unsupported.empty()) {
    eager = true;
    eager_reason = captured.unsupported;
    std::fprintf(stderr, "[compile] %s: %s; running it eagerly from now on\n", name.c_str(),
                 captured.unsupported.c_str());
    return outputs;
  }
  Device device{};
  for (const Tensor& t : tensors) {
    if (t.device() != tensors.front().device() && !(t.dim() == 0 && t.device().type == kCPU)) {
      eager = true;
      eager_reason = "its tensors are on more than one device";
      return outputs;
    }
  }
  if (!tensors.empty()) {
    device = tensors.front().device();
  } else if (!captured.constants.empty()) {
    device = captured.constants.front().device();
  }
  // automatic dynamic shapes: generalise against the newest capture of the same structure
  if (!dynamic.empty() && !entries.empty()) {
    Captured trial = captured;
    std::string why = detail::generalise(entries.back()->raw, trial, dynamic, entries.back()->sizes,
                                         sizes_of(tensors));
    if (why.empty()) {
      captured = std::move(trial);
    } else {
      if (log_recompiles())
        std::fprintf(stderr, "[compile] %s: sizes stay specialised: %s\n", name.c_str(),
                     why.c_str());
      dynamic.clear();
    }
  }
  auto entry = std::make_unique<Entry>(
      std::move(captured), Guards(tensors, numbers, flags, grad_mode, autocast, {}, dynamic));
  Captured& c = entry->captured;
  entry->sizes = sizes_of(tensors);
  entry->raw = c.graph;
  const std::string debug = debug_dir();
  const std::string stem = str_cat(name, "_", compiles);
  write_debug(debug, stem + ".captured.graph", c.graph.to_text());
  // training: the backward graph too (Note [Compiling training])
  const bool records = grad_mode && any_requires_grad(tensors, c.constants);
  if (records) {
    std::vector<Tensor> graph_inputs = tensors;
    graph_inputs.insert(graph_inputs.end(), c.constants.begin(), c.constants.end());
    entry->backward =
        detail::capture_backward(c, graph_inputs, outputs, state_names, &entry->backward_note);
  }
  // a training graph stays specialised: its backward's sizes are not generalised
  entry->guards = Guards(tensors, numbers, flags, grad_mode, autocast, c.constants,
                         entry->backward ? DynamicDims{} : dynamic);
  if (entry->backward) dynamic.clear();
  auto optimise = [&](Captured& g, const std::string& suffix) {
    graph::eliminate_common_subexpressions(g.graph);
    graph::eliminate_dead_code(g.graph);
    g.folded = graph::fold_constants(g.graph, device);
    std::vector<graph::FusedKernel> made;
    if (options.backend == "loom" && (!records || entry->backward)) {
      graph::FusionOptions fo;
      fo.debug_dir = debug;
      fo.min_nodes = options.min_fused_ops;
      fo.shares_memory = [&g](graph::ValueId a, graph::ValueId b) {
        const std::vector<Tensor>& t = g.value_tensors;
        if (std::max(a, b) >= static_cast<graph::ValueId>(t.size())) return false;
        return t[a].defined() && t[b].defined() && t[a].is_alias_of(t[b]);
      };
      graph::fuse_epilogues(g.graph);
      made = graph::fuse_pointwise(g.graph, g.contiguous, fo);
    }
    write_debug(debug, stem + suffix + ".graph", g.graph.to_text());
    g.value_tensors.clear();  // the capture's tensors are not needed any more
    return made;
  };
  if (entry->backward) {
    detail::BackwardGraph& b = *entry->backward;
    write_debug(debug, stem + ".backward.captured.graph", b.captured.graph.to_text());
    if (options.backend == "loom") detail::mask_before_pool_gradients(c, b);
    std::vector<graph::FusedKernel> made = optimise(b.captured, ".backward");
    entry->kernels.insert(entry->kernels.end(), made.begin(), made.end());
    b.interpreter = std::make_unique<graph::Interpreter>(b.captured.graph, device);
  }
  std::vector<graph::FusedKernel> made = optimise(c, "");
  entry->kernels.insert(entry->kernels.begin(), made.begin(), made.end());
  entry->interpreter = std::make_unique<graph::Interpreter>(c.graph, device);
  entries.push_back(std::move(entry));
  return outputs;
}

std::vector<Tensor> CompiledFunction::run(const std::vector<Tensor>& tensors,
                                          const std::vector<double>& numbers, const Eager& eager,
                                          uint64_t flags) {
  // called while another compiled function captures this thread: run the ops, so that
  // the outer capture records them (captures do not nest)
  if ((dispatch::local_dispatch_key_set().included & DispatchKeySet(DispatchKey::Tracer).raw()) !=
      0) {
    return eager();
  }
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.eager) return eager();
  const bool grad_mode = autograd::is_enabled();
  const std::string autocast = detail::autocast_state(tensors);
  std::string reason = "the first call";
  for (auto it = s.entries.rbegin(); it != s.entries.rend(); ++it) {
    Entry& e = **it;
    detail::GuardFailure f =
        e.guards.check(tensors, numbers, flags, grad_mode, autocast, e.captured.constants);
    if (!f.holds()) {
      if (it == s.entries.rbegin()) {
        reason = f.reason;
        if (s.options.dynamic != false && !f.sizes_only.empty()) {
          for (auto d : f.sizes_only) s.dynamic.insert(d);
        }
      }
      continue;
    }
    std::vector<Tensor> inputs = tensors;
    inputs.insert(inputs.end(), e.captured.constants.begin(), e.captured.constants.end());
    inputs.insert(inputs.end(), e.captured.folded.begin(), e.captured.folded.end());
    if (e.backward) {
      std::string mismatch;
      std::vector<Tensor> out =
          detail::run_joint(*e.interpreter, e.captured, e.backward, inputs, &mismatch);
      if (mismatch.empty()) return out;
      reason = mismatch;
      break;
    }
    std::vector<Tensor> out = (*e.interpreter)(inputs);
    // host reads (Note [Graph breaks]): the values the function saw must be the same
    bool same = true;
    for (size_t i = 0; i < e.captured.host_reads.size(); ++i) {
      const double now = out[e.captured.function_outputs + i].item<double>();
      if (now != e.captured.host_reads[i]) {
        same = false;
        reason = str_cat("a value read on the host (item()) is ", now, ", captured as ",
                         e.captured.host_reads[i]);
        break;
      }
    }
    if (!same) break;
    out.resize(e.captured.function_outputs);
    return out;
  }
  if (s.options.dynamic == true && s.entries.empty()) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      for (int64_t d = 0; d < tensors[i].dim(); ++d)
        s.dynamic.emplace(static_cast<int>(i), static_cast<int>(d));
    }
  }
  return s.compile(tensors, numbers, flags, eager, reason);
}

graph::Graph CompiledFunction::captured_graph() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  LOOM_CHECK(!state_->entries.empty(), std::string(detail::kComponent), state_->name,
             ": nothing is captured yet (call it first)");
  return state_->entries.back()->raw;
}

std::vector<std::pair<std::string, Tensor>> CompiledFunction::captured_state() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  LOOM_CHECK(!state_->entries.empty(), std::string(detail::kComponent), state_->name,
             ": nothing is captured yet (call it first)");
  const Entry& e = *state_->entries.back();
  std::vector<std::pair<std::string, Tensor>> out;
  const std::vector<graph::GraphInput>& inputs = e.raw.inputs();
  const size_t first = inputs.size() - e.captured.constants.size();
  for (size_t i = 0; i < e.captured.constants.size(); ++i) {
    out.emplace_back(inputs[first + i].target, e.captured.constants[i]);
  }
  return out;
}

Explanation CompiledFunction::explanation() const {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  Explanation e;
  e.compiles = s.compiles;
  e.recompiles = s.recompiles;
  e.eager = s.eager;
  e.eager_reason = s.eager_reason;
  if (!s.entries.empty()) {
    const Entry& last = *s.entries.back();
    e.breaks = last.captured.breaks;
    e.graphs = static_cast<int>(e.breaks.size()) + 1;
    e.guards = last.guards.describe();
    e.ops = last.captured.ops;
    e.kernels = static_cast<int>(last.kernels.size());
    e.graph = last.captured.graph.to_text();
    if (last.backward) {
      e.backward_graph = last.backward->captured.graph.to_text();
    } else if (!last.backward_note.empty()) {
      e.backward_graph = "(none: " + last.backward_note + ")";
    }
  }
  return e;
}

std::string Explanation::to_string() const {
  std::string out = str_cat("compiles: ", compiles, "\ngraphs: ", graphs, "\nops captured: ", ops,
                            "\nfused kernels: ", kernels, "\ngraph breaks: ", breaks.size(), "\n");
  for (const GraphBreak& b : breaks) out += str_cat("  ", b.op, ": ", b.reason, "\n");
  out += "guards:\n";
  for (const std::string& g : guards) out += "  " + g + "\n";
  out += str_cat("recompiles: ", recompiles.size(), "\n");
  for (const std::string& r : recompiles) out += "  " + r + "\n";
  if (eager) out += "running eagerly: " + eager_reason + "\n";
  if (!graph.empty()) out += "graph:\n" + graph;
  if (!backward_graph.empty()) out += "backward graph:\n" + backward_graph + "\n";
  return out;
}

}  // namespace loom::compiler
