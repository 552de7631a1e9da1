// loom::Tensor's autograd methods: calls of the ops the autograd plugin defines
// (autograd::requires_grad, autograd::backward, ...), looked up by name, so the op
// library does not depend on the plugin and reports clearly when it is not loaded.
#include <cstdlib>

#include "loom/autograd_hooks.h"
#include "loom/core/error.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/tensor.h"

namespace loom {
namespace {

using dispatch::Dispatcher;

// The autograd plugin's op `name`; throws naming `what` when the plugin is not loaded.
dispatch::OperatorHandle autograd_op(const char* name, const char* what) {
  std::optional<dispatch::OperatorHandle> op = Dispatcher::instance().find(name);
  LOOM_CHECK(op && op->is_defined(), "autograd", what,
             ": the autograd plugin is not loaded (load it with the runtime's manifest)");
  return *op;
}

bool autograd_loaded() {
  std::optional<dispatch::OperatorHandle> op = Dispatcher::instance().find("autograd::backward");
  return op && op->is_defined();
}

LoomValue call_one(const char* name, const char* what, const LoomValue* args, size_t n) {
  LoomValue ret[1];
  Dispatcher::instance().call(autograd_op(name, what), args, n, ret, 1);
  return ret[0];
}

void call_none(const char* name, const char* what, const LoomValue* args, size_t n) {
  Dispatcher::instance().call(autograd_op(name, what), args, n, nullptr, 0);
}

LoomValue tensor_list(std::vector<LoomTensor*>& handles) {
  LoomValue v{LOOM_VALUE_TENSOR_LIST, static_cast<uint32_t>(handles.size()), {}};
  v.u.tensors = handles.data();
  return v;
}

LoomTensor* handle(const Tensor& t) {
  return reinterpret_cast<LoomTensor*>(t.impl());
}

template <typename F>
void destroy_callable(void* context) {
  delete static_cast<F*>(context);
}

// Runs a frontend hook for the plugin (loom/autograd_hooks.h).
LoomError* run_tensor_hook(void* context, LoomTensor* grad, LoomTensor** replacement) {
  try {
    auto& hook = *static_cast<std::function<Tensor(const Tensor&)>*>(context);
    Tensor out = hook(Tensor::borrow(reinterpret_cast<TensorImpl*>(grad)));
    *replacement = out.defined() ? reinterpret_cast<LoomTensor*>(out.release()) : nullptr;
    return nullptr;
  } catch (const Error& e) {
    return dispatch::make_host_error(LOOM_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return dispatch::make_host_error(LOOM_STATUS_INTERNAL,
                                     std::string("[autograd] hook failed: ") + e.what());
  }
}

LoomError* run_post_accumulate_hook(void* context, LoomTensor* grad, LoomTensor**) {
  try {
    auto& hook = *static_cast<std::function<void(const Tensor&)>*>(context);
    hook(Tensor::borrow(reinterpret_cast<TensorImpl*>(grad)));
    return nullptr;
  } catch (const Error& e) {
    return dispatch::make_host_error(LOOM_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return dispatch::make_host_error(LOOM_STATUS_INTERNAL,
                                     std::string("[autograd] hook failed: ") + e.what());
  }
}

}  // namespace

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  LoomValue args[] = {dispatch::box(*this), dispatch::box(requires_grad)};
  call_none("autograd::set_requires_grad", "requires_grad_()", args, 2);
  return *this;
}

bool Tensor::requires_grad() const {
  if (!autograd_loaded()) return false;
  LoomValue args[] = {dispatch::box(*this)};
  return call_one("autograd::requires_grad", "requires_grad()", args, 1).u.i != 0;
}

bool Tensor::is_leaf() const {
  if (!autograd_loaded()) return true;
  LoomValue args[] = {dispatch::box(*this)};
  return call_one("autograd::is_leaf", "is_leaf()", args, 1).u.i != 0;
}

Tensor Tensor::grad() const {
  LoomValue args[] = {dispatch::box(*this)};
  LoomValue ret = call_one("autograd::grad", "grad()", args, 1);
  if (ret.tag != LOOM_VALUE_TENSOR) return Tensor();
  return Tensor::adopt(reinterpret_cast<TensorImpl*>(ret.u.tensor));
}

void Tensor::set_grad(const Tensor& grad) const {
  LoomValue args[] = {dispatch::box(*this),
                      grad.defined() ? dispatch::box(grad) : dispatch::none()};
  call_none("autograd::set_grad", "set_grad()", args, 2);
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  std::vector<LoomTensor*> tensors{handle(*this)};
  std::vector<LoomTensor*> grads{gradient.defined() ? handle(gradient) : nullptr};
  std::vector<LoomTensor*> input_handles;
  for (const Tensor& t : inputs) input_handles.push_back(handle(t));
  LoomValue args[] = {tensor_list(tensors), tensor_list(grads),
                      dispatch::box(retain_graph.value_or(create_graph)),
                      dispatch::box(create_graph), tensor_list(input_handles)};
  call_none("autograd::backward", "backward()", args, 5);
}

Tensor Tensor::detach() const {
  if (!autograd_loaded()) return *this;
  LoomValue args[] = {dispatch::box(*this)};
  LoomValue ret = call_one("autograd::detach", "detach()", args, 1);
  return Tensor::adopt(reinterpret_cast<TensorImpl*>(ret.u.tensor));
}

void Tensor::retain_grad() const {
  LoomValue args[] = {dispatch::box(*this)};
  call_none("autograd::retain_grad", "retain_grad()", args, 1);
}

bool Tensor::retains_grad() const {
  if (!autograd_loaded()) return false;
  LoomValue args[] = {dispatch::box(*this)};
  return call_one("autograd::retains_grad", "retains_grad()", args, 1).u.i != 0;
}

std::string Tensor::grad_fn_name() const {
  LoomValue args[] = {dispatch::box(*this)};
  LoomValue ret = call_one("autograd::grad_fn_name", "grad_fn_name()", args, 1);
  std::string name(ret.u.str, ret.length);
  dispatch::release_value(ret);
  return name;
}

// Hands `context` (a heap-allocated Hook, freed by `release`) to the plugin's op.
template <typename Hook>
void register_foreign_hook(const Tensor& self, const char* op, const char* what, LoomGradHookFn run,
                           Hook hook) {
  autograd_op(op, what);
  auto* context = new Hook(std::move(hook));
  LoomValue args[] = {
      dispatch::box(self), dispatch::box(static_cast<int64_t>(reinterpret_cast<intptr_t>(run))),
      dispatch::box(static_cast<int64_t>(reinterpret_cast<intptr_t>(context))),
      dispatch::box(static_cast<int64_t>(
          reinterpret_cast<intptr_t>(static_cast<LoomGradHookRelease>(&destroy_callable<Hook>))))};
  // The plugin takes the context first thing (its ForeignHook releases it even when the
  // registration then fails).
  call_none(op, what, args, 4);
}

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  register_foreign_hook(*this, "autograd::register_hook", "register_hook()", &run_tensor_hook,
                        std::move(hook));
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  register_foreign_hook(*this, "autograd::register_post_accumulate_grad_hook",
                        "register_post_accumulate_grad_hook()", &run_post_accumulate_hook,
                        std::move(hook));
}

}  // namespace loom
