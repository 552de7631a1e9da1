// The Autograd key's kernel (Note [Recording]) and the backward of recorded calls.
#include "record.h"

#include <array>
#include <cctype>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "engine.h"
#include "inplace_view.h"
#include "loom/sdk/dtype.hpp"
#include "loom/sdk/extension.hpp"
#include "loom/sdk/trace.hpp"
#include "object_pool.h"

namespace loom::autograd {
namespace {

// Note [Recording]
// ~~~~~~~~~~~~~~~~
// Only tensors that require grad, or have a history, carry the Autograd key, so an op on
// plain tensors never reaches this kernel: it costs nothing to apps that do not train.
// When it runs it checks the tensor arguments' metadata; if none requires grad (a tensor
// whose history was cleared) it passes the call on. Otherwise it refuses what PyTorch
// refuses (out= variants, in-place writes to leaves that require grad and to their
// views), saves the arguments the op's formula reads, runs the op below Autograd
// (redispatch), and gives each floating-point result a history: output i of a new node
// whose next edges lead to the inputs' own nodes (or leaves' accumulators). An in-place
// op rebases the written tensor's history onto the new node. Ops without a formula get
// a node that fails in backward, naming the op and the input.
//
// Ops with a formula have this kernel registered for their own Autograd entry, with
// their OpInfo as its state, so recording looks nothing up; every other op reaches it as
// the Autograd key's fallback and finds its OpInfo in a table built on first use.

std::vector<Formula>& formula_list() {
  static std::vector<Formula> formulas;
  return formulas;
}

struct OpTable {
  std::shared_mutex mutex;
  std::unordered_map<const LoomOperator*, std::unique_ptr<OpInfo>> infos;
};
OpTable& op_table() {
  static OpTable table;
  return table;
}

std::string node_name_of(const std::string& short_name) {
  std::string out;
  bool upper = true;
  for (char c : short_name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Backward0";
}

// Reads argument names and alias annotations from the schema text, e.g.
// "loom::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)".
void parse_schema_text(const std::string& schema, OpInfo& info) {
  size_t open = schema.find('(');
  if (open == std::string::npos) return;
  int depth = 0;
  bool keyword_only = false;
  std::string token;
  auto finish = [&] {
    size_t b = token.find_first_not_of(' ');
    if (b == std::string::npos) return;
    std::string t = token.substr(b);
    token.clear();
    if (t == "*") {
      keyword_only = true;
      return;
    }
    std::string decl = t.substr(0, t.find('='));
    while (!decl.empty() && decl.back() == ' ') decl.pop_back();
    size_t space = decl.rfind(' ');
    const size_t index = info.arg_names.size();
    info.arg_names.push_back(space == std::string::npos ? decl : decl.substr(space + 1));
    size_t annotation = decl.find("Tensor(");
    if (annotation != std::string::npos && annotation == 0) {
      const bool writes = decl.find("!)") != std::string::npos;
      if (writes) {
        info.mutable_args |= uint64_t{1} << index;
        if (decl.find("[]") != std::string::npos) info.lists_only = true;
        if (keyword_only) info.is_out = true;
      } else if (index == 0) {
        info.is_view = true;
      }
    }
  };
  size_t i = open + 1;
  for (; i < schema.size(); ++i) {
    char c = schema[i];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') {
      if (depth == 0) break;
      --depth;
    }
    if (c == ',' && depth == 0) {
      finish();
    } else {
      token += c;
    }
  }
  finish();
  const size_t arrow = schema.find("->", i);
  if (arrow != std::string::npos && schema.find("[]", arrow) != std::string::npos &&
      schema.find("Tensor(", arrow) == std::string::npos) {
    info.lists_only = true;  // a fresh Tensor[] result (views such as split alias their input)
  }
}

std::unique_ptr<OpInfo> make_info(const LoomOperator* op) {
  auto info = std::make_unique<OpInfo>();
  info->op = op;
  info->name = sdk::host().op_name(op);
  std::string base =
      info->name.substr(info->name.find("::") == std::string::npos ? 0 : info->name.find("::") + 2);
  info->short_name = base.substr(0, base.find('.'));
  info->node_name = node_name_of(info->short_name);
  parse_schema_text(sdk::host().op_schema(op), *info);
  return info;
}

// The dtypes whose results get a history: the floating and the complex ones (an FFT's
// spectrum carries its input's gradient).
bool is_floating(LoomDType d) {
  return (sdk::dtypes::floating | sdk::dtypes::complex).contains(d);
}

bool needs_grad(LoomTensor* t) {
  return t != nullptr && requires_grad(Tensor::borrow(t));
}

// The metadata of the call's first tensor arguments, read once per call.
constexpr size_t kKnownMetas = 8;
using KnownMetas = std::array<AutogradMeta*, kKnownMetas>;

bool any_needs_grad(const LoomKernelCall& call, KnownMetas& metas) {
  bool any = false;
  for (size_t i = 0; i < call.num_args; ++i) {
    const LoomValue& v = call.args[i];
    if (v.tag == LOOM_VALUE_TENSOR) {
      AutogradMeta* m = meta_of(Tensor::borrow(v.u.tensor));
      if (i < kKnownMetas) metas[i] = m;
      any = any || (m != nullptr && m->needs_grad());
    } else if (v.tag == LOOM_VALUE_TENSOR_LIST) {
      for (uint32_t k = 0; k < v.length && !any; ++k) any = needs_grad(v.u.tensors[k]);
    }
  }
  return any;
}

void redispatch(const LoomKernelCall& call) {
  sdk::check(sdk::host().redispatch(call.op, call.key_set, call.args, call.num_args, call.returns,
                                    call.num_returns));
}

// Runs the op below Autograd with the Autograd key excluded, so the ops its kernels call
// from the top (an in-place variant's copy back into self, a decomposition's pieces
// under a formula) are not recorded a second time.
void redispatch_below_autograd(const LoomKernelCall& call) {
  sdk::redispatch_with_keys(call, {}, {LOOM_KEY_AUTOGRAD});
}

// In-place writes PyTorch refuses: to a leaf that requires grad, or to a view of one.
void check_inplace(const OpInfo& info, const LoomKernelCall& call) {
  if (info.mutable_args == 0) return;
  for (size_t i = 0; i < call.num_args; ++i) {
    if (!(info.mutable_args >> i & 1) || call.args[i].tag != LOOM_VALUE_TENSOR) continue;
    const AutogradMeta* m = meta_of(Tensor::borrow(call.args[i].u.tensor));
    if (m != nullptr && m->is_leaf() && m->requires_grad) {
      throw sdk::Error("[" + info.name + "] a leaf tensor that requires grad ('" +
                       info.arg_names[i] +
                       "') is being used in an in-place operation; wrap it in "
                       "loom::NoGradGuard or write to a copy");
    }
  }
  for (size_t i = 0; i < call.num_args; ++i) {
    if (!(info.mutable_args >> i & 1) || call.args[i].tag != LOOM_VALUE_TENSOR) continue;
    LoomTensor* base = Tensor::borrow(call.args[i].u.tensor).view_base();
    if (base == nullptr) continue;
    const AutogradMeta* bm = meta_of(Tensor::borrow(base));
    if (bm != nullptr && bm->is_leaf() && bm->requires_grad) {
      throw sdk::Error("[" + info.name + "] a view of a leaf tensor that requires grad ('" +
                       info.arg_names[i] + "') is being used in an in-place operation");
    }
  }
}

// An argument the op is about to write in place, saved for a formula that reads its
// old values (mul_'s other needs the old self): a copy, as PyTorch keeps original_self.
// The copy keeps the history the old values had (`history`, the argument's gradient edge
// before the write), so a double backward differentiates through it (gelu_'s formula
// reads the old self).
SavedTensor save_original(const Tensor& t, const Edge& history) {
  sdk::LocalKeyGuard no_grad({}, {LOOM_KEY_AUTOGRAD});
  SavedTensor s;
  s.data = sdk::op::clone(t);
  s.version = sdk::version(s.data);
  s.history = history.node;
  s.history_nr = history.input_nr;
  pack_if_hooked(s);
  return s;
}

void copy_value(const LoomValue& v, SavedArgument& a) {
  a.value = v;
  switch (v.tag) {
    case LOOM_VALUE_INT_LIST:
      a.owned().ints.assign(v.u.ints, v.u.ints + v.length);
      a.value.u.ints = a.storage->ints.data();
      break;
    case LOOM_VALUE_DOUBLE_LIST:
      a.owned().doubles.assign(v.u.doubles, v.u.doubles + v.length);
      a.value.u.doubles = a.storage->doubles.data();
      break;
    case LOOM_VALUE_STRING:
      a.owned().str.assign(v.u.str, v.length);
      a.value.u.str = a.storage->str.c_str();
      break;
    case LOOM_VALUE_BOOL_LIST:
      a.value.tag = LOOM_VALUE_NONE;  // no formula reads one
      break;
    default:
      break;
  }
}

// Whether return r is one of the call's tensor arguments (an op may return its input).
bool returns_an_argument(const LoomKernelCall& call, size_t r) {
  for (size_t i = 0; i < call.num_args; ++i) {
    if (call.args[i].tag == LOOM_VALUE_TENSOR &&
        call.args[i].u.tensor == call.returns[r].u.tensor) {
      return true;
    }
  }
  return false;
}

bool returns_written_argument(const LoomKernelCall& call, size_t r, const OpInfo& info) {
  if (call.returns[r].tag != LOOM_VALUE_TENSOR) return false;
  for (size_t i = 0; i < call.num_args; ++i) {
    if ((info.mutable_args >> i & 1) && call.args[i].tag == LOOM_VALUE_TENSOR &&
        call.args[i].u.tensor == call.returns[r].u.tensor) {
      return true;
    }
  }
  return false;
}

// Records each result's shape on `node` (what gradients flowing into it must look like),
// saves the results `saved` asks for, and gives the floating-point results allowed by
// `mask` a history at `node`; an in-place op's result is the written argument itself,
// whose history is rebased (and, for a view, its base's: rebase_view_write).
void finish_outputs(const std::shared_ptr<Node>& node, const OpInfo& info,
                    const LoomKernelCall& call, uint32_t mask, uint32_t saved,
                    std::vector<SavedTensor>* results) {
  sdk::trace::sequence(node->sequence_nr);  // the op's link to its backward in a profile
  node->input_metadata.resize(call.num_returns);
  if (saved != 0) results->resize(call.num_returns);
  for (size_t r = 0; r < call.num_returns; ++r) {
    if (call.returns[r].tag != LOOM_VALUE_TENSOR) continue;
    Tensor out = Tensor::borrow(call.returns[r].u.tensor);
    InputMetadata& meta = node->input_metadata[r];
    meta.sizes.assign(out.sizes());
    meta.dtype = out.dtype();
    meta.device = out.device();
    const bool written = info.mutable_args != 0 && returns_written_argument(call, r, info);
    if (saved >> r & 1) {
      (*results)[r] = save_output(out, node, static_cast<uint32_t>(r), written ? 1 : 0);
    }
    if (!(mask >> r & 1) || !is_floating(meta.dtype)) continue;
    if (!written) {
      if (returns_an_argument(call, r)) {
        set_history(out, node, static_cast<uint32_t>(r));
      } else {
        set_new_history(out, node, static_cast<uint32_t>(r), info.is_view);
      }
      continue;
    }
    // A write in place through a view rebases the view's base too.
    if (LoomTensor* base = out.view_base()) {
      rebase_view_write(node, out, Tensor::borrow(base));
    } else {
      set_history(out, node, static_cast<uint32_t>(r));
    }
  }
}

void record_unimplemented(const OpInfo& info, const LoomKernelCall& call) {
  std::string input = "self";
  absl::InlinedVector<Edge, 3> edges;
  for (size_t i = 0; i < call.num_args; ++i) {
    const LoomValue& v = call.args[i];
    if (v.tag == LOOM_VALUE_TENSOR) {
      Edge e = gradient_edge(Tensor::borrow(v.u.tensor));
      if (e.valid() && edges.empty() && i < info.arg_names.size()) input = info.arg_names[i];
      edges.push_back(std::move(e));
    }
  }
  redispatch_below_autograd(call);
  auto node = std::make_shared<NotImplementedNode>(&info, input);
  node->next_edges = std::move(edges);
  finish_outputs(node, info, call, ~0u, 0, nullptr);
}

void record(const OpInfo& info, const LoomKernelCall& call, const KnownMetas& metas) {
  if (info.is_out) {
    throw sdk::Error("[" + info.name +
                     "] out= variants do not support automatic differentiation, but an "
                     "argument requires grad");
  }
  const Formula* f = info.formula;
  if (f != nullptr && f->refusal != nullptr) {
    throw sdk::Error("[" + info.name + "] " + f->refusal, LOOM_STATUS_INVALID_ARGUMENT);
  }
  check_inplace(info, call);
  if (f == nullptr && info.lists_only) {
    // Results in lists get no history: refuse rather than detach them silently.
    throw sdk::Error("[" + info.name +
                         "] does not support automatic differentiation, but a tensor of its "
                         "lists requires grad; call it under loom::NoGradGuard, as optimizers do",
                     LOOM_STATUS_UNIMPLEMENTED);
  }
  if (f != nullptr && !f->differentiable) {
    redispatch_below_autograd(call);
    return;
  }
  if (f == nullptr) {
    record_unimplemented(info, call);
    return;
  }
  auto node = make_pooled<FormulaNode>(&info);
  node->args.resize(call.num_args);
  node->next_edges.reserve(call.num_args);
  for (size_t i = 0; i < call.num_args; ++i) {
    const LoomValue& v = call.args[i];
    SavedArgument& a = node->args[i];
    const bool save = f->saved_inputs >> i & 1;
    const bool save_shape = f->saved_layouts >> i & 1;
    if (v.tag == LOOM_VALUE_TENSOR) {
      a.value.tag = LOOM_VALUE_TENSOR;
      a.first_edge = static_cast<int32_t>(node->next_edges.size());
      a.num_tensors = 1;
      Tensor t = Tensor::borrow(v.u.tensor);
      node->next_edges.push_back(i < kKnownMetas ? gradient_edge(t, metas[i]) : gradient_edge(t));
      if (save) {
        a.saved.push_back(info.mutable_args >> i & 1 ? save_original(t, node->next_edges.back())
                                                     : save_input(t, node->next_edges.back()));
      }
      if (save_shape) a.saved.push_back(save_layout(t));
    } else if (v.tag == LOOM_VALUE_TENSOR_LIST) {
      a.value.tag = LOOM_VALUE_TENSOR_LIST;
      a.value.length = v.length;
      a.first_edge = static_cast<int32_t>(node->next_edges.size());
      a.num_tensors = v.length;
      for (uint32_t k = 0; k < v.length; ++k) {
        if (v.u.tensors[k] == nullptr) {
          node->next_edges.emplace_back();
          a.owned().list_sizes.emplace_back();
          if (save) a.saved.emplace_back();
          continue;
        }
        Tensor t = Tensor::borrow(v.u.tensors[k]);
        a.owned().list_sizes.emplace_back(t.sizes());
        node->next_edges.push_back(gradient_edge(t));
        if (save) a.saved.push_back(save_input(t, node->next_edges.back()));
      }
    } else {
      copy_value(v, a);
    }
  }
  redispatch_below_autograd(call);
  finish_outputs(node, info, call, f->differentiable_outputs, f->saved_outputs, &node->results);
}

}  // namespace

void build_formula_table() {
  FormulaTable table;
#define LOOM_FAMILY(family) register_##family##_formulas(table);
#include "autograd_formula_families.inc"
#undef LOOM_FAMILY
  formula_list() = table.all();
}

const std::vector<Formula>& all_formulas() {
  return formula_list();
}

const OpInfo& op_info(const LoomOperator* op) {
  OpTable& table = op_table();
  {
    std::shared_lock<std::shared_mutex> lock(table.mutex);
    auto it = table.infos.find(op);
    if (it != table.infos.end()) return *it->second;
  }
  std::unique_ptr<OpInfo> info = make_info(op);
  for (const Formula& f : formula_list()) {
    if (info->name == f.op) info->formula = &f;
  }
  std::unique_lock<std::shared_mutex> lock(table.mutex);
  auto [it, inserted] = table.infos.emplace(op, std::move(info));
  return *it->second;
}

LoomError* autograd_kernel(void* state, const LoomKernelCall* call) noexcept {
  return sdk::catch_all([&] {
    KnownMetas metas{};
    if (!any_needs_grad(*call, metas)) {
      redispatch(*call);
      return;
    }
    const OpInfo& info = state != nullptr ? *static_cast<const OpInfo*>(state) : op_info(call->op);
    record(info, *call, metas);
  });
}

// --- backward of recorded calls ---

// The gradients go to a vector of this call's own: backward calls on several threads may
// run one node (a shared graph kept with retain_graph) at once.
std::vector<Tensor> FormulaNode::apply(std::vector<Tensor>&& grads) {
  std::vector<Tensor> grad_inputs(next_edges.size());
  BackwardContext context(*this, grads, grad_inputs, current_create_graph());
  info->formula->backward(context);
  return grad_inputs;
}

void FormulaNode::release_saved() {
  for (SavedArgument& a : args) a.saved.clear();
  results.clear();
}

std::vector<Tensor> NotImplementedNode::apply(std::vector<Tensor>&&) {
  throw sdk::Error("[" + info->name + "] has no derivative for input '" + input_name + "'",
                   LOOM_STATUS_UNIMPLEMENTED);
}

// --- BackwardContext ---

const SavedArgument& BackwardContext::argument(size_t arg) const {
  if (arg >= node_.args.size()) {
    throw sdk::Error("[autograd] the formula of " + node_.info->name + " reads argument " +
                     std::to_string(arg) + " but the op has " + std::to_string(node_.args.size()));
  }
  return node_.args[arg];
}

const char* BackwardContext::op_name() const {
  return node_.info->name.c_str();
}

bool BackwardContext::has_grad(size_t output) const {
  return output < grads_.size() && grads_[output].defined();
}

const Tensor& BackwardContext::grad(size_t output) {
  if (output >= grads_.size()) {
    throw sdk::Error("[autograd] the formula of " + node_.info->name +
                     " reads the gradient of return " + std::to_string(output) +
                     " but the op has " + std::to_string(grads_.size()));
  }
  if (!grads_[output].defined()) {
    const InputMetadata& meta = node_.input_metadata[output];
    grads_[output] = sdk::full(meta.sizes.span(), 0.0, meta.dtype, meta.device);
  }
  return grads_[output];
}

namespace {
[[noreturn]] void freed(const OpInfo& info) {
  throw sdk::Error("[autograd] trying to backward through the graph a second time: the tensors " +
                   info.short_name +
                   " saved for backward were freed by the first backward; pass "
                   "retain_graph=true to the first backward");
}
}  // namespace

Tensor BackwardContext::input(size_t arg) const {
  return input(arg, 0);
}

Tensor BackwardContext::input(size_t arg, size_t element) const {
  const SavedArgument& a = argument(arg);
  if (node_.released) freed(*node_.info);
  if (element >= a.saved.size() || !a.saved[element].defined()) {
    throw sdk::Error("[autograd] the formula of " + node_.info->name + " reads argument '" +
                     node_.info->arg_names[arg] + "', which it did not save");
  }
  return unpack(a.saved[element], node_.info->short_name.c_str(), create_graph_);
}

Tensor BackwardContext::layout(size_t arg) const {
  const SavedArgument& a = argument(arg);
  if (a.saved.empty() || !a.saved[0].layout_only) {
    throw sdk::Error("[autograd] the formula of " + node_.info->name + " reads the layout of '" +
                     node_.info->arg_names[arg] + "', which it did not save");
  }
  return unpack(a.saved[0], node_.info->short_name.c_str(), false);
}

Tensor BackwardContext::result(size_t output) const {
  if (node_.released) freed(*node_.info);
  if (output >= node_.results.size() || !node_.results[output].defined()) {
    throw sdk::Error("[autograd] the formula of " + node_.info->name + " reads return " +
                     std::to_string(output) + ", which it did not save");
  }
  return unpack(node_.results[output], node_.info->short_name.c_str(), create_graph_);
}

int64_t BackwardContext::int_arg(size_t arg) const {
  return argument(arg).value.u.i;
}

double BackwardContext::double_arg(size_t arg) const {
  const LoomValue& v = argument(arg).value;
  return v.tag == LOOM_VALUE_DOUBLE ? v.u.d : static_cast<double>(v.u.i);
}

bool BackwardContext::bool_arg(size_t arg) const {
  return argument(arg).value.u.i != 0;
}

sdk::Scalar BackwardContext::scalar_arg(size_t arg) const {
  const LoomValue& v = argument(arg).value;
  sdk::Scalar s;
  s.tag = static_cast<LoomValueTag>(v.tag);
  if (v.tag == LOOM_VALUE_DOUBLE) {
    s.d = v.u.d;
  } else {
    s.i = v.u.i;
  }
  return s;
}

std::span<const int64_t> BackwardContext::ints(size_t arg) const {
  const SavedArgument& a = argument(arg);
  if (!a.storage) return {};
  return a.storage->ints;
}

std::string_view BackwardContext::str_arg(size_t arg) const {
  const SavedArgument& a = argument(arg);
  return a.storage ? std::string_view(a.storage->str) : std::string_view();
}

bool BackwardContext::is_none(size_t arg) const {
  return argument(arg).value.tag == LOOM_VALUE_NONE;
}

size_t BackwardContext::list_length(size_t arg) const {
  return argument(arg).num_tensors;
}

bool BackwardContext::needs(size_t arg, size_t element) const {
  const SavedArgument& a = argument(arg);
  if (a.first_edge < 0 || element >= a.num_tensors) return false;
  return node_.next_edges[a.first_edge + element].valid();
}

std::span<const int64_t> BackwardContext::input_sizes(size_t arg, size_t element) const {
  const SavedArgument& a = argument(arg);
  if (!needs(arg, element)) {
    throw sdk::Error("[autograd] the formula of " + node_.info->name + " reads the shape of '" +
                     node_.info->arg_names[arg] + "', which needs no gradient");
  }
  const Edge& e = node_.next_edges[a.first_edge + element];
  return e.node->input_metadata[e.input_nr].sizes.span();
}

LoomDType BackwardContext::input_dtype(size_t arg, size_t element) const {
  input_sizes(arg, element);  // checks
  const Edge& e = node_.next_edges[argument(arg).first_edge + element];
  return e.node->input_metadata[e.input_nr].dtype;
}

std::span<const int64_t> BackwardContext::list_sizes(size_t arg, size_t element) const {
  const SavedArgument& a = argument(arg);
  if (!a.storage || element >= a.storage->list_sizes.size()) {
    throw sdk::Error("[autograd] the formula of " + node_.info->name + " reads element " +
                     std::to_string(element) + " of '" + node_.info->arg_names[arg] +
                     "', which is not a tensor list of that length");
  }
  return a.storage->list_sizes[element].span();
}

bool BackwardContext::has_input(size_t arg, size_t element) const {
  const SavedArgument& a = argument(arg);
  return element < a.saved.size() && a.saved[element].defined();
}

std::span<const int64_t> BackwardContext::output_sizes(size_t output) const {
  return node_.input_metadata.at(output).sizes.span();
}

void BackwardContext::set_grad(size_t arg, size_t element, Tensor grad) {
  const SavedArgument& a = argument(arg);
  grad_inputs_[a.first_edge + element] = std::move(grad);
}

}  // namespace loom::autograd
