// loom::Tensor's autograd methods (declared in loom/ops/tensor.h), through the autograd
// plugin's "loom.autograd" table (autograd_table.h). Without the plugin,
// requires_grad(), is_leaf(), retains_grad() and detach() answer as for a tensor that
// never required grad; the others say that the plugin is not loaded.
#include <functional>
#include <string>

#include "autograd_table.h"
#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/tensor.h"

namespace loom {
namespace {

using autograd::detail::callback_result;
using autograd::detail::check;
using autograd::detail::find_table;
using autograd::detail::with_table;

LoomTensor* handle(const Tensor& t) {
  LOOM_CHECK(t.defined(), "autograd", "expected a defined tensor, found an undefined one");
  return reinterpret_cast<LoomTensor*>(t.impl());
}

Tensor adopt_handle(LoomTensor* t) {
  return t != nullptr ? Tensor::adopt(reinterpret_cast<TensorImpl*>(t)) : Tensor();
}

// Asks the table a yes/no question about `self`; `absent` is the answer without the plugin.
bool ask(const Tensor& self, LoomError* (*LoomAutogradApi::*entry)(LoomTensor*, int32_t*),
         bool absent) {
  LoomTensor* h = handle(self);
  ReadSection section;
  const LoomAutogradApi* table = find_table();
  if (table == nullptr) return absent;
  int32_t out = 0;
  check((table->*entry)(h, &out));
  return out != 0;
}

template <typename F>
void destroy_callable(void* context) {
  delete static_cast<F*>(context);
}

// Runs a tensor hook for the plugin (LoomGradHookFn).
LoomError* run_tensor_hook(void* context, LoomTensor* grad, LoomTensor** replacement) {
  return callback_result("hook failed: ", [&] {
    auto& hook = *static_cast<std::function<Tensor(const Tensor&)>*>(context);
    Tensor out = hook(Tensor::borrow(reinterpret_cast<TensorImpl*>(grad)));
    *replacement = out.defined() ? reinterpret_cast<LoomTensor*>(out.release()) : nullptr;
  });
}

LoomError* run_post_accumulate_hook(void* context, LoomTensor* grad, LoomTensor**) {
  return callback_result("hook failed: ", [&] {
    auto& hook = *static_cast<std::function<void(const Tensor&)>*>(context);
    hook(Tensor::borrow(reinterpret_cast<TensorImpl*>(grad)));
  });
}

using RegisterHookEntry = LoomError* (*LoomAutogradApi::*)(LoomTensor*, LoomGradHookFn, void*,
                                                           LoomGradHookRelease);

// Hands a heap copy of `hook` to the plugin, which owns it from the call on (it releases
// it through destroy_callable even when the registration fails).
template <typename Hook>
void register_foreign_hook(const Tensor& self, const char* what, RegisterHookEntry entry,
                           LoomGradHookFn run, Hook hook) {
  LoomTensor* h = handle(self);
  with_table(what, [&](const LoomAutogradApi& table) {
    auto* context = new Hook(std::move(hook));
    check((table.*entry)(h, run, context, &destroy_callable<Hook>));
  });
}

}  // namespace

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  LoomTensor* h = handle(*this);
  with_table("requires_grad_()", [&](const LoomAutogradApi& table) {
    check(table.set_requires_grad(h, requires_grad ? 1 : 0));
  });
  return *this;
}

bool Tensor::requires_grad() const {
  return ask(*this, &LoomAutogradApi::requires_grad, false);
}

bool Tensor::is_leaf() const {
  return ask(*this, &LoomAutogradApi::is_leaf, true);
}

bool Tensor::retains_grad() const {
  return ask(*this, &LoomAutogradApi::retains_grad, false);
}

Tensor Tensor::grad() const {
  LoomTensor* h = handle(*this);
  LoomTensor* out = nullptr;
  with_table("grad()", [&](const LoomAutogradApi& table) { check(table.grad(h, &out)); });
  return adopt_handle(out);
}

void Tensor::set_grad(const Tensor& grad) const {
  LoomTensor* h = handle(*this);
  LoomTensor* g = grad.defined() ? handle(grad) : nullptr;
  with_table("set_grad()", [&](const LoomAutogradApi& table) { check(table.set_grad(h, g)); });
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs);
}

Tensor Tensor::detach() const {
  LoomTensor* h = handle(*this);
  LoomTensor* out = nullptr;
  {
    ReadSection section;
    const LoomAutogradApi* table = find_table();
    if (table == nullptr) return *this;
    check(table->detach(h, &out));
  }
  return adopt_handle(out);
}

void Tensor::retain_grad() const {
  LoomTensor* h = handle(*this);
  with_table("retain_grad()", [&](const LoomAutogradApi& table) { check(table.retain_grad(h)); });
}

std::string Tensor::grad_fn_name() const {
  LoomTensor* h = handle(*this);
  std::string name;
  with_table("grad_fn_name()", [&](const LoomAutogradApi& table) {
    check(table.grad_fn_name(
        h, &name, [](void* ctx, const char* text) { *static_cast<std::string*>(ctx) = text; }));
  });
  return name;
}

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  register_foreign_hook(*this, "register_hook()", &LoomAutogradApi::register_hook, &run_tensor_hook,
                        std::move(hook));
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  register_foreign_hook(*this, "register_post_accumulate_grad_hook()",
                        &LoomAutogradApi::register_post_accumulate_grad_hook,
                        &run_post_accumulate_hook, std::move(hook));
}

}  // namespace loom
