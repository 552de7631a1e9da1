// Sequential, ModuleList and ModuleDict.
#include "loom/nn/container.h"

namespace loom::nn {

Tensor SequentialImpl::forward(const Tensor& input) const {
  Tensor x = input;
  for (const Layer& layer : layers_) x = layer.forward(x);
  return x;
}

std::shared_ptr<Module> SequentialImpl::operator[](size_t index) const {
  LOOM_CHECK(index < layers_.size(), "nn::Sequential", "index ", index, " is out of range for ",
             layers_.size(), " layers");
  return layers_[index].module;
}

const std::function<Tensor(const Tensor&)>& SequentialImpl::forward_of(size_t index) const {
  LOOM_CHECK(index < layers_.size(), "nn::Sequential", "index ", index, " is out of range for ",
             layers_.size(), " layers");
  return layers_[index].forward;
}

void SequentialImpl::push_back(std::shared_ptr<Module> module,
                               std::function<Tensor(const Tensor&)> forward) {
  LOOM_CHECK(module != nullptr && forward, "nn::Sequential",
             "push_back needs a module and its forward");
  register_module(std::to_string(layers_.size()), module);
  layers_.push_back({std::move(module), std::move(forward)});
}

void ModuleListImpl::push_back_module(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

std::shared_ptr<Module> ModuleListImpl::operator[](size_t index) const {
  LOOM_CHECK(index < modules_.size(), "nn::ModuleList", "index ", index, " is out of range for ",
             modules_.size(), " modules");
  return modules_[index];
}

bool ModuleDictImpl::contains(const std::string& name) const {
  for (const auto& [n, m] : named_children()) {
    if (n == name) return true;
  }
  return false;
}

std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& name) const {
  for (const auto& [n, m] : named_children()) {
    if (n == name) return m;
  }
  fail("nn::ModuleDict", "no module named '", name, "'");
}

std::vector<std::string> ModuleDictImpl::keys() const {
  std::vector<std::string> out;
  for (const auto& [n, m] : named_children()) out.push_back(n);
  return out;
}

}  // namespace loom::nn
