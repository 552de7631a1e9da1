// nn::Module: registration, traversal, modes, conversion and the state dict.
#include "loom/nn/module.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/core/type_promotion.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn {

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

void Module::check_new_name(const std::string& name, const char* what) const {
  LOOM_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_, " register_", what,
             ": expected a non-empty name without '.', found '", name, "'");
  auto taken = [&](const auto& entries) {
    for (const auto& e : entries) {
      if (e.name == name) return true;
    }
    return false;
  };
  bool child = false;
  for (const auto& [n, m] : children_) child |= n == name;
  LOOM_CHECK(!taken(parameters_) && !taken(buffers_) && !child, type_name_, " register_", what,
             ": the name '", name, "' is taken already");
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  if (tensor.defined()) {
    LOOM_CHECK(!requires_grad || is_floating_point(tensor.dtype()), type_name_,
               " register_parameter: '", name,
               "' requires grad, which needs a floating-point tensor, found ",
               scalar_type_name(tensor.dtype()));
    if (requires_grad && autograd::is_available()) tensor.requires_grad_(true);
  }
  parameters_.push_back({std::move(name), std::move(tensor)});
  return parameters_.back().tensor;
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_new_name(name, "buffer");
  buffers_.push_back({std::move(name), std::move(tensor)});
  return buffers_.back().tensor;
}

std::shared_ptr<Module> Module::register_module(std::string name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  LOOM_CHECK(module != nullptr, type_name_, " register_module: '", name, "' is null");
  children_.emplace_back(std::move(name), module);
  return module;
}

void Module::collect(const std::string& prefix, bool recurse, bool buffers,
                     NamedTensors& out) const {
  for (const Entry& e : buffers ? buffers_ : parameters_) {
    if (e.tensor.defined()) out.emplace_back(prefix + e.name, e.tensor);
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_) {
    child->collect(prefix + name + ".", true, buffers, out);
  }
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  collect("", recurse, false, out);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect("", recurse, true, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(std::move(t));
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(std::move(t));
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, child] : children_) out.push_back(child);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  out.emplace_back("", std::const_pointer_cast<Module>(shared_from_this()));
  for (const auto& [name, child] : children_) {
    for (auto& [sub, m] : child->named_modules()) {
      out.emplace_back(sub.empty() ? name : name + "." + sub, std::move(m));
    }
  }
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad(bool set_to_none) {
  autograd::clear_grads(parameters(), set_to_none);
}

void Module::for_each_tensor(const std::function<void(Tensor&, bool is_parameter)>& fn) {
  for (Entry& e : parameters_) {
    if (e.tensor.defined()) fn(e.tensor, true);
  }
  for (Entry& e : buffers_) {
    if (e.tensor.defined()) fn(e.tensor, false);
  }
  for (const auto& [name, child] : children_) child->for_each_tensor(fn);
}

void Module::to(ScalarType dtype) {
  LOOM_CHECK(is_floating_point(dtype), type_name_, " to: expected a floating-point dtype, found ",
             scalar_type_name(dtype));
  for_each_tensor([&](Tensor& t, bool is_parameter) {
    if (!is_floating_point(t.dtype()) || t.dtype() == dtype) return;
    const bool grad = is_parameter && t.requires_grad();
    {
      NoGradGuard no_grad;
      t = loom::to(t, dtype);
    }
    if (grad) t.requires_grad_(true);
  });
}

void Module::to(std::string_view device) {
  for_each_tensor([&](Tensor& t, bool is_parameter) {
    const bool grad = is_parameter && t.requires_grad();
    {
      NoGradGuard no_grad;
      t = t.to(device);
    }
    if (grad) t.requires_grad_(true);
  });
}

NamedTensors Module::state_dict() const {
  NamedTensors out = named_parameters();
  for (auto& entry : named_buffers()) out.push_back(std::move(entry));
  return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  const char* what = "load_state_dict";
  NamedTensors own = state_dict();
  std::map<std::string, Tensor> by_name(own.begin(), own.end());
  std::set<std::string> given;
  // Every check before the first copy (a refused dict leaves the module unchanged).
  for (const auto& [key, value] : state) {
    LOOM_CHECK(given.insert(key).second, what, "key '", key, "' is given twice");
    auto it = by_name.find(key);
    if (it == by_name.end()) {
      LOOM_CHECK(!strict, what, "unexpected key '", key, "' (", type_name_, " has no such ",
                 "parameter or buffer)");
      continue;
    }
    const Tensor& mine = it->second;
    LOOM_CHECK(value.defined(), what, "key '", key, "': the given tensor is undefined");
    LOOM_CHECK(std::ranges::equal(value.sizes(), mine.sizes()), what, "key '", key,
               "': expected shape ", shape_to_string(mine.sizes()), ", found ",
               shape_to_string(value.sizes()));
    LOOM_CHECK(value.dtype() == mine.dtype(), what, "key '", key, "': expected dtype ",
               scalar_type_name(mine.dtype()), ", found ", scalar_type_name(value.dtype()));
  }
  if (strict) {
    for (const auto& [key, mine] : own) {
      LOOM_CHECK(given.count(key) != 0, what, "missing key '", key, "' (shape ",
                 shape_to_string(mine.sizes()), ", ", scalar_type_name(mine.dtype()), ")");
    }
  }
  NoGradGuard no_grad;
  for (const auto& [key, value] : state) {
    auto it = by_name.find(key);
    if (it != by_name.end()) loom::copy_(it->second, value);
  }
}

void Module::pretty_print(std::ostream& os) const {
  os << type_name_ << "(" << extra_repr();
  if (children_.empty()) {
    os << ")";
    return;
  }
  os << "\n";
  for (const auto& [name, child] : children_) {
    std::ostringstream inner;
    child->pretty_print(inner);
    std::string text = inner.str();
    // Indent the child's continuation lines by two spaces.
    std::string indented;
    for (char c : text) {
      indented += c;
      if (c == '\n') indented += "  ";
    }
    os << "  (" << name << "): " << indented << "\n";
  }
  os << ")";
}

std::ostream& operator<<(std::ostream& os, const Module& module) {
  module.pretty_print(os);
  return os;
}

}  // namespace loom::nn
