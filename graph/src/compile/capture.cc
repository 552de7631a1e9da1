// Capturing a function: the compiler plugin records the op calls it makes (Note
// [Capturing op calls] in plugins/compiler/capture.cc), and the records become a graph.
//
// Note [From op calls to a graph]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor is known by its handle (the plugin keeps every recorded tensor alive until
// the records are visited). The call's tensors are the graph's first inputs; a tensor an
// op reads that is neither an input nor an earlier op's result is one the function holds
// (a parameter, a constant it made before): it becomes an input too, read by reference at
// each run, named by its state key when it has one ("fc1.weight"). A wrapped number (the
// 2 of `x * 2`) is a constant of the node. Each returned tensor is a new value; a
// returned handle seen before (an in-place op's self) becomes a new value as well, so
// later readers read the written tensor: the graph stays in SSA form while the
// interpreter, which passes the same tensor along, writes where the function wrote.
// Metadata comes from the real tensors: dtype, sizes, device, and whether each was
// contiguous (which fused kernels' layouts rely on; guards keep the inputs' strides).
//
// Note [Graph breaks]
// ~~~~~~~~~~~~~~~~~~~
// An op tagged dynamic_output_shape (nonzero, masked_select, unique, repeat_interleave
// by a tensor) makes a shape only its data decides: it breaks the graph, which means
// that nothing is fused across it and later sizes are not assumed; the interpreter runs
// it between the compiled parts. An op tagged data_dependent_output
// (_local_scalar_dense, which item() calls while capturing: Note [Host reads while
// capturing]) hands a value to the C++ code, which may decide anything on it: the value
// read is guarded (a run that reads another value runs the function again, a
// recompile), and a function that also writes to its inputs or held tensors cannot be
// replayed safely (its writes would happen before the guard fails) and runs eagerly.
// With fullgraph, any break raises naming the op.
#include <algorithm>
#include <chrono>
#include <exception>
#include <unordered_set>

#include "compile_internal.h"
#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/core/str_cat.h"
#include "loom/core/type_promotion.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/extensions.h"
#include "loom/dispatcher/function_schema.h"
#include "loom/ops/op_library.h"
#include "loom/ops/structured_schemas.h"
#include "loom/tensor_io.h"

namespace loom::compiler::detail {
namespace {

using dispatch::SchemaType;
using graph::Argument;
using graph::ListItem;
using graph::Node;
using graph::ValueId;
using K = SchemaType::Kind;

using ops::has_tag;

// The ops that break graphs, by name, with the reason (Note [Graph breaks]).
const std::unordered_map<std::string, std::string>& breaking_ops() {
  static const std::unordered_map<std::string, std::string> ops = [] {
    std::unordered_map<std::string, std::string> m;
    for (const OpDefinition& def : standard_ops()) {
      std::string name = op_name_of(def);
      if (has_tag(def.tags, "dynamic_output_shape")) {
        m[name] = "its output's shape depends on the input's values";
      } else if (has_tag(def.tags, "data_dependent_output")) {
        m[name] = "it reads a value on the host (item())";
      }
    }
    return m;
  }();
  return ops;
}

// Ops that change a tensor's metadata in place (the tag "metadata": resize_).
const std::unordered_set<std::string>& writes_metadata() {
  static const std::unordered_set<std::string> ops =
      standard_ops_where([](const OpDefinition& def) { return has_tag(def.tags, "metadata"); });
  return ops;
}

// The op library's decompositions a capture takes apart (Note [Decomposed ops in
// captures]): those autograd records through their decomposition, having no formula.
const std::unordered_set<std::string>& decomposed_ops() {
  static const std::unordered_set<std::string> ops = [] {
    std::unordered_set<std::string> recorded;
    if (autograd::is_available()) {
      for (const autograd::RecordedOp& op : autograd::recorded_ops()) recorded.insert(op.op);
    }
    return standard_ops_where([&](const OpDefinition& def) {
      return has_tag(def.tags, "decomposition") && !has_tag(def.tags, "data_dependent_output") &&
             !recorded.count(op_name_of(def));
    });
  }();
  return ops;
}

std::string base_name(const std::string& op) {
  size_t ns = op.find("::");
  std::string name = ns == std::string::npos ? op : op.substr(ns + 2);
  return name.substr(0, name.find('.'));
}

class Builder {
 public:
  Builder(const std::vector<Tensor>& inputs,
          const std::unordered_map<const void*, std::string>& state, Captured& out,
          const Captured* forward)
      : state_(state), out_(out), forward_(forward) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      LOOM_CHECK(t.defined(), std::string(kComponent), "argument tensor ", i, " is undefined");
      ValueId v = add_tensor_value(str_cat("x", i), t);
      out_.graph.add_input(v, graph::InputRole::UserInput);
      external_.insert(t.impl());
      by_handle_.try_emplace(t.impl(), v);
    }
  }

  // Called for each record; errors are kept and rethrown after the visit.
  // Note [Decomposed ops in captures]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // The plugin records every call with its parent. A top-level call becomes a node,
  // unless its op is one of the op library's decompositions that ran as one (it made
  // calls of its own): then its calls are taken instead, recursively. So the graph holds
  // the ops that ran, as autograd saw them (a training capture needs every tensor a
  // backward formula saved to be a value of the graph: cross_entropy_loss's log_softmax
  // output), and fusion sees the decompositions' pointwise ops: the "primitive op set" of
  // the op library. Ops autograd differentiates by a formula of their own (the copies:
  // _to_copy) and data-dependent ops (item()) stay whole.
  void visit(const LoomCapturedCall& call) {
    if (error_) return;
    try {
      const auto i = static_cast<size_t>(call.index);
      if (visible_.size() <= i) {
        visible_.resize(i + 1, 0);
        expanded_.resize(i + 1, 0);
      }
      const bool visible = call.parent < 0 || (visible_[call.parent] && expanded_[call.parent]);
      const bool expand =
          visible && call.num_children > 0 &&
          decomposed_ops().count(dispatch::OperatorHandle::from_abi(call.op).name());
      visible_[i] = visible;
      expanded_[i] = expand;
      if (visible && !expand) add_node(call);
    } catch (...) {
      error_ = std::current_exception();
    }
  }

  void finish(const std::vector<Tensor>& outputs) {
    if (error_) std::rethrow_exception(error_);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& t = outputs[i];
      LOOM_CHECK(t.defined(), std::string(kComponent),
                 "the function returned an undefined tensor as output ", i);
      out_.graph.add_output(value_of(t.impl()));
    }
    out_.function_outputs = outputs.size();
    for (ValueId v : host_read_values_) out_.graph.add_output(v);
  }

 private:
  std::string unique(const std::string& base) {
    int& n = name_counts_[base];
    std::string name = n == 0 ? base : str_cat(base, "_", n);
    ++n;
    while (out_.graph.find_value(name)) name = str_cat(base, "_", n++);
    return name;
  }

  ValueId add_tensor_value(const std::string& name, const Tensor& t) {
    graph::TensorMeta meta;
    meta.dtype = t.dtype();
    meta.device = t.device();
    for (int64_t s : t.sizes()) meta.sizes.push_back(graph::SymSize{s, ""});
    ValueId v = out_.graph.add_value(unique(name), graph::ValueType::Tensor, meta);
    if (out_.contiguous.size() <= static_cast<size_t>(v)) {
      out_.contiguous.resize(v + 1, 0);
      out_.value_tensors.resize(v + 1);
    }
    out_.contiguous[v] = t.is_contiguous() ? 1 : 0;
    out_.value_tensors[v] = t;
    return v;
  }

  // The value of a tensor an op read: known, a view of a known one made without an op
  // (an as_strided node), or a held tensor made an input now.
  ValueId value_of(TensorImpl* impl) {
    auto it = by_handle_.find(impl);
    if (it != by_handle_.end()) return it->second;
    Tensor t = Tensor::borrow(impl);
    if (ValueId base = value_sharing_memory(t); base != graph::kNoValue) return add_view(base, t);
    const ValueId saved = forward_ != nullptr ? forward_value(t) : graph::kNoValue;
    auto named = state_.find(impl);
    std::string target =
        saved != graph::kNoValue ? str_cat("saved_", forward_->graph.value(saved).name)
        : named != state_.end()  ? named->second
                                 : str_cat("_tensor_constant", out_.constants.size());
    graph::InputRole role = graph::InputRole::Constant;
    if (named != state_.end()) {
      role = t.requires_grad() ? graph::InputRole::Parameter : graph::InputRole::Buffer;
    }
    std::string name = target;
    std::replace(name.begin(), name.end(), '.', '_');
    ValueId v = add_tensor_value(name, t);
    out_.graph.add_input(v, role, target);
    out_.constants.push_back(t);
    out_.from_forward.push_back(saved);
    external_.insert(impl);
    by_handle_.emplace(impl, v);
    return v;
  }

  // The forward value `t` is: the same tensor, or the newest one over the same memory
  // with the same sizes, strides and dtype (autograd saves aliases).
  ValueId forward_value(const Tensor& t) const {
    const std::vector<Tensor>& values = forward_->value_tensors;
    for (size_t v = values.size(); v-- > 0;) {
      if (values[v].defined() && values[v].impl() == t.impl()) return static_cast<ValueId>(v);
    }
    for (size_t v = values.size(); v-- > 0;) {
      const Tensor& f = values[v];
      if (f.defined() && f.data_ptr() == t.data_ptr() && f.dtype() == t.dtype() &&
          std::ranges::equal(f.sizes(), t.sizes()) &&
          std::ranges::equal(f.strides(), t.strides()) && f.device() == t.device())
        return static_cast<ValueId>(v);
    }
    return graph::kNoValue;
  }

  // Note [Tensors made without an op]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // Plugins allocate through the host (tensor_empty), which is no op call: a tensor an
  // autograd formula allocates and then fills is first seen as the written argument of
  // an op that overwrites all of it (fill_, zero_, copy_, an out= argument). It is taken
  // as allocated there: an empty_strided node of its sizes, strides, dtype and device
  // comes first, instead of a held tensor that the graph would write into at each run.
  static bool overwrites(const std::string& op, const std::string& argument) {
    return op == "loom::fill_.Scalar" || op == "loom::zero_" || op == "loom::copy_" ||
           argument == "out";
  }

  // A copy into a tensor allocated without an op, of the source's shape (how the copy
  // decompositions convert dtypes and devices): a _to_copy node, which allocates when
  // the graph runs, so the size follows the source's (a nonzero's result, say).
  bool copies_into_new(const LoomCapturedCall& call) {
    auto* self = reinterpret_cast<TensorImpl*>(call.args[0].u.tensor);
    auto* src = reinterpret_cast<TensorImpl*>(call.args[1].u.tensor);
    if (call.args[0].tag != LOOM_VALUE_TENSOR || call.args[1].tag != LOOM_VALUE_TENSOR ||
        by_handle_.count(self) || !by_handle_.count(src)) {
      return false;
    }
    Tensor t = Tensor::borrow(self), s = Tensor::borrow(src);
    if (!std::ranges::equal(t.sizes(), s.sizes()) || !t.is_contiguous()) return false;
    Node node;
    node.op = "loom::_to_copy";
    node.arguments.push_back(Argument::of_value("self", by_handle_.at(src)));
    node.arguments.push_back(Argument::of_constant("dtype", Value(t.dtype())));
    node.arguments.push_back(Argument::of_constant("layout", Value()));
    node.arguments.push_back(Argument::of_constant("device", Value(t.device())));
    node.arguments.push_back(Argument::of_constant("pin_memory", Value()));
    node.arguments.push_back(Argument::of_constant("non_blocking", Value(false)));
    node.arguments.push_back(Argument::of_constant("memory_format", Value(int64_t{1})));
    ValueId v = add_tensor_value("to_copy", t);
    node.outputs.push_back(v);
    by_handle_[self] = v;
    out_.graph.add_node(std::move(node));
    return true;
  }

  // Whether every tensor of a call is on the meta device: a decomposition computing a
  // shape, which the graph does not need (its sizes are the values').
  static bool only_meta(const LoomCapturedCall& call) {
    bool any = false;
    auto meta = [&](const LoomValue& v) {
      if (v.tag != LOOM_VALUE_TENSOR || v.u.tensor == nullptr) return true;
      any = true;
      return reinterpret_cast<TensorImpl*>(v.u.tensor)->device().type == kMeta;
    };
    for (size_t i = 0; i < call.num_args; ++i) {
      if (!meta(call.args[i])) return false;
    }
    for (size_t i = 0; i < call.num_returns; ++i) {
      if (!meta(call.returns[i])) return false;
    }
    return any;
  }

  void add_allocation(TensorImpl* impl) {
    Tensor t = Tensor::borrow(impl);
    Node node;
    node.op = "loom::empty_strided";
    node.arguments.push_back(Argument::of_constant(
        "size", Value(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()))));
    node.arguments.push_back(Argument::of_constant(
        "stride", Value(std::vector<int64_t>(t.strides().begin(), t.strides().end()))));
    node.arguments.push_back(Argument::of_constant("dtype", Value(t.dtype())));
    node.arguments.push_back(Argument::of_constant("layout", Value()));
    node.arguments.push_back(Argument::of_constant("device", Value(t.device())));
    node.arguments.push_back(Argument::of_constant("pin_memory", Value()));
    ValueId v = add_tensor_value("empty", t);
    node.outputs.push_back(v);
    by_handle_[impl] = v;
    out_.graph.add_node(std::move(node));
  }

  // The newest value whose tensor shares `t`'s storage, or kNoValue.
  ValueId value_sharing_memory(const Tensor& t) const {
    for (size_t v = out_.value_tensors.size(); v-- > 0;) {
      const Tensor& known = out_.value_tensors[v];
      if (known.defined() && known.is_alias_of(t)) return static_cast<ValueId>(v);
    }
    return graph::kNoValue;
  }

  ValueId add_view(ValueId base, const Tensor& t) {
    Node node;
    node.op = "loom::as_strided";
    node.arguments.push_back(Argument::of_value("self", base));
    node.arguments.push_back(Argument::of_constant(
        "size", Value(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()))));
    node.arguments.push_back(Argument::of_constant(
        "stride", Value(std::vector<int64_t>(t.strides().begin(), t.strides().end()))));
    node.arguments.push_back(Argument::of_constant("storage_offset", Value(t.storage_offset())));
    ValueId v = add_tensor_value("as_strided", t);
    node.outputs.push_back(v);
    by_handle_[t.impl()] = v;
    out_.graph.add_node(std::move(node));
    return v;
  }

  static Value number_of_wrapped(TensorImpl* impl) {
    Tensor t = Tensor::borrow(impl);
    if (is_floating_point(t.dtype())) return Value(t.item<double>());
    if (t.dtype() == ScalarType::Bool) return Value(t.item<bool>());
    return Value(t.item<int64_t>());
  }

  static Value constant_of(const LoomValue& v) {
    switch (v.tag) {
      case LOOM_VALUE_NONE:
        return Value();
      case LOOM_VALUE_INT:
        return Value(v.u.i);
      case LOOM_VALUE_DOUBLE:
        return Value(v.u.d);
      case LOOM_VALUE_BOOL:
        return Value(v.u.i != 0);
      case LOOM_VALUE_STRING:
        return Value(std::string(v.u.str, v.length));
      case LOOM_VALUE_DTYPE:
        return Value(static_cast<ScalarType>(v.u.i));
      case LOOM_VALUE_DEVICE:
        return Value(Device{v.u.device.type, v.u.device.index});
      case LOOM_VALUE_INT_LIST:
        return Value(std::vector<int64_t>(v.u.ints, v.u.ints + v.length));
      case LOOM_VALUE_DOUBLE_LIST:
        return Value(std::vector<double>(v.u.doubles, v.u.doubles + v.length));
      case LOOM_VALUE_BOOL_LIST: {
        std::vector<bool> b;
        for (uint32_t i = 0; i < v.length; ++i) b.push_back(v.u.bools[i] != 0);
        return Value(std::move(b));
      }
      default:
        fail(std::string(kComponent), "an argument of value tag ", v.tag, " cannot be a constant");
    }
  }

  const dispatch::FunctionSchema& schema_of(const dispatch::OperatorHandle& op) {
    auto it = schemas_.find(op.abi());
    if (it == schemas_.end()) it = schemas_.emplace(op.abi(), op.schema()).first;
    return it->second;
  }

  void add_node(const LoomCapturedCall& call) {
    dispatch::OperatorHandle op = dispatch::OperatorHandle::from_abi(call.op);
    const dispatch::FunctionSchema& schema = schema_of(op);
    ++out_.ops;
    Node node;
    node.op = op.name();
    LOOM_CHECK(call.num_args == schema.arguments.size(), std::string(kComponent), node.op,
               ": the record has ", call.num_args, " arguments, the schema ",
               schema.arguments.size());
    if (node.op == "loom::copy_" && copies_into_new(call)) return;
    if (call.parent >= 0 && only_meta(call)) return;  // a decomposition's shape computation
    if (writes_metadata().count(node.op)) {
      out_.unsupported =
          node.op + " changes a tensor's sizes in place, which a graph cannot replay";
    }
    if (auto b = breaking_ops().find(node.op); b != breaking_ops().end()) {
      out_.breaks.push_back(GraphBreak{node.op, b->second});
    }
    for (size_t i = 0; i < call.num_args; ++i) {
      const dispatch::Argument& a = schema.arguments[i];
      const LoomValue& v = call.args[i];
      if (v.tag == LOOM_VALUE_TENSOR) {
        auto* impl = reinterpret_cast<TensorImpl*>(v.u.tensor);
        if (a.alias && a.alias->is_write && !by_handle_.count(impl) &&
            overwrites(node.op, a.name)) {
          add_allocation(impl);  // Note [Tensors made without an op]
        }
        if (impl->is_wrapped_number() && !by_handle_.count(impl)) {
          node.arguments.push_back(Argument::of_constant(a.name, number_of_wrapped(impl)));
        } else {
          node.arguments.push_back(Argument::of_value(a.name, value_of(impl)));
        }
        if (a.alias && a.alias->is_write && external_.count(impl)) {
          if (!out_.mutates_state) out_.first_write = node.op;
          out_.mutates_state = true;
        }
      } else if (v.tag == LOOM_VALUE_TENSOR_LIST) {
        std::vector<ListItem> items;
        for (uint32_t k = 0; k < v.length; ++k) {
          auto* impl = reinterpret_cast<TensorImpl*>(v.u.tensors[k]);
          items.push_back(ListItem{impl == nullptr ? graph::kNoValue : value_of(impl), 0});
        }
        node.arguments.push_back(Argument::of_list(a.name, std::move(items)));
      } else {
        node.arguments.push_back(Argument::of_constant(a.name, constant_of(v)));
      }
    }
    const bool list_return = schema.returns.size() == 1 && schema.returns[0].type.kind == K::List;
    node.list_return = list_return;
    const std::string base = base_name(node.op);
    auto add_return = [&](const LoomValue& r) -> ValueId {
      if (r.tag == LOOM_VALUE_TENSOR) {
        auto* impl = reinterpret_cast<TensorImpl*>(r.u.tensor);
        ValueId v = add_tensor_value(base, Tensor::borrow(impl));
        by_handle_[impl] = v;  // an in-place op's self: later readers read the written value
        return v;
      }
      if (r.tag == LOOM_VALUE_NONE) return graph::kNoValue;
      graph::ValueType type = r.tag == LOOM_VALUE_DOUBLE ? graph::ValueType::SymFloat
                              : r.tag == LOOM_VALUE_BOOL ? graph::ValueType::SymBool
                                                         : graph::ValueType::SymInt;
      ValueId v = out_.graph.add_value(unique(base), type);
      host_read_values_.push_back(v);
      out_.host_reads.push_back(r.tag == LOOM_VALUE_DOUBLE ? r.u.d : static_cast<double>(r.u.i));
      return v;
    };
    for (size_t i = 0; i < call.num_returns; ++i) {
      const LoomValue& r = call.returns[i];
      if (r.tag == LOOM_VALUE_TENSOR_LIST) {
        for (uint32_t k = 0; k < r.length; ++k) {
          LoomValue one{LOOM_VALUE_TENSOR, 0, {}};
          one.u.tensor = r.u.tensors[k];
          node.outputs.push_back(add_return(one));
        }
      } else {
        node.outputs.push_back(add_return(r));
      }
    }
    out_.graph.add_node(std::move(node));
  }

  const std::unordered_map<const void*, std::string>& state_;
  Captured& out_;
  const Captured* forward_;
  std::unordered_map<const void*, ValueId> by_handle_;
  std::unordered_set<const void*> external_;
  std::unordered_map<std::string, int> name_counts_;
  std::unordered_map<const LoomOperator*, dispatch::FunctionSchema> schemas_;
  std::vector<ValueId> host_read_values_;
  std::vector<uint8_t> visible_, expanded_;  // per record (Note [Decomposed ops in captures])
  std::exception_ptr error_;
};

void visit_record(void* ctx, const LoomCapturedCall* call) {
  static_cast<Builder*>(ctx)->visit(*call);
}

}  // namespace

const LoomCompilerApi& plugin_table() {
  const auto* table =
      static_cast<const LoomCompilerApi*>(dispatch::find_extension(LOOM_COMPILER_EXTENSION_NAME));
  LOOM_CHECK(table != nullptr, std::string(kComponent),
             "the compiler plugin is not loaded (expected `plugins { name: \"compiler\" }` in the "
             "deployment manifest, found no table named '",
             LOOM_COMPILER_EXTENSION_NAME, "')");
  return *table;
}

void check(LoomError* err, const char* what) {
  // the plugin's messages start with "[compiler] " and keep it
  dispatch::check_table_error(err, "compiler", what);
}

Captured capture(const std::vector<Tensor>& inputs, const CompiledFunction::Eager& eager,
                 const std::unordered_map<const void*, std::string>& state,
                 std::vector<Tensor>* outputs, const Captured* forward) {
  {
    ReadSection section;
    check(plugin_table().capture_begin(), "capture_begin");
  }
  try {
    *outputs = eager();
  } catch (...) {
    ReadSection section;
    if (LoomError* err = plugin_table().capture_end(nullptr, nullptr)) err->destroy(err);
    throw;
  }
  Captured out;
  Builder builder(inputs, state, out, forward);
  {
    ReadSection section;
    check(plugin_table().capture_end(&builder, &visit_record), "capture_end");
  }
  builder.finish(*outputs);
  if (out.unsupported.empty() && !out.host_reads.empty() && out.mutates_state) {
    out.unsupported =
        "the function reads a value on the host (item()) and writes to its inputs or held "
        "tensors, so a replay could not stop before its writes when the value changes";
  }
  return out;
}

std::string op_name_of(const OpDefinition& def) {
  return std::string(def.schema.substr(0, def.schema.find('(')));
}

std::unordered_set<std::string> standard_ops_where(
    const std::function<bool(const OpDefinition&)>& keep) {
  std::unordered_set<std::string> names;
  for (const OpDefinition& def : standard_ops()) {
    if (keep(def)) names.insert(op_name_of(def));
  }
  return names;
}

ScalarType compute_dtype(const graph::Graph& g, const graph::Node& node) {
  const graph::ValueInfo& result = g.value(node.outputs.at(0));
  const std::string& op = node.op;
  static const std::unordered_set<std::string> predicates = {
      "loom::eq.Tensor",   "loom::ne.Tensor",  "loom::lt.Tensor",  "loom::le.Tensor",
      "loom::gt.Tensor",   "loom::ge.Tensor",  "loom::eq.Scalar",  "loom::ne.Scalar",
      "loom::lt.Scalar",   "loom::le.Scalar",  "loom::gt.Scalar",  "loom::ge.Scalar",
      "loom::isnan",       "loom::isinf",      "loom::isfinite",   "loom::logical_not",
      "loom::logical_and", "loom::logical_or", "loom::logical_xor"};
  if (!predicates.count(op)) return result.meta->dtype;
  std::vector<PromotionOperand> operands;
  for (const Argument& a : node.arguments) {
    if (a.kind == Argument::Kind::Value) {
      const graph::ValueInfo& v = g.value(a.value);
      if (!v.meta) continue;
      operands.push_back({v.meta->dtype, v.meta->sizes.empty()
                                             ? PromotionOperand::Tier::ZeroDim
                                             : PromotionOperand::Tier::Dimensioned});
    } else if (a.kind == Argument::Kind::Constant &&
               (a.constant.is_double() || a.constant.is_int() || a.constant.is_bool())) {
      ScalarType t = a.constant.is_double() ? ScalarType::Float64
                     : a.constant.is_int()  ? ScalarType::Int64
                                            : ScalarType::Bool;
      operands.push_back({t, PromotionOperand::Tier::Scalar});
    }
  }
  return operands.empty() ? result.meta->dtype : result_type(operands, op);
}

}  // namespace loom::compiler::detail
