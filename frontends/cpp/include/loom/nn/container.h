// Containers: Sequential (layers applied in order), ModuleList and ModuleDict (modules
// registered under indices or names), as torch.nn's.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/core/error.h"
#include "loom/nn/module.h"

namespace loom::nn {

template <typename T>
concept IsModuleHolder = requires(const T& h) {
  h.ptr();
};

// Layers named "0", "1", ... applied in order; each must map one tensor to one tensor.
//   Sequential net(Linear(784, 256), ReLU(), Linear(256, 10));
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <typename... Holders>
  requires(sizeof...(Holders) > 0 &&
           (IsModuleHolder<Holders> && ...)) explicit SequentialImpl(Holders&&... layers)
      : Module("Sequential") {
    (push_back(std::forward<Holders>(layers)), ...);
  }

  template <typename Holder>
  requires IsModuleHolder<Holder>
  void push_back(const Holder& layer) {
    auto impl = layer.ptr();
    push_back(std::shared_ptr<Module>(impl), [impl](const Tensor& x) { return impl->forward(x); });
  }

  // Appends a layer of any type with the function that runs it (what push_back makes
  // from a holder), for code that rebuilds models layer by layer (loom/quantization.h).
  void push_back(std::shared_ptr<Module> module, std::function<Tensor(const Tensor&)> forward);

  Tensor forward(const Tensor& input) const;
  size_t size() const { return layers_.size(); }
  std::shared_ptr<Module> operator[](size_t index) const;
  // The function that runs layer `index`.
  const std::function<Tensor(const Tensor&)>& forward_of(size_t index) const;
  // The layer at `index` as its type (an error when it is another).
  template <typename Impl>
  std::shared_ptr<Impl> ptr(size_t index) const {
    auto typed = std::dynamic_pointer_cast<Impl>((*this)[index]);
    LOOM_CHECK(typed != nullptr, "nn::Sequential", "layer ", index, " is a ",
               (*this)[index]->type_name(), ", not the type asked for");
    return typed;
  }

 private:
  struct Layer {
    std::shared_ptr<Module> module;
    std::function<Tensor(const Tensor&)> forward;
  };
  std::vector<Layer> layers_;
};
LOOM_MODULE(Sequential);

// Modules registered as "0", "1", ...; no forward of its own.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  template <typename... Holders>
  requires(sizeof...(Holders) > 0 &&
           (IsModuleHolder<Holders> && ...)) explicit ModuleListImpl(Holders&&... modules)
      : Module("ModuleList") {
    (push_back(std::forward<Holders>(modules)), ...);
  }
  template <typename Holder>
  void push_back(const Holder& module) {
    push_back_module(std::shared_ptr<Module>(module.ptr()));
  }
  void push_back_module(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  std::shared_ptr<Module> operator[](size_t index) const;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
LOOM_MODULE(ModuleList);

// Modules registered under names, in insertion order.
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() : Module("ModuleDict") {}
  template <typename Holder>
  void insert(const std::string& name, const Holder& module) {
    register_module(name, std::shared_ptr<Module>(module.ptr()));
  }
  bool contains(const std::string& name) const;
  std::shared_ptr<Module> operator[](const std::string& name) const;
  std::vector<std::string> keys() const;
  size_t size() const { return named_children().size(); }
};
LOOM_MODULE(ModuleDict);

}  // namespace loom::nn
