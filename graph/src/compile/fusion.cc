// Pointwise fusion (loom/graph_passes.h, Note [Pointwise fusion]): runs of fusible nodes
// become kernels the compiler plugin builds, in-place ops and dead inputs included (Note
// [In-place ops in fused kernels], Note [Buffer reuse]), and a plane sum of a pointwise
// result joins the op that makes it (Note [Plane reductions]).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compile_internal.h"
#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/graph_passes.h"
#include "pass_support.h"

namespace loom::graph {

using detail::for_each_read;
using detail::unique_value_name;

namespace {

// The compiler plugin's fusible ops: name -> dtype classes ("fib").
const std::unordered_map<std::string, std::string>& fusible_ops() {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::string> ops;
  std::lock_guard<std::mutex> lock(mutex);
  if (!ops.empty()) return ops;
  ReadSection section;
  compiler::detail::check(compiler::detail::plugin_table().visit_fusible_ops(
                              &ops,
                              [](void* ctx, const char* text) {
                                std::string entry = text;
                                size_t colon = entry.rfind(':');
                                (*static_cast<std::unordered_map<std::string, std::string>*>(
                                    ctx))[entry.substr(0, colon)] = entry.substr(colon + 1);
                              }),
                          "visit_fusible_ops");
  return ops;
}

char dtype_class(ScalarType t) {
  switch (t) {
    case ScalarType::Float32:
    case ScalarType::Float64:
      return 'f';
    case ScalarType::Bool:
      return 'b';
    case ScalarType::UInt8:
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64:
      return 'i';
    default:
      return 0;
  }
}

std::string program_constant(const Value& v) {
  if (v.is_none()) return "#none";
  if (v.is_bool()) return v.to_bool() ? "#true" : "#false";
  if (v.is_int()) return str_cat("#", v.to_int());
  if (v.is_double()) {
    double d = v.to_double();
    if (std::isnan(d)) return "#nan";
    if (std::isinf(d)) return d > 0 ? "#inf" : "#-inf";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "#%.17g", d);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  if (v.is_string()) return str_cat("\"", v.to_string(), "\"");
  return "";
}

// Whether a row op (Note [Row kernels] in plugins/compiler/cpp_codegen.cc) reduces the
// last dimension of its input only, with arguments a row kernel computes; `unread`
// says whether a value is read by nobody.
bool row_op_fits(const Graph& g, const Node& node, const std::function<bool(ValueId)>& unread) {
  const Argument& in = node.arguments.at(0);
  if (in.kind != Argument::Kind::Value) return false;
  const ValueInfo& x = g.value(in.value);
  if (!x.meta || x.meta->sizes.empty() ||
      (x.meta->dtype != ScalarType::Float32 && x.meta->dtype != ScalarType::Float64))
    return false;
  const int64_t last = static_cast<int64_t>(x.meta->sizes.size()) - 1;
  auto is_last = [&](const Value& v) {
    if (v.is_int()) return v.to_int() == -1 || v.to_int() == last;
    if (v.kind() != Value::Kind::IntList || v.to_int_list().size() != 1) return false;
    const int64_t d = v.to_int_list()[0];
    return d == -1 || d == last;
  };
  auto constant = [&](size_t i) -> const Value* {
    const Argument& a = node.arguments.at(i);
    return a.kind == Argument::Kind::Constant ? &a.constant : nullptr;
  };
  const std::string& op = node.op;
  if (op == "loom::softmax.int" || op == "loom::log_softmax.int") {
    return constant(1) && is_last(*constant(1)) && constant(2) && constant(2)->is_none();
  }
  if (op == "loom::_softmax" || op == "loom::_log_softmax") {
    return constant(1) && is_last(*constant(1)) && constant(2) && !constant(2)->to_bool();
  }
  if (op == "loom::native_layer_norm") {  // normalized_shape: the last size alone
    const SymSize& n = x.meta->sizes.back();
    return constant(1) && constant(1)->kind() == Value::Kind::IntList &&
           constant(1)->to_int_list().size() == 1 && !n.is_symbolic() &&
           constant(1)->to_int_list()[0] == n.value && node.outputs.size() == 3 &&
           unread(node.outputs[1]) && unread(node.outputs[2]);
  }
  if (op == "loom::sum.dim_IntList" || op == "loom::mean.dim") {
    return constant(1) && is_last(*constant(1)) && constant(3) && constant(3)->is_none();
  }
  return op == "loom::amax" && constant(1) && is_last(*constant(1));
}

const TensorMeta* pointwise_fusible(const Graph& g, const Node& node);

// A node that can join a fused run: the shape of the run it joins (a row op's input's,
// a pointwise op's output's) and whether it is a row op.
struct Candidate {
  const TensorMeta* shape = nullptr;
  bool row_op = false;
  bool flat_row = false;  // a row reduction without keepdim: nothing in the run may read it
};

std::optional<Candidate> fusible(const Graph& g, const Node& node,
                                 const std::function<bool(ValueId)>& unread) {
  if (node.outputs.empty() || node.outputs[0] == kNoValue || node.list_return) return std::nullopt;
  auto it = fusible_ops().find(node.op);
  if (it == fusible_ops().end()) return std::nullopt;
  if (it->second.find('r') != std::string::npos) {
    if (!row_op_fits(g, node, unread)) return std::nullopt;
    for (const Argument& a : node.arguments) {
      if (a.kind == Argument::Kind::List) return std::nullopt;
      if (a.kind == Argument::Kind::Value) {
        const ValueInfo& v = g.value(a.value);
        if (!v.meta || v.meta->device.type != kCPU || dtype_class(v.meta->dtype) != 'f')
          return std::nullopt;
      }
    }
    const ValueInfo& out = g.value(node.outputs[0]);
    if (!out.meta) return std::nullopt;
    const bool keepdim = node.arguments.size() > 2 && node.arguments[2].constant.is_bool() &&
                         node.arguments[2].constant.to_bool();
    const bool reduction = node.op == "loom::sum.dim_IntList" || node.op == "loom::mean.dim" ||
                           node.op == "loom::amax";
    return Candidate{&*g.value(node.arguments[0].value).meta, true, reduction && !keepdim};
  }
  if (node.outputs.size() != 1) return std::nullopt;
  const TensorMeta* shape = pointwise_fusible(g, node);
  if (shape == nullptr) return std::nullopt;
  return Candidate{shape, false, false};
}

// The `target` of a kernel on `device`'s tensors: "cpu", "cuda" or "hip" (a device type
// the CUDA or HIP backend serves; Note [Fused kernel programs]), or "" where kernels are
// not generated.
std::string kernel_target(const Device& device) {
  if (device.type == kCPU) return "cpu";
  const DispatchKey backend = DeviceTypeRegistry::instance().backend(device.type);
  if (backend == DispatchKey::CUDA) return "cuda";
  if (backend == DispatchKey::HIP) return "hip";
  return "";
}

// Whether pointwise `node` can join a fused run, and its output's metadata: every tensor
// it reads on the device of its output, where kernels are generated.
const TensorMeta* pointwise_fusible(const Graph& g, const Node& node) {
  auto it = fusible_ops().find(node.op);
  const ValueInfo& out = g.value(node.outputs[0]);
  if (!out.meta || kernel_target(out.meta->device).empty() || dtype_class(out.meta->dtype) == 0)
    return nullptr;
  for (const Argument& a : node.arguments) {
    if (a.kind == Argument::Kind::List) return nullptr;
    if (a.kind == Argument::Kind::Value) {
      const ValueInfo& v = g.value(a.value);
      if (v.type != ValueType::Tensor || !v.meta || v.meta->device != out.meta->device ||
          dtype_class(v.meta->dtype) == 0)
        return nullptr;
    } else if (program_constant(a.constant).empty()) {
      return nullptr;
    }
  }
  char cls = dtype_class(compiler::detail::compute_dtype(g, node));
  if (cls == 0 || it->second.find(cls) == std::string::npos) return nullptr;
  return &*out.meta;
}

int64_t static_numel(const TensorMeta& m) {
  int64_t n = 1;
  for (const SymSize& s : m.sizes) {
    if (s.is_symbolic()) return -1;
    n *= s.value;
  }
  return n;
}

// The functional form of an in-place pointwise op the plugin fuses ("loom::mul_.Tensor"
// -> "loom::mul.Tensor") when every tensor it reads has the written tensor's dtype (Note
// [In-place ops in fused kernels]), else "".
std::string functional_form(const Graph& g, const Node& node) {
  const std::string& op = node.op;
  const size_t dot = op.find('.');
  const std::string base = op.substr(0, dot);
  if (base.size() < 8 || base.back() != '_' || op.rfind("loom::", 0) != 0) return "";
  if (node.outputs.size() != 1 || node.outputs[0] == kNoValue || node.arguments.empty() ||
      node.arguments[0].kind != Argument::Kind::Value)
    return "";
  std::string functional = base.substr(0, base.size() - 1);
  if (dot != std::string::npos) functional += op.substr(dot);
  auto it = fusible_ops().find(functional);
  if (it == fusible_ops().end() || it->second.find('r') != std::string::npos) return "";
  const ValueInfo& self = g.value(node.arguments[0].value);
  if (!self.meta) return "";
  for (const Argument& a : node.arguments) {
    if (a.kind != Argument::Kind::Value) continue;
    const ValueInfo& v = g.value(a.value);
    if (!v.meta || v.meta->dtype != self.meta->dtype) return "";
  }
  return functional;
}

// The in-place ops that may join runs (Note [In-place ops in fused kernels]), given their
// functional form in `nodes`.
struct InPlaceWrites {
  std::vector<ValueId>
      written;  // per in-place result: the tensor written (its chain's first value)
  std::vector<uint8_t> in_place;  // per node: joins runs in its functional form
};

InPlaceWrites find_in_place_writes(const Graph& graph, std::vector<Node>& nodes,
                                   const FusionOptions& options) {
  InPlaceWrites w;
  w.written.assign(graph.values().size(), kNoValue);
  w.in_place.assign(nodes.size(), 0);
  if (!options.shares_memory) return w;
  std::unordered_set<ValueId> call_inputs;
  for (const GraphInput& in : graph.inputs()) {
    if (in.role == InputRole::UserInput) call_inputs.insert(in.value);
  }
  // every in-place result of a tensor is the same tensor: chains of writes
  std::vector<std::string> functional(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    functional[n] = functional_form(graph, nodes[n]);
    if (functional[n].empty()) continue;
    const ValueId self = nodes[n].arguments[0].value;
    w.written[nodes[n].outputs[0]] = w.written[self] != kNoValue ? w.written[self] : self;
  }
  std::map<ValueId, bool> may_write;  // per written tensor
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (functional[n].empty()) continue;
    const ValueId root = w.written[nodes[n].outputs[0]];
    auto [it, fresh] = may_write.emplace(root, !call_inputs.count(root));
    if (fresh && it->second) {
      for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()) && it->second; ++v) {
        const bool own = v == root || w.written[v] == root;
        it->second =
            own || graph.value(v).type != ValueType::Tensor || !options.shares_memory(v, root);
      }
    }
    if (!it->second) continue;
    nodes[n].op = std::move(functional[n]);
    w.in_place[n] = 1;
  }
  return w;
}

// Whether value `v`'s tensor shared memory with no other value of the graph when captured.
bool alone_in_memory(const Graph& graph, ValueId v, const FusionOptions& options) {
  for (ValueId u = 0; u < static_cast<ValueId>(graph.values().size()); ++u) {
    if (u != v && graph.value(u).type == ValueType::Tensor && options.shares_memory(u, v))
      return false;
  }
  return true;
}

// Whether `node` sums a static, contiguous CPU float tensor of rank >= 3 over every dim
// but the second (a convolution's bias gradient), without keepdim or dtype.
bool plane_sum(const Graph& g, const Node& node, const std::vector<uint8_t>& contiguous) {
  if (node.op != "loom::sum.dim_IntList" || node.arguments.size() != 4 ||
      node.arguments[0].kind != Argument::Kind::Value || node.outputs.size() != 1)
    return false;
  const ValueId x = node.arguments[0].value;
  const ValueInfo& in = g.value(x);
  if (!in.meta || in.meta->sizes.size() < 3 || in.meta->device.type != kCPU ||
      (in.meta->dtype != ScalarType::Float32 && in.meta->dtype != ScalarType::Float64) ||
      static_numel(*in.meta) <= 1 || x >= static_cast<ValueId>(contiguous.size()) || !contiguous[x])
    return false;
  const Argument &dim = node.arguments[1], &keepdim = node.arguments[2], &dtype = node.arguments[3];
  if (dim.kind != Argument::Kind::Constant || dim.constant.kind() != Value::Kind::IntList ||
      keepdim.kind != Argument::Kind::Constant || !keepdim.constant.is_bool() ||
      keepdim.constant.to_bool() || dtype.kind != Argument::Kind::Constant ||
      !dtype.constant.is_none())
    return false;
  return detail::all_but_channels(dim.constant.to_int_list(),
                                  static_cast<int64_t>(in.meta->sizes.size()));
}

// Note [Plane reductions]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A sum over every dim but the second of a pointwise op's result (a convolution's bias
// gradient, sum(threshold_backward(g, y, 0), [0, 2, 3])) would read the result again after
// the op wrote it. When the op's tensors are contiguous with its static shape [N, C, ...]
// (or hold one element), the pair is rewritten over [N * C, L] views, L the product of the
// trailing sizes: the op, a row sum (the two one row kernel, which sums each row as it
// writes it), the op's result viewed back as before, and a sum over N of the [N, C] row
// sums, all where the op was (so no op between the two may write anything). Returns the
// new views with the values they alias, for the memory checks.
std::vector<std::pair<ValueId, ValueId>> rewrite_plane_reductions(
    Graph& graph, std::vector<uint8_t>& contiguous, const std::function<bool(ValueId)>& unread) {
  std::vector<std::pair<ValueId, ValueId>> aliases;
  const std::vector<Node> nodes = graph.nodes();
  std::unordered_map<ValueId, size_t> producer;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId v : nodes[n].outputs) producer[v] = n;
  }
  std::map<size_t, size_t> sum_of;  // the producer's node -> the plane sum's
  std::set<size_t> sums;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!plane_sum(graph, nodes[n], contiguous)) continue;
    auto p = producer.find(nodes[n].arguments[0].value);
    if (p == producer.end() || sum_of.count(p->second)) continue;
    const Node& op = nodes[p->second];
    std::optional<Candidate> c = fusible(graph, op, unread);
    if (!c || c->row_op || detail::facts_of(op.op).side_effects) continue;
    // the sum moves up to the op: nothing between them may write (through a view, say)
    bool writes_between = false;
    for (size_t k = p->second + 1; k < n; ++k) {
      writes_between = writes_between || detail::facts_of(nodes[k].op).side_effects;
    }
    if (writes_between) continue;
    const TensorMeta& x = *graph.value(op.outputs[0]).meta;
    bool fits = true;
    for (const Argument& a : op.arguments) {
      if (a.kind != Argument::Kind::Value) continue;
      const TensorMeta& m = *graph.value(a.value).meta;
      fits = fits && (static_numel(m) == 1 ||
                      (m.sizes == x.sizes && a.value < static_cast<ValueId>(contiguous.size()) &&
                       contiguous[a.value]));
    }
    if (!fits) continue;
    sum_of[p->second] = n;
    sums.insert(n);
  }
  if (sum_of.empty()) return aliases;
  auto add_value = [&](ValueId like, const std::string& suffix, ScalarType dtype,
                       std::vector<int64_t> sizes) {
    TensorMeta meta = *graph.value(like).meta;
    meta.dtype = dtype;
    meta.sizes.clear();
    for (int64_t size : sizes) meta.sizes.push_back(SymSize{size, ""});
    const std::string name = unique_value_name(graph, graph.value(like).name + suffix);
    const ValueId v = graph.add_value(name, ValueType::Tensor, meta);
    contiguous.resize(graph.values().size(), 0);
    contiguous[v] = 1;
    return v;
  };
  auto view = [](ValueId from, ValueId to, std::vector<int64_t> sizes) {
    Node n;
    n.op = "loom::view";
    n.source = "plane reduction";
    n.arguments = {Argument::of_value("self", from),
                   Argument::of_constant("size", Value(std::move(sizes)))};
    n.outputs = {to};
    return n;
  };
  auto sum = [](ValueId from, ValueId to, int64_t dim) {
    Node n;
    n.op = "loom::sum.dim_IntList";
    n.source = "plane reduction";
    n.arguments = {Argument::of_value("self", from),
                   Argument::of_constant("dim", Value(std::vector<int64_t>{dim})),
                   Argument::of_constant("keepdim", Value(false)),
                   Argument::of_constant("dtype", Value())};
    n.outputs = {to};
    return n;
  };
  std::vector<Node> out;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (sums.count(n)) continue;
    auto m = sum_of.find(n);
    if (m == sum_of.end()) {
      out.push_back(nodes[n]);
      continue;
    }
    Node op = nodes[n];
    const ValueId x = op.outputs[0], total = nodes[m->second].outputs[0];
    std::vector<int64_t> sizes;
    for (const SymSize& size : graph.value(x).meta->sizes) sizes.push_back(size.value);
    const int64_t planes = sizes[0], channels = sizes[1], rows = planes * channels;
    const int64_t length = static_numel(*graph.value(x).meta) / std::max<int64_t>(rows, 1);
    for (Argument& a : op.arguments) {
      if (a.kind != Argument::Kind::Value || static_numel(*graph.value(a.value).meta) == 1)
        continue;
      const ValueId rows_view =
          add_value(a.value, "_rows", graph.value(a.value).meta->dtype, {rows, length});
      out.push_back(view(a.value, rows_view, {rows, length}));
      aliases.emplace_back(rows_view, a.value);
      a.value = rows_view;
    }
    const ScalarType sum_dtype = graph.value(total).meta->dtype;
    const ValueId flat = add_value(x, "_rows", graph.value(x).meta->dtype, {rows, length});
    const ValueId row_sums = add_value(total, "_rows", sum_dtype, {rows});
    const ValueId per_plane = add_value(total, "_planes", sum_dtype, {planes, channels});
    op.outputs = {flat};
    out.push_back(std::move(op));
    out.push_back(sum(flat, row_sums, 1));
    out.push_back(view(flat, x, sizes));
    aliases.emplace_back(flat, x);
    out.push_back(view(row_sums, per_plane, {planes, channels}));
    aliases.emplace_back(per_plane, row_sums);
    out.push_back(sum(per_plane, total, 0));
  }
  graph.replace_nodes(std::move(out));
  return aliases;
}

}  // namespace

std::vector<FusedKernel> fuse_pointwise(Graph& graph,
                                        const std::vector<uint8_t>& contiguous_at_capture,
                                        const FusionOptions& fusion_options) {
  std::vector<uint8_t> contiguous = contiguous_at_capture;
  FusionOptions options = fusion_options;
  {
    std::vector<uint8_t> read_before(graph.values().size(), 0);
    for (const Node& node : graph.nodes())
      for_each_read(node, [&](ValueId v) { read_before[v] = 1; });
    for (ValueId v : graph.outputs()) read_before[v] = 1;
    auto unread_before = [&](ValueId v) { return v == kNoValue || !read_before[v]; };
    std::vector<std::pair<ValueId, ValueId>> aliases =
        rewrite_plane_reductions(graph, contiguous, unread_before);
    if (!aliases.empty() && options.shares_memory) {
      std::unordered_map<ValueId, ValueId> base(aliases.begin(), aliases.end());
      auto root = [base](ValueId v) {
        for (auto it = base.find(v); it != base.end(); it = base.find(v)) v = it->second;
        return v;
      };
      options.shares_memory = [shares = fusion_options.shares_memory, root](ValueId a, ValueId b) {
        const ValueId ra = root(a), rb = root(b);
        return ra == rb || shares(ra, rb);
      };
    }
  }
  const std::vector<Node> originals = graph.nodes();
  // the nodes as the runs see them: in-place ops that may join a run in their functional
  // form (Note [In-place ops in fused kernels])
  std::vector<Node> nodes = originals;
  const InPlaceWrites writable = find_in_place_writes(graph, nodes, options);
  const std::vector<ValueId>& written = writable.written;
  const std::vector<uint8_t>& in_place = writable.in_place;
  // who reads each value, by node index; graph outputs count as read after everything
  std::vector<size_t> last_reader(graph.values().size(), 0);
  std::vector<uint8_t> read(graph.values().size(), 0);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for_each_read(nodes[n], [&](ValueId v) {
      last_reader[v] = std::max(last_reader[v], n);
      read[v] = 1;
    });
  }
  for (ValueId v : graph.outputs()) {
    last_reader[v] = nodes.size();
    read[v] = 1;
  }
  auto unread = [&](ValueId v) { return v == kNoValue || !read[v]; };
  std::unordered_set<ValueId> graph_inputs;
  for (const GraphInput& in : graph.inputs()) graph_inputs.insert(in.value);

  // runs of consecutive fusible nodes over one shape; a run is a row kernel when it holds
  // a row op, and then nothing in it may read a reduction made without keepdim
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t n = 0; n < nodes.size();) {
    std::optional<Candidate> first = fusible(graph, nodes[n], unread);
    size_t end = n + 1;
    if (first) {
      std::set<ValueId> flat_rows, rows;  // the run's row values without and with keepdim
      auto note = [&](const Node& node, const Candidate& c) {
        if (c.flat_row) flat_rows.insert(node.outputs[0]);
        const bool reduction = node.op == "loom::sum.dim_IntList" || node.op == "loom::mean.dim" ||
                               node.op == "loom::amax";
        if (reduction && !c.flat_row) rows.insert(node.outputs[0]);
      };
      note(nodes[n], *first);
      std::vector<SymSize> row_shape = first->shape->sizes;
      if (!row_shape.empty()) row_shape.back() = SymSize{1, ""};
      while (end < nodes.size()) {
        std::optional<Candidate> c = fusible(graph, nodes[end], unread);
        if (!c) break;
        bool reads_flat = false, reads_full = false;
        for_each_read(nodes[end], [&](ValueId v) {
          reads_flat = reads_flat || flat_rows.count(v);
          reads_full = reads_full || !rows.count(v);
        });
        if (reads_flat || c->shape->device != first->shape->device) break;
        if (c->shape->sizes != first->shape->sizes) {
          // a pointwise op of the run's row values alone: one value per row
          if (c->row_op || reads_full || row_shape.empty() || c->shape->sizes != row_shape) break;
          rows.insert(nodes[end].outputs[0]);
        }
        note(nodes[end], *c);
        ++end;
      }
      if (static_cast<int>(end - n) >= options.min_nodes) runs.emplace_back(n, end);
    }
    n = end;
  }
  if (runs.empty()) return {};

  std::vector<FusedKernel> made;
  std::vector<Node> out;
  size_t next = 0;
  for (auto [begin, end] : runs) {
    for (; next < begin; ++next) out.push_back(originals[next]);
    next = end;
    const TensorMeta shape = *fusible(graph, nodes[begin], unread)->shape;
    std::map<ValueId, std::string> names;  // value -> a<i> / v<k>
    std::vector<ValueId> inputs, outputs;
    std::string program = "loom-kernel 1\n";
    if (shape.device.type != kCPU) program += "target " + kernel_target(shape.device) + "\n";
    std::string statements;
    FusedKernel kernel;
    // per tensor the run writes: the value it had before the run and its last value
    std::vector<std::pair<ValueId, ValueId>> writes;
    std::set<ValueId> dense_inputs;
    bool row_kernel = false;
    for (size_t n = begin; n < end; ++n) {
      const Node& node = nodes[n];
      row_kernel = row_kernel || fusible(graph, node, unread)->row_op;
      kernel.fused_ops.push_back(originals[n].op);
      if (in_place[n]) {
        const ValueId root = written[node.outputs[0]];
        auto w = std::find_if(writes.begin(), writes.end(),
                              [&](const auto& p) { return written[p.second] == root; });
        if (w == writes.end()) {
          writes.emplace_back(node.arguments[0].value, node.outputs[0]);
        } else {
          w->second = node.outputs[0];
        }
      }
      std::string line;
      for (const Argument& a : node.arguments) {
        if (a.kind == Argument::Kind::Constant) {
          // a row op's dims and normalized shape are the last dimension (row_op_fits)
          line += " " + (a.constant.kind() == Value::Kind::IntList ? std::string("#-1")
                                                                   : program_constant(a.constant));
          continue;
        }
        auto it = names.find(a.value);
        if (it == names.end()) {  // read from outside the run: an input
          const TensorMeta& m = *graph.value(a.value).meta;
          std::string name = str_cat("a", inputs.size());
          const char* layout =
              static_numel(m) == 1 ? "scalar"
              : (m.sizes == shape.sizes && a.value < static_cast<ValueId>(contiguous.size()) &&
                 contiguous[a.value])
                  ? "dense"
                  : "strided";
          program += str_cat("in ", name, " ", scalar_type_name(m.dtype), " ", layout, "\n");
          if (std::string_view(layout) == "dense") dense_inputs.insert(a.value);
          inputs.push_back(a.value);
          it = names.emplace(a.value, name).first;
        }
        line += " " + it->second;
      }
      ValueId result = node.outputs[0];  // a layer norm's mean and rstd are unread
      std::string name = str_cat("v", n - begin);
      names[result] = name;
      statements += str_cat(name, " ", scalar_type_name(graph.value(result).meta->dtype), " ",
                            scalar_type_name(compiler::detail::compute_dtype(graph, node)), " = ",
                            node.op, line, "\n");
      if (read[result] && last_reader[result] >= end) outputs.push_back(result);
    }
    program += statements;
    // a written tensor's last value: written into the tensor by the kernel when it is a
    // dense input of an element-wise kernel, else a fresh output copied back after it
    std::map<ValueId, std::string> into;
    std::vector<std::pair<ValueId, ValueId>> copies;  // (tensor, fresh output) -> last value
    std::vector<ValueId> copied_values;
    for (auto [before, last] : writes) {
      std::erase(outputs, last);
      if (!row_kernel && dense_inputs.count(before)) {
        outputs.push_back(last);
        into[last] = names[before];
        continue;
      }
      ValueInfo info = graph.value(last);
      ValueId fresh = graph.add_value(unique_value_name(graph, info.name + "_fused"),
                                      ValueType::Tensor, info.meta);
      names[fresh] = names[last];
      outputs.push_back(fresh);
      copies.emplace_back(before, fresh);
      copied_values.push_back(last);
    }
    // Note [Buffer reuse]
    std::set<std::string> taken;
    for (const auto& [value, input] : into) taken.insert(input);
    for (auto [before, last] : writes) taken.insert(names[before]);
    for (ValueId v : outputs) {
      if (row_kernel || !options.shares_memory) break;
      if (into.count(v)) continue;
      for (ValueId in : inputs) {
        const std::string& input = names[in];
        if (taken.count(input) || !dense_inputs.count(in) || graph_inputs.count(in) ||
            last_reader[in] >= end || graph.value(in).meta->dtype != graph.value(v).meta->dtype)
          continue;
        if (!alone_in_memory(graph, in, options)) continue;
        into[v] = input;
        taken.insert(input);
        break;
      }
    }
    for (ValueId v : outputs) {
      program += "out " + names[v] + (into.count(v) ? " into " + into[v] : "") + "\n";
    }
    if (outputs.empty()) {  // nothing reads the run: dead code
      continue;
    }
    LoomKernelBuildArgs args{};
    args.struct_size = sizeof(args);
    args.program = program.c_str();
    args.cache_dir = options.cache_dir ? options.cache_dir->c_str() : nullptr;
    args.debug_dir = options.debug_dir.empty() ? nullptr : options.debug_dir.c_str();
    try {
      ReadSection section;
      compiler::detail::check(compiler::detail::plugin_table().build_kernel(&args), "build_kernel");
    } catch (const Error& e) {
      // an op or dtype this plugin version cannot generate after all: the run stays as is
      if (e.code() != ErrorCode::Unimplemented) throw;
      for (size_t n = begin; n < end; ++n) out.push_back(originals[n]);
      continue;
    }
    kernel.op = dispatch::OperatorHandle::from_abi(args.out_op).name();
    kernel.program = program;
    kernel.source = args.out_source;
    kernel.build_ms = args.out_build_ms;
    std::vector<ListItem> items;
    for (ValueId v : inputs) items.push_back(ListItem{v, 0});
    Node fused;
    fused.op = kernel.op;
    fused.source = str_cat("fused ", end - begin, " ops");
    fused.arguments.push_back(Argument::of_list("inputs", std::move(items)));
    std::vector<ListItem> written_items;  // the inputs written into, in `out` order
    for (ValueId v : outputs) {
      if (!into.count(v)) continue;
      for (ValueId in : inputs) {
        if (names[in] == into[v]) written_items.push_back(ListItem{in, 0});
      }
    }
    if (!written_items.empty()) {
      fused.arguments.push_back(Argument::of_list("written", std::move(written_items)));
    }
    fused.outputs = outputs;
    fused.list_return = true;
    out.push_back(std::move(fused));
    for (size_t w = 0; w < copies.size(); ++w) {
      Node copy;
      copy.op = "loom::copy_";
      copy.source = "fused in-place write";
      copy.arguments.push_back(Argument::of_value("self", copies[w].first));
      copy.arguments.push_back(Argument::of_value("src", copies[w].second));
      copy.arguments.push_back(Argument::of_constant("non_blocking", Value(false)));
      copy.outputs.push_back(copied_values[w]);
      out.push_back(std::move(copy));
    }
    made.push_back(std::move(kernel));
  }
  for (; next < nodes.size(); ++next) out.push_back(originals[next]);
  graph.replace_nodes(std::move(out));
  return made;
}

}  // namespace loom::graph
