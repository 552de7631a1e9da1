// The "loom.autograd" extension table (loom/autograd_api.h): what frontends call for
// requires_grad, .grad, backward, grad, hooks and anomaly mode. Each entry point turns
// exceptions into a LoomError ("[autograd] <entry>: ...").
#include "api_table.h"

#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine.h"
#include "graph.h"
#include "loom/autograd_api.h"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/trace.hpp"
#include "record.h"

namespace loom::autograd {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw sdk::Error("[autograd] " + message);
}

// Runs body for the table entry `entry`; an error's message names the entry.
template <typename F>
LoomError* entry_point(const char* entry, F&& body) noexcept {
  return sdk::catch_all([&] {
    try {
      body();
    } catch (const sdk::Error& e) {
      std::string message = e.what();
      constexpr std::string_view kPrefix = "[autograd] ";
      if (message.rfind(kPrefix, 0) == 0) message.erase(0, kPrefix.size());
      throw sdk::Error(std::string("[autograd] ") + entry + ": " + message, e.code());
    }
  });
}

Tensor tensor_arg(LoomTensor* t, const char* what) {
  if (t == nullptr) fail(std::string("expected a tensor as ") + what + ", found null");
  return Tensor::borrow(t);
}

std::vector<Tensor> tensors_of(LoomTensor* const* items, size_t n, bool nulls_allowed,
                               const char* what) {
  if (n != 0 && items == nullptr) fail(std::string("the ") + what + " array is null");
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i) {
    if (items[i] == nullptr && !nulls_allowed) {
      fail(std::string("element ") + std::to_string(i) + " of the " + what + " is null");
    }
    out.push_back(items[i] != nullptr ? Tensor::borrow(items[i]) : Tensor());
  }
  return out;
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

bool is_leaf(const Tensor& self) {
  const AutogradMeta* m = meta_of(self);
  return m == nullptr || m->is_leaf();
}

void set_grad(const Tensor& self, const Tensor& grad) {
  if (grad.defined()) {
    if (!std::equal(grad.sizes().begin(), grad.sizes().end(), self.sizes().begin(),
                    self.sizes().end())) {
      fail("the assigned grad has a different shape than the tensor");
    }
    if (grad.dtype() != self.dtype()) {
      fail("the assigned grad has a different dtype than the tensor");
    }
  }
  std::shared_ptr<GradCell> cell = grad_cell(self, grad.defined());
  if (!cell) return;
  std::lock_guard<std::mutex> lock(cell->mutex);
  cell->grad = grad;
}

void retain_grad(const Tensor& self) {
  AutogradMeta* m = meta_of(self);
  if (m == nullptr || !m->needs_grad()) fail("the tensor does not require grad");
  if (m->is_leaf()) return;  // leaves keep their grad anyway
  std::lock_guard<std::mutex> lock(m->mutex);
  if (m->retains_grad) return;
  m->retains_grad = true;
  if (!m->cell) m->cell = std::make_shared<GradCell>();
  std::lock_guard<std::mutex> hooks(m->grad_fn->hooks_mutex);
  m->grad_fn->retained.emplace_back(m->output_nr, m->cell);
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

// The roots of a backward: each output's edge and its starting gradient.
void add_roots(BackwardRequest& request, const std::vector<Tensor>& outputs,
               const std::vector<Tensor>& grads) {
  if (!grads.empty() && grads.size() != outputs.size()) {
    fail("got " + std::to_string(grads.size()) + " gradients for " +
         std::to_string(outputs.size()) + " tensors");
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    Edge edge = gradient_edge(t);
    if (!edge.valid()) {
      fail("element " + std::to_string(i) +
           " of the tensors does not require grad and has no grad_fn");
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

BackwardRequest request_of(const LoomBackwardArgs* args) {
  if (args == nullptr || args->struct_size < sizeof(LoomBackwardArgs)) {
    fail("expected LoomBackwardArgs of at least " + std::to_string(sizeof(LoomBackwardArgs)) +
         " bytes, found " +
         (args == nullptr ? std::string("null") : std::to_string(args->struct_size)));
  }
  BackwardRequest request;
  request.keep_graph = args->retain_graph != 0;
  request.create_graph = args->create_graph != 0;
  add_roots(request, tensors_of(args->tensors, args->num_tensors, false, "tensors"),
            tensors_of(args->grad_tensors, args->num_grad_tensors, true, "grad_tensors"));
  return request;
}

void backward(const LoomBackwardArgs* args) {
  sdk::trace::Range range("autograd::backward");
  BackwardRequest request = request_of(args);
  std::vector<Tensor> inputs = tensors_of(args->inputs, args->num_inputs, false, "inputs");
  std::vector<std::shared_ptr<GradCell>> non_leaf_cells;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    if (!e.valid()) fail("input " + std::to_string(i) + " does not require grad");
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

void grad_of(const LoomBackwardArgs* args) {
  sdk::trace::Range range("autograd::grad");
  BackwardRequest request = request_of(args);
  request.accumulate = false;
  std::vector<Tensor> inputs = tensors_of(args->inputs, args->num_inputs, false, "inputs");
  if (inputs.empty()) fail("expected at least one input, found none");
  if (args->out_grads == nullptr) fail("out_grads is null");
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    if (!e.valid()) fail("input " + std::to_string(i) + " does not require grad");
    request.inputs.push_back(std::move(e));
  }
  std::vector<Tensor> result = run_backward(request);
  for (size_t i = 0; i < result.size(); ++i) {
    if (!result[i].defined() && args->allow_unused == 0) {
      fail("input " + std::to_string(i) +
           " was not used to compute the outputs (pass allow_unused=true to get None)");
    }
  }
  for (size_t i = 0; i < result.size(); ++i) {
    args->out_grads[i] = result[i].defined() ? result[i].release_to_host() : nullptr;
  }
}

// A hook from a frontend (loom/autograd_api.h), released with the last copy.
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

// Takes ownership of `context` first thing, so that it is released even when the
// registration then fails.
std::shared_ptr<ForeignHook> adopt_hook(LoomGradHookFn fn, void* context,
                                        LoomGradHookRelease release) {
  auto hook = std::make_shared<ForeignHook>(fn, context, release);
  if (fn == nullptr) fail("the callback is null");
  return hook;
}

Hook hook_of(std::shared_ptr<ForeignHook> hook) {
  return [hook = std::move(hook)](const Tensor& grad) {
    LoomTensor* replacement = nullptr;
    sdk::check(hook->fn(hook->context, grad.get(), &replacement));
    return replacement != nullptr ? Tensor::adopt(replacement) : Tensor();
  };
}

void register_hook(const Tensor& self, std::shared_ptr<ForeignHook> foreign) {
  AutogradMeta* m = meta_of(self);
  if (m == nullptr || !m->needs_grad()) {
    fail("cannot register a hook on a tensor that does not require grad");
  }
  Edge edge = gradient_edge(self);
  std::lock_guard<std::mutex> lock(edge.node->hooks_mutex);
  edge.node->pre_hooks.emplace_back(edge.input_nr, hook_of(std::move(foreign)));
}

void register_post_accumulate_grad_hook(const Tensor& self, std::shared_ptr<ForeignHook> foreign) {
  AutogradMeta* m = meta_of(self);
  if (m == nullptr || !m->is_leaf() || !m->requires_grad) {
    fail("post-accumulate-grad hooks can be registered only on leaf tensors that require grad");
  }
  std::shared_ptr<GradCell> cell = grad_cell(self, true);
  std::lock_guard<std::mutex> lock(cell->mutex);
  cell->post_accumulate_hooks.push_back(hook_of(std::move(foreign)));
}

// --- the table's entry points ---

LoomError* api_set_requires_grad(LoomTensor* self, int32_t requires_grad) noexcept {
  return entry_point("requires_grad_()",
                     [&] { set_requires_grad(tensor_arg(self, "self"), requires_grad != 0); });
}

LoomError* api_requires_grad(LoomTensor* self, int32_t* out) noexcept {
  return entry_point("requires_grad()", [&] { *out = requires_grad(tensor_arg(self, "self")); });
}

LoomError* api_is_leaf(LoomTensor* self, int32_t* out) noexcept {
  return entry_point("is_leaf()", [&] { *out = is_leaf(tensor_arg(self, "self")); });
}

LoomError* api_grad(LoomTensor* self, LoomTensor** out) noexcept {
  return entry_point("grad()", [&] {
    *out = nullptr;
    std::shared_ptr<GradCell> cell = grad_cell(tensor_arg(self, "self"), false);
    Tensor g;
    if (cell) {
      std::lock_guard<std::mutex> lock(cell->mutex);
      g = cell->grad;
    }
    if (g.defined()) *out = g.release_to_host();
  });
}

LoomError* api_set_grad(LoomTensor* self, LoomTensor* grad) noexcept {
  return entry_point("set_grad()", [&] {
    set_grad(tensor_arg(self, "self"), grad != nullptr ? Tensor::borrow(grad) : Tensor());
  });
}

LoomError* api_retain_grad(LoomTensor* self) noexcept {
  return entry_point("retain_grad()", [&] { retain_grad(tensor_arg(self, "self")); });
}

LoomError* api_retains_grad(LoomTensor* self, int32_t* out) noexcept {
  return entry_point("retains_grad()", [&] {
    const AutogradMeta* m = meta_of(tensor_arg(self, "self"));
    *out = m != nullptr && m->retains_grad;
  });
}

LoomError* api_detach(LoomTensor* self, LoomTensor** out) noexcept {
  return entry_point("detach()",
                     [&] { *out = detach(tensor_arg(self, "self")).release_to_host(); });
}

LoomError* api_grad_fn_name(LoomTensor* self, void* ctx, LoomAutogradTextFn write) noexcept {
  return entry_point("grad_fn_name()", [&] {
    const AutogradMeta* m = meta_of(tensor_arg(self, "self"));
    const std::string name = m != nullptr && m->grad_fn ? m->grad_fn->name() : "";
    write(ctx, name.c_str());
  });
}

LoomError* api_backward(const LoomBackwardArgs* args) noexcept {
  return entry_point("backward()", [&] { backward(args); });
}

LoomError* api_grad_of(const LoomBackwardArgs* args) noexcept {
  return entry_point("autograd::grad()", [&] { grad_of(args); });
}

LoomError* api_register_hook(LoomTensor* self, LoomGradHookFn fn, void* context,
                             LoomGradHookRelease release) noexcept {
  return entry_point("register_hook()", [&] {
    std::shared_ptr<ForeignHook> hook = adopt_hook(fn, context, release);
    register_hook(tensor_arg(self, "self"), std::move(hook));
  });
}

LoomError* api_register_post_accumulate_grad_hook(LoomTensor* self, LoomGradHookFn fn,
                                                  void* context,
                                                  LoomGradHookRelease release) noexcept {
  return entry_point("register_post_accumulate_grad_hook()", [&] {
    std::shared_ptr<ForeignHook> hook = adopt_hook(fn, context, release);
    register_post_accumulate_grad_hook(tensor_arg(self, "self"), std::move(hook));
  });
}

LoomError* api_set_anomaly_enabled(int32_t enabled) noexcept {
  return entry_point("set_detect_anomaly()", [&] { set_anomaly_mode(enabled != 0); });
}

int32_t api_is_anomaly_enabled() noexcept {
  return anomaly_mode_enabled() ? 1 : 0;
}

LoomError* api_visit_formulas(void* ctx, LoomAutogradFormulaFn visit) noexcept {
  return entry_point("visit_formulas()", [&] {
    for (const RecordedOp& op : recorded_ops()) visit(ctx, op.name.c_str(), op.differentiable);
  });
}

// The node of a custom function (apply_function): its backward is the caller's.
class FunctionNode final : public Node {
 public:
  FunctionNode(const LoomFunctionArgs& a, size_t num_inputs)
      : name_(a.name != nullptr && *a.name != '\0' ? a.name : "FunctionBackward"),
        backward_(a.backward),
        context_(a.context),
        release_(a.release),
        num_inputs_(num_inputs) {}
  ~FunctionNode() override {
    if (release_ != nullptr) release_(context_);
  }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    std::vector<LoomTensor*> in;
    for (const Tensor& g : grads) in.push_back(g.defined() ? g.get() : nullptr);
    std::vector<LoomTensor*> out(num_inputs_, nullptr);
    LoomError* err = backward_(context_, in.data(), in.size(), out.data(), out.size());
    std::vector<Tensor> result;
    for (LoomTensor* t : out) result.push_back(t != nullptr ? Tensor::adopt(t) : Tensor());
    sdk::check(err);
    return result;
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  LoomFunctionBackwardFn backward_;
  void* context_;
  LoomGradHookRelease release_;
  size_t num_inputs_;
};

LoomError* api_apply_function(const LoomFunctionArgs* args) noexcept {
  // the context is ours from here on: released once, by the node or on failure
  void* context = args != nullptr ? args->context : nullptr;
  LoomGradHookRelease release = args != nullptr ? args->release : nullptr;
  std::shared_ptr<FunctionNode> node;
  LoomError* err = entry_point("apply_function()", [&] {
    if (args == nullptr || args->struct_size < sizeof(LoomFunctionArgs) ||
        args->backward == nullptr) {
      fail("the arguments are null, too small or have no backward function");
    }
    std::vector<Tensor> inputs = tensors_of(args->inputs, args->num_inputs, false, "inputs");
    std::vector<Tensor> outputs = tensors_of(args->outputs, args->num_outputs, false, "outputs");
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (AutogradMeta* m = meta_of(outputs[i]); m != nullptr && m->needs_grad()) {
        fail("output " + std::to_string(i) +
             " already has a history or requires grad (a function's outputs must be new tensors "
             "computed without recording)");
      }
    }
    node = std::make_shared<FunctionNode>(*args, inputs.size());
    release = nullptr;  // the node releases it now
    for (const Tensor& t : inputs) {
      node->next_edges.push_back(requires_grad(t) ? gradient_edge(t) : Edge{});
    }
    node->input_metadata.resize(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      InputMetadata& meta = node->input_metadata[i];
      meta.sizes.assign(outputs[i].sizes());
      meta.dtype = outputs[i].dtype();
      meta.device = outputs[i].device();
      if (is_floating(outputs[i]))
        set_new_history(outputs[i], node, static_cast<uint32_t>(i), false);
    }
  });
  if (release != nullptr) release(context);
  return err;
}

// Walks the graphs of `roots` once (each node visited once) and marks the leaves whose
// gradient cell an AccumulateGrad node on the way holds.
void reaches(const std::vector<Tensor>& roots, const std::vector<Tensor>& leaves,
             int32_t* reached) {
  std::unordered_map<const GradCell*, std::vector<size_t>> leaf_of_cell;
  for (size_t i = 0; i < leaves.size(); ++i) {
    reached[i] = 0;
    if (requires_grad(leaves[i]) && is_leaf(leaves[i]))
      leaf_of_cell[grad_cell(leaves[i], true).get()].push_back(i);
  }
  std::unordered_set<const Node*> seen;
  std::vector<std::shared_ptr<Node>> pending;
  for (const Tensor& root : roots) {
    if (Edge e = gradient_edge(root); e.valid() && seen.insert(e.node.get()).second)
      pending.push_back(std::move(e.node));
  }
  while (!pending.empty()) {
    std::shared_ptr<Node> node = std::move(pending.back());
    pending.pop_back();
    if (const auto* acc = dynamic_cast<const AccumulateGrad*>(node.get())) {
      if (auto it = leaf_of_cell.find(acc->cell.get()); it != leaf_of_cell.end()) {
        for (size_t i : it->second) reached[i] = 1;
      }
    }
    for (const Edge& e : node->next_edges) {
      if (e.valid() && seen.insert(e.node.get()).second) pending.push_back(e.node);
    }
  }
}

LoomError* api_reaches(LoomTensor* const* roots, size_t num_roots, LoomTensor* const* leaves,
                       size_t num_leaves, int32_t* reached) noexcept {
  return entry_point("reaches()", [&] {
    if (num_leaves != 0 && reached == nullptr) fail("the reached array is null");
    reaches(tensors_of(roots, num_roots, false, "roots"),
            tensors_of(leaves, num_leaves, false, "leaves"), reached);
  });
}

LoomError* api_push_saved_tensor_hooks(const LoomSavedTensorHooks* hooks) noexcept {
  // The context is ours from here on (released once, by the hooks or on failure), when the
  // struct is large enough to carry its release function.
  const bool complete = hooks != nullptr && hooks->struct_size >= sizeof(LoomSavedTensorHooks);
  return entry_point("push_saved_tensor_hooks()", [&] {
    if (!complete) {
      fail("expected LoomSavedTensorHooks of at least " +
           std::to_string(sizeof(LoomSavedTensorHooks)) + " bytes, found " +
           (hooks == nullptr ? std::string("null") : std::to_string(hooks->struct_size)));
    }
    std::shared_ptr<SavedTensorHooks> owned;
    try {
      owned = std::make_shared<SavedTensorHooks>(*hooks);
    } catch (...) {
      if (hooks->release != nullptr) hooks->release(hooks->context);
      throw;
    }
    if (owned->c.pack == nullptr || owned->c.unpack == nullptr)
      fail("expected a pack and an unpack hook, found a null one");
    push_saved_tensor_hooks(std::move(owned));
  });
}

LoomError* api_pop_saved_tensor_hooks() noexcept {
  return entry_point("pop_saved_tensor_hooks()", [&] {
    if (!pop_saved_tensor_hooks()) fail("no saved-tensor hooks are pushed on this thread");
  });
}

constexpr LoomAutogradApi kApi = {
    sizeof(LoomAutogradApi),
    &api_set_requires_grad,
    &api_requires_grad,
    &api_is_leaf,
    &api_grad,
    &api_set_grad,
    &api_retain_grad,
    &api_retains_grad,
    &api_detach,
    &api_grad_fn_name,
    &api_backward,
    &api_grad_of,
    &api_register_hook,
    &api_register_post_accumulate_grad_hook,
    &api_set_anomaly_enabled,
    &api_is_anomaly_enabled,
    &api_visit_formulas,
    &api_apply_function,
    &api_reaches,
    &api_push_saved_tensor_hooks,
    &api_pop_saved_tensor_hooks,
};

}  // namespace

std::vector<RecordedOp>& recorded_ops() {
  static std::vector<RecordedOp> ops;
  return ops;
}

void publish_api_table() {
  sdk::publish_extension(LOOM_AUTOGRAD_EXTENSION_NAME, &kApi);
}

}  // namespace loom::autograd
