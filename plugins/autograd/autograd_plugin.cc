// The autograd plugin: claims the Autograd key for every backend (its kernel records the
// graph, Note [Recording] in record.cc) and defines the autograd:: ops through which
// frontends reach tensors' gradients, backward, hooks and anomaly mode. Built like a
// vendor's plugin: the SDK alone.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine.h"
#include "graph.h"
#include "loom/autograd_hooks.h"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/plugin.hpp"
#include "record.h"

namespace loom::autograd {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw sdk::Error("[autograd] " + message);
}

bool is_floating(const Tensor& t) {
  return sdk::dtypes::floating.contains(t.dtype());
}

void set_requires_grad(const Tensor& self, bool wanted) {
  AutogradMeta* m = meta_of(self);
  if (m != nullptr && !m->is_leaf()) {
    if (wanted) return;
    fail(
        "requires_grad can only be changed on leaf tensors; use detach() on a tensor that "
        "has a history");
  }
  if (!wanted) {
    if (m == nullptr) return;
    std::lock_guard<std::mutex> lock(m->mutex);
    m->requires_grad = false;
    m->grad_accumulator.reset();
    sdk::set_key(self, LOOM_KEY_AUTOGRAD, false);
    return;
  }
  if (!is_floating(self)) {
    fail(std::string("only tensors of a floating-point dtype can require grad, found ") +
         sdk::dtype_name(self.dtype()));
  }
  AutogradMeta& meta = ensure_meta(self);
  std::lock_guard<std::mutex> lock(meta.mutex);
  meta.requires_grad = true;
  sdk::set_key(self, LOOM_KEY_AUTOGRAD, true);
}

bool tensor_requires_grad(const Tensor& self) {
  return requires_grad(self);
}

bool is_leaf(const Tensor& self) {
  const AutogradMeta* m = meta_of(self);
  return m == nullptr || m->is_leaf();
}

// autograd::grad(Tensor self) -> Tensor? : the accumulated gradient, None before any.
LoomError* grad_kernel(void*, const LoomKernelCall* call) noexcept {
  return sdk::catch_all([&] {
    Tensor self = Tensor::borrow(call->args[0].u.tensor);
    std::shared_ptr<GradCell> cell = grad_cell(self, false);
    Tensor g;
    if (cell) {
      std::lock_guard<std::mutex> lock(cell->mutex);
      g = cell->grad;
    }
    if (g.defined()) {
      call->returns[0].tag = LOOM_VALUE_TENSOR;
      call->returns[0].u.tensor = g.release_to_host();
    }
  });
}

void set_grad(const Tensor& self, std::optional<Tensor> grad) {
  if (grad && grad->defined()) {
    if (!std::equal(grad->sizes().begin(), grad->sizes().end(), self.sizes().begin(),
                    self.sizes().end())) {
      fail("the assigned grad has a different shape than the tensor");
    }
    if (grad->dtype() != self.dtype())
      fail("the assigned grad has a different dtype than the tensor");
  }
  std::shared_ptr<GradCell> cell = grad_cell(self, grad.has_value());
  if (!cell) return;
  std::lock_guard<std::mutex> lock(cell->mutex);
  cell->grad = grad ? *grad : Tensor();
}

void retain_grad(const Tensor& self) {
  AutogradMeta* m = meta_of(self);
  if (m == nullptr || !m->needs_grad())
    fail("retain_grad() on a tensor that does not require grad");
  if (m->is_leaf()) return;  // leaves keep their grad anyway
  std::lock_guard<std::mutex> lock(m->mutex);
  if (m->retains_grad) return;
  m->retains_grad = true;
  if (!m->cell) m->cell = std::make_shared<GradCell>();
  std::lock_guard<std::mutex> hooks(m->grad_fn->hooks_mutex);
  m->grad_fn->retained.emplace_back(m->output_nr, m->cell);
}

bool retains_grad(const Tensor& self) {
  const AutogradMeta* m = meta_of(self);
  return m != nullptr && m->retains_grad;
}

Tensor detach(const Tensor& self) {
  Tensor out;
  {
    sdk::LocalKeyGuard no_grad({}, {LOOM_KEY_AUTOGRAD});
    out = sdk::op::alias(self);
  }
  sdk::set_key(out, LOOM_KEY_AUTOGRAD, false);
  return out;
}

// Writes `text` as a str return (memory from the host, which the caller frees).
void return_string(const LoomKernelCall* call, const std::string& text) {
  char* copy = static_cast<char*>(sdk::host().list_allocate(text.size() + 1));
  if (copy == nullptr) {
    throw sdk::Error("[autograd] out of memory", LOOM_STATUS_RESOURCE_EXHAUSTED);
  }
  std::memcpy(copy, text.c_str(), text.size() + 1);
  call->returns[0].tag = LOOM_VALUE_STRING;
  call->returns[0].length = static_cast<uint32_t>(text.size());
  call->returns[0].u.str = copy;
}

// autograd::grad_fn_name(Tensor self) -> str : "MulBackward0", or "" for a leaf.
LoomError* grad_fn_name_kernel(void*, const LoomKernelCall* call) noexcept {
  return sdk::catch_all([&] {
    const AutogradMeta* m = meta_of(Tensor::borrow(call->args[0].u.tensor));
    return_string(call, m != nullptr && m->grad_fn ? m->grad_fn->name() : "");
  });
}

std::vector<Tensor> tensors_of(const LoomValue& v) {
  std::vector<Tensor> out;
  for (uint32_t i = 0; i < v.length; ++i) out.push_back(Tensor::borrow(v.u.tensors[i]));
  return out;
}

// The roots of a backward: each output's edge and its starting gradient.
void add_roots(BackwardRequest& request, const std::vector<Tensor>& outputs,
               const std::vector<Tensor>& grads, const char* what) {
  if (!grads.empty() && grads.size() != outputs.size()) {
    fail(std::string(what) + " got " + std::to_string(grads.size()) + " gradients for " +
         std::to_string(outputs.size()) + " tensors");
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    Edge edge = gradient_edge(t);
    if (!edge.valid()) {
      fail("element " + std::to_string(i) +
           " of the tensors does not require grad and has no "
           "grad_fn");
    }
    Tensor g = i < grads.size() ? grads[i] : Tensor();
    if (!g.defined()) {
      if (t.numel() != 1) {
        fail("a gradient can be created implicitly only for outputs of one element; element " +
             std::to_string(i) + " has " + std::to_string(t.numel()) +
             " (pass its gradient explicitly)");
      }
      g = sdk::ones_like(t);
    } else if (!std::equal(g.sizes().begin(), g.sizes().end(), t.sizes().begin(),
                           t.sizes().end())) {
      fail("the gradient for element " + std::to_string(i) +
           " has a different shape than the tensor");
    }
    request.roots.push_back(std::move(edge));
    request.root_grads.push_back(std::move(g));
  }
}

// autograd::backward(Tensor[] tensors, Tensor?[] grad_tensors, bool retain_graph,
//                    bool create_graph, Tensor[] inputs) -> ()
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grads,
              bool retain_graph, bool create_graph, const std::vector<Tensor>& inputs) {
  BackwardRequest request;
  request.keep_graph = retain_graph;
  request.create_graph = create_graph;
  add_roots(request, tensors, grads, "backward");
  std::vector<std::shared_ptr<GradCell>> non_leaf_cells;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    if (!e.valid()) fail("backward: input " + std::to_string(i) + " does not require grad");
    request.inputs.push_back(std::move(e));
    non_leaf_cells.push_back(is_leaf(inputs[i]) ? nullptr : grad_cell(inputs[i], true));
  }
  std::vector<Tensor> captured = run_backward(request);
  // Non-leaf inputs get their gradient in .grad too (leaves got it from their node).
  for (size_t i = 0; i < non_leaf_cells.size(); ++i) {
    if (!non_leaf_cells[i] || !captured[i].defined()) continue;
    std::lock_guard<std::mutex> lock(non_leaf_cells[i]->mutex);
    Tensor& g = non_leaf_cells[i]->grad;
    g = g.defined() ? g + captured[i] : captured[i];
  }
}

// autograd::grad_of(Tensor[] outputs, Tensor[] inputs, Tensor?[] grad_outputs,
//                   bool retain_graph, bool create_graph, bool allow_unused) -> Tensor?[]
LoomError* grad_of_kernel(void*, const LoomKernelCall* call) noexcept {
  return sdk::catch_all([&] {
    std::vector<Tensor> outputs = tensors_of(call->args[0]);
    std::vector<Tensor> inputs = tensors_of(call->args[1]);
    std::vector<Tensor> grads = tensors_of(call->args[2]);
    BackwardRequest request;
    request.keep_graph = call->args[3].u.i != 0;
    request.create_graph = call->args[4].u.i != 0;
    const bool allow_unused = call->args[5].u.i != 0;
    request.accumulate = false;
    add_roots(request, outputs, grads, "grad");
    for (size_t i = 0; i < inputs.size(); ++i) {
      Edge e = gradient_edge(inputs[i]);
      if (!e.valid()) fail("grad: input " + std::to_string(i) + " does not require grad");
      request.inputs.push_back(std::move(e));
    }
    std::vector<Tensor> result = run_backward(request);
    for (size_t i = 0; i < result.size(); ++i) {
      if (!result[i].defined() && !allow_unused) {
        fail("grad: input " + std::to_string(i) +
             " was not used to compute the outputs (pass allow_unused=true to get None)");
      }
    }
    auto** items =
        static_cast<LoomTensor**>(sdk::host().list_allocate(result.size() * sizeof(LoomTensor*)));
    if (items == nullptr)
      throw sdk::Error("[autograd] out of memory", LOOM_STATUS_RESOURCE_EXHAUSTED);
    for (size_t i = 0; i < result.size(); ++i) {
      items[i] = result[i].defined() ? result[i].release_to_host() : nullptr;
    }
    call->returns[0].tag = LOOM_VALUE_TENSOR_LIST;
    call->returns[0].length = static_cast<uint32_t>(result.size());
    call->returns[0].u.tensors = items;
  });
}

// A hook from a frontend (loom/autograd_hooks.h), released with the last copy.
struct ForeignHook {
  ForeignHook(LoomGradHookFn f, void* c, LoomGradHookRelease r) : fn(f), context(c), release(r) {}
  ForeignHook(const ForeignHook&) = delete;
  ForeignHook& operator=(const ForeignHook&) = delete;
  ~ForeignHook() {
    if (release != nullptr) release(context);
  }
  LoomGradHookFn fn;
  void* context;
  LoomGradHookRelease release;
};

Hook make_hook(int64_t fn, int64_t context, int64_t release) {
  if (fn == 0) fail("register_hook: the callback is null");
  auto hook = std::make_shared<ForeignHook>(reinterpret_cast<LoomGradHookFn>(fn),
                                            reinterpret_cast<void*>(context),
                                            reinterpret_cast<LoomGradHookRelease>(release));
  return [hook](const Tensor& grad) {
    LoomTensor* replacement = nullptr;
    sdk::check(hook->fn(hook->context, grad.get(), &replacement));
    return replacement != nullptr ? Tensor::adopt(replacement) : Tensor();
  };
}

void register_hook(const Tensor& self, int64_t fn, int64_t context, int64_t release) {
  Hook hook = make_hook(fn, context, release);
  AutogradMeta* m = meta_of(self);
  if (m == nullptr || !m->needs_grad()) {
    fail("cannot register a hook on a tensor that does not require grad");
  }
  Edge edge = gradient_edge(self);
  std::lock_guard<std::mutex> lock(edge.node->hooks_mutex);
  edge.node->pre_hooks.emplace_back(edge.input_nr, std::move(hook));
}

void register_post_accumulate_grad_hook(const Tensor& self, int64_t fn, int64_t context,
                                        int64_t release) {
  Hook hook = make_hook(fn, context, release);
  AutogradMeta* m = meta_of(self);
  if (m == nullptr || !m->is_leaf() || !m->requires_grad) {
    fail("post-accumulate-grad hooks can be registered only on leaf tensors that require grad");
  }
  std::shared_ptr<GradCell> cell = grad_cell(self, true);
  std::lock_guard<std::mutex> lock(cell->mutex);
  cell->post_accumulate_hooks.push_back(std::move(hook));
}

void set_anomaly_enabled(bool enabled) {
  set_anomaly_mode(enabled);
}

bool is_anomaly_enabled() {
  return anomaly_mode_enabled();
}

// The ops that have a formula (or are marked not differentiable), for the conformance
// tests: "loom::mul.Tensor", ...; marked ones end in " (not differentiable)".
std::vector<std::string>& inplace_twins() {
  static std::vector<std::string> names;
  return names;
}

std::vector<std::string> formula_names() {
  std::vector<std::string> out;
  for (const Formula& f : all_formulas()) {
    out.push_back(std::string(f.op) + (f.differentiable ? "" : " (not differentiable)"));
  }
  for (const std::string& name : inplace_twins()) out.push_back(name);
  return out;
}

LoomError* formulas_kernel(void*, const LoomKernelCall* call) noexcept {
  return sdk::catch_all([&] {
    std::string joined;
    for (const std::string& n : formula_names()) joined += n + "\n";
    return_string(call, joined);
  });
}

// Registers a control op's kernel for every backend and for tensors that carry the
// Autograd key (whose fallback would otherwise take the call).
void control(sdk::Registrar& r, const char* schema, const char* name, LoomKernelFn fn) {
  r.def(schema);
  r.impl(name, LOOM_KEY_COMPOSITE_EXPLICIT, fn);
  r.impl(name, LOOM_KEY_AUTOGRAD, fn);
}

// The in-place variant's name of "ns::name.overload": "ns::name_.overload".
std::string inplace_name(const std::string& op) {
  size_t dot = op.find('.', op.find("::") + 2);
  if (dot == std::string::npos) return op + "_";
  return op.substr(0, dot) + "_" + op.substr(dot);
}

void register_formula_kernels(sdk::Registrar& r) {
  build_formula_table();
  std::vector<std::string> names;
  for (const Formula& f : all_formulas()) names.push_back(f.op);
  for (const Formula& f : all_formulas()) {
    const LoomOperator* op = r.op(f.op);  // throws for a formula naming no op
    const OpInfo& info = op_info(op);
    r.impl(f.op, LOOM_KEY_AUTOGRAD, &autograd_kernel, const_cast<OpInfo*>(&info));
    // The in-place variant shares the formula unless it has its own.
    std::string inplace = inplace_name(f.op);
    if (std::find(names.begin(), names.end(), inplace) != names.end()) continue;
    const LoomOperator* inplace_op = nullptr;
    sdk::check(sdk::host().find_op(inplace.c_str(), &inplace_op));
    if (inplace_op == nullptr) continue;
    OpInfo& inplace_info = const_cast<OpInfo&>(op_info(inplace_op));
    inplace_info.formula = &f;
    r.impl(inplace.c_str(), LOOM_KEY_AUTOGRAD, &autograd_kernel, &inplace_info);
    inplace_twins().push_back(inplace + (f.differentiable ? "" : " (not differentiable)"));
  }
}

void init(sdk::Registrar& r) {
  claim_meta_slot();
  control(r, "autograd::set_requires_grad(Tensor self, bool requires_grad) -> ()",
          "autograd::set_requires_grad", &sdk::boxed<&set_requires_grad>);
  control(r, "autograd::requires_grad(Tensor self) -> bool", "autograd::requires_grad",
          &sdk::boxed<&tensor_requires_grad>);
  control(r, "autograd::is_leaf(Tensor self) -> bool", "autograd::is_leaf", &sdk::boxed<&is_leaf>);
  control(r, "autograd::grad(Tensor self) -> Tensor?", "autograd::grad", &grad_kernel);
  control(r, "autograd::set_grad(Tensor self, Tensor? grad) -> ()", "autograd::set_grad",
          &sdk::boxed<&set_grad>);
  control(r, "autograd::retain_grad(Tensor self) -> ()", "autograd::retain_grad",
          &sdk::boxed<&retain_grad>);
  control(r, "autograd::retains_grad(Tensor self) -> bool", "autograd::retains_grad",
          &sdk::boxed<&retains_grad>);
  control(r, "autograd::detach(Tensor self) -> Tensor", "autograd::detach", &sdk::boxed<&detach>);
  control(r, "autograd::grad_fn_name(Tensor self) -> str", "autograd::grad_fn_name",
          &grad_fn_name_kernel);
  control(r,
          "autograd::backward(Tensor[] tensors, Tensor?[] grad_tensors, bool retain_graph, "
          "bool create_graph, Tensor[] inputs) -> ()",
          "autograd::backward", &sdk::boxed<&backward>);
  control(r,
          "autograd::grad_of(Tensor[] outputs, Tensor[] inputs, Tensor?[] grad_outputs, "
          "bool retain_graph, bool create_graph, bool allow_unused) -> Tensor?[]",
          "autograd::grad_of", &grad_of_kernel);
  control(r, "autograd::register_hook(Tensor self, int callback, int context, int release) -> ()",
          "autograd::register_hook", &sdk::boxed<&register_hook>);
  control(r,
          "autograd::register_post_accumulate_grad_hook(Tensor self, int callback, int context, "
          "int release) -> ()",
          "autograd::register_post_accumulate_grad_hook",
          &sdk::boxed<&register_post_accumulate_grad_hook>);
  control(r, "autograd::set_anomaly_enabled(bool enabled) -> ()", "autograd::set_anomaly_enabled",
          &sdk::boxed<&set_anomaly_enabled>);
  control(r, "autograd::is_anomaly_enabled() -> bool", "autograd::is_anomaly_enabled",
          &sdk::boxed<&is_anomaly_enabled>);
  control(r, "autograd::formulas() -> str", "autograd::formulas", &formulas_kernel);
  register_formula_kernels(r);
  r.fallback(LOOM_KEY_AUTOGRAD, &autograd_kernel);
}

}  // namespace
}  // namespace loom::autograd

LOOM_PLUGIN("autograd", "0.1.0", loom::autograd::init)
