// nn::Module, the base of every layer, shaped like libtorch's torch::nn::Module: named
// parameters, buffers and submodules, train/eval, zero_grad, to(dtype/device) and the
// state dict. Layers are written as `XImpl : Module` and used through the holder `X`
// (LOOM_MODULE), a shared pointer with `->` and `()` as torch::nn::Linear is.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/core/scalar_type.h"
#include "loom/ops/tensor.h"

namespace loom::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Note [Parameter slots]
// ~~~~~~~~~~~~~~~~~~~~~~
// A module keeps each parameter and buffer in a slot whose address never changes (a
// deque grown at the back), and register_parameter returns a reference to it. Layers
// bind their members to the slot (`Tensor& weight`), so `to(dtype)` and `to(device)`,
// which put a converted tensor into the slot, are seen through the member. Optimizers
// hold the tensors themselves: make them after moving the model, as in PyTorch.
// load_state_dict copies values into the existing tensors, keeping their identity.
class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string type_name);
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The layer's type ("Linear"), as printed and used in messages.
  const std::string& type_name() const { return type_name_; }

  // Registers a parameter (its requires_grad set as asked) or a buffer under `name`
  // (no dots, unique in this module) and returns its slot (Note [Parameter slots]). An
  // undefined tensor registers an absent parameter (a Linear without bias): it is skipped
  // by parameters() and the state dict.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor);
  // Registers a submodule; returns it.
  std::shared_ptr<Module> register_module(std::string name, std::shared_ptr<Module> module);
  template <typename Holder>
  requires requires(const Holder& h) { h.ptr(); }
  Holder register_module(std::string name, Holder holder) {
    register_module(std::move(name), std::shared_ptr<Module>(holder.ptr()));
    return holder;
  }

  // This module's and (recurse) its submodules' parameters and buffers, in registration
  // order, named with dotted paths ("features.0.weight") as PyTorch names them.
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  // Every module of the tree, this one first, depth first ("" names this one).
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules() const;

  // Training mode for this module and every submodule (Dropout and BatchNorm read it).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Clears every parameter's gradient: undefined (set_to_none, PyTorch's default) or
  // zeros.
  void zero_grad(bool set_to_none = true);

  // Converts every floating-point parameter and buffer to `dtype` (integer buffers such
  // as BatchNorm's num_batches_tracked stay), or everything to `device`; parameters keep
  // requires_grad.
  void to(ScalarType dtype);
  void to(std::string_view device);

  // Parameters then buffers, as named_parameters/named_buffers name them (what
  // state_dict() holds in PyTorch, in the same order).
  NamedTensors state_dict() const;
  // Copies each entry into the tensor of that name. strict: every key of the module must
  // be given and no other key may be. Shapes must match exactly and the dtype must be the
  // module tensor's (checked for every entry before anything is copied, so a refused dict
  // leaves the module unchanged); errors name the key, the expected and the found.
  void load_state_dict(const NamedTensors& state, bool strict = true);

  // "Linear(in_features=784, out_features=256, bias=true)"; containers print their
  // children indented, as PyTorch's repr.
  virtual void pretty_print(std::ostream& os) const;

 protected:
  // What pretty_print shows between the parentheses of a leaf module.
  virtual std::string extra_repr() const { return ""; }

 private:
  struct Entry {
    std::string name;
    Tensor tensor;
  };
  void collect(const std::string& prefix, bool recurse, bool buffers, NamedTensors& out) const;
  void check_new_name(const std::string& name, const char* what) const;
  void for_each_tensor(const std::function<void(Tensor&, bool is_parameter)>& fn);

  std::string type_name_;
  bool training_ = true;
  std::deque<Entry> parameters_;  // Note [Parameter slots]
  std::deque<Entry> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& module);

// Holder of a layer, as libtorch's ModuleHolder: `Linear fc(784, 256); fc->weight;
// fc(x)`. Copies share the layer.
template <typename Impl>
class ModuleHolder {
 public:
  // Constructs the layer from its arguments (never from another holder: that copies).
  template <typename... Args>
  requires(std::is_constructible_v<Impl, Args...> &&
           !(sizeof...(Args) == 1 && (std::is_base_of_v<ModuleHolder, std::decay_t<Args>> &&
                                      ...))) explicit ModuleHolder(Args&&... args)
      : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT: as libtorch
  // An empty holder, assigned later (`nn::Linear fc{nullptr};` in a module's members).
  ModuleHolder(std::nullptr_t) {}  // NOLINT: as libtorch
  bool is_empty() const { return impl_ == nullptr; }

  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  template <typename... Args>
  auto operator()(Args&&... args) const {
    return impl_->forward(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace loom::nn

// LOOM_MODULE(Linear) declares the holder `Linear` of `LinearImpl`.
#define LOOM_MODULE(Name)                                     \
  class Name : public ::loom::nn::ModuleHolder<Name##Impl> {  \
   public:                                                    \
    using ::loom::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }
