// Optimizer: zero_grad and set_lr over every group.
#include "loom/optim/optimizer.h"

#include <algorithm>
#include "loom/autograd.h"
#include "loom/core/type_promotion.h"
#include "loom/factories.h"
#include "loom/ops/generated/ops.h"
#include "loom/tensor_io.h"

namespace loom::optim {

void Optimizer::zero_grad(bool set_to_none) {
  autograd::clear_grads(parameters(), set_to_none);
}

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < num_param_groups(); ++g) set_lr(lr, g);
}

}  // namespace loom::optim

namespace loom::optim {

namespace detail {

std::vector<std::string> state_key_parts(const std::string& key) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

size_t state_key_index(const std::string& part, const std::string& key, const std::string& what) {
  LOOM_CHECK(!part.empty() && part.size() < 10 &&
                 std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }),
             what, "state key '", key, "': expected a number, found '", part, "'");
  return static_cast<size_t>(std::stoul(part));
}

}  // namespace detail

NamedTensors Optimizer::state_dict() const {
  auto* self = const_cast<Optimizer*>(this);  // state_fields only sizes the state
  NamedTensors out;
  NoGradGuard no_grad;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    out.emplace_back(str_cat("param_groups.", g, ".lr"),
                     loom::full({}, lr(g), TensorOptions().dtype(ScalarType::Float64)));
    for (size_t i = 0; i < group_size(g); ++i) {
      for (const StateField& f : self->state_fields(g, i)) {
        const std::string key = str_cat("state.", g, ".", i, ".", f.name);
        if (f.count != nullptr && *f.count > 0) {
          out.emplace_back(key, loom::full({}, *f.count, TensorOptions().dtype(ScalarType::Int64)));
        } else if (f.tensor != nullptr && f.tensor->defined()) {
          out.emplace_back(key, loom::clone(*f.tensor));
        }
      }
    }
  }
  return out;
}

void Optimizer::check_state_dict(const NamedTensors& state) const {
  const_cast<Optimizer*>(this)->restore(state, false);
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  restore(state, false);
  restore(state, true);
  ++generation_;
  state_loaded();
}

// Keys: param_groups.<g>.lr or state.<g>.<i>.<field>.
void Optimizer::restore(const NamedTensors& state, bool apply) {
  const std::string what = optimizer_name();
  std::vector<Tensor> params = parameters();
  auto index = [&](const std::string& text, const std::string& key) {
    return detail::state_key_index(text, key, what);
  };
  size_t lrs = 0;
  if (apply) {
    // Parameters without an entry start afresh.
    for (size_t g = 0; g < num_param_groups(); ++g) {
      for (size_t i = 0; i < group_size(g); ++i) {
        for (const StateField& f : state_fields(g, i)) {
          if (f.tensor) *f.tensor = Tensor();
          if (f.count) *f.count = 0;
        }
      }
    }
  }
  for (const auto& [key, value] : state) {
    const std::vector<std::string> parts = detail::state_key_parts(key);
    LOOM_CHECK(value.defined(), what, "state key '", key, "': the tensor is undefined");
    if (parts.size() == 3 && parts[0] == "param_groups" && parts[2] == "lr") {
      size_t g = index(parts[1], key);
      LOOM_CHECK(g < num_param_groups(), what, "state key '", key, "': the optimizer has ",
                 num_param_groups(), " parameter groups");
      LOOM_CHECK(value.numel() == 1, what, "state key '", key, "': expected a scalar");
      ++lrs;
      if (apply) set_lr(value.item<double>(), g);
      continue;
    }
    LOOM_CHECK(parts.size() == 4 && parts[0] == "state", what, "unexpected state key '", key, "'");
    size_t g = index(parts[1], key), i = index(parts[2], key);
    LOOM_CHECK(g < num_param_groups() && i < group_size(g), what, "state key '", key,
               "' names a parameter the optimizer does not have");
    bool found = false;
    for (const StateField& f : state_fields(g, i)) {
      if (parts[3] != f.name) continue;
      found = true;
      if (f.count) {
        LOOM_CHECK(value.numel() == 1 && !is_floating_point(value.dtype()), what, "state key '",
                   key, "': expected an integer scalar");
        if (apply) *f.count = static_cast<int64_t>(value.item<double>());
        continue;
      }
      Tensor param;
      {
        size_t flat = i;
        for (size_t k = 0; k < g; ++k) flat += group_size(k);
        param = params[flat];
      }
      LOOM_CHECK(std::ranges::equal(value.sizes(), param.sizes()) && value.dtype() == param.dtype(),
                 what, "state key '", key, "': expected ", scalar_type_name(param.dtype()), " ",
                 shape_to_string(param.sizes()), " (its parameter's), found ",
                 scalar_type_name(value.dtype()), " ", shape_to_string(value.sizes()));
      if (apply) {
        NoGradGuard no_grad;
        *f.tensor = loom::clone(value.to(param.device()));
      }
    }
    LOOM_CHECK(found, what, "unexpected state key '", key, "'");
  }
  LOOM_CHECK(lrs == num_param_groups(), what, "expected a learning rate for each of the ",
             num_param_groups(), " parameter groups, found ", lrs);
}

}  // namespace loom::optim
