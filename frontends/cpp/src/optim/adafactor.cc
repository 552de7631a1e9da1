// Adafactor, following torch.optim.Adafactor's single-tensor and multi-tensor updates.
#include "loom/optim/adafactor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "loom/operators.h"
#include "loom/ops/generated/ops.h"
#include "loom/tensor_io.h"

namespace loom::optim {

Adafactor::Adafactor(std::vector<ParamGroup<AdafactorOptions>> groups)
    : OptimizerWithOptions("optim::Adafactor", std::move(groups)) {
  check_groups();
}

void Adafactor::check_options(const AdafactorOptions& o) const {
  check_non_negative("lr", o.lr());
  check_non_negative("eps1", o.eps1().value_or(0.0));
  check_non_negative("eps2", o.eps2());
  check_non_negative("weight_decay", o.weight_decay());
  LOOM_CHECK(o.beta2_decay() <= 0, name_, "expected beta2_decay <= 0, found ", o.beta2_decay());
  LOOM_CHECK(o.d() >= 1, name_, "expected a clipping threshold d >= 1, found ", o.d());
}

namespace {

// The root mean square of a tensor of `numel` elements from its 2-norm.
double rms_of_norm(const Tensor& norm, int64_t numel) {
  return norm.item<double>() / std::sqrt(static_cast<double>(std::max<int64_t>(numel, 1)));
}

double rms(const Tensor& t) {
  return rms_of_norm(loom::linalg_vector_norm(t), t.numel());
}

double dtype_eps(ScalarType t) {
  switch (t) {
    case ScalarType::Float64:
      return std::numeric_limits<double>::epsilon();
    case ScalarType::Float16:
      return 0.0009765625;
    case ScalarType::BFloat16:
      return 0.0078125;
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

// Matrices (and stacks of them) keep factored second moments.
bool factored(const Tensor& p) {
  return p.dim() >= 2;
}

// The numbers of one parameter's step t (its state made on the first): 1 - beta2 =
// t^beta2_decay, the relative step size rho = min(lr, 1/sqrt(t)), and the variance floor.
struct StepNumbers {
  double one_minus_beta2, rho, eps1;
};

StepNumbers begin_step(const AdafactorOptions& o, const Tensor& p, AdafactorParamState& s) {
  if (factored(p) && !s.row_var.defined()) {
    s.row_var = loom::zeros_like(loom::mean(p, IntList{-1}, true));
    s.col_var = loom::zeros_like(loom::mean(p, IntList{-2}, true));
  }
  if (!factored(p) && !s.variance.defined()) s.variance = loom::zeros_like(p);
  ++s.step;
  const double t = static_cast<double>(s.step);
  return {std::pow(t, o.beta2_decay()), std::min(o.lr(), 1.0 / std::sqrt(t)),
          o.eps1().value_or(dtype_eps(p.dtype()))};
}

}  // namespace

void Adafactor::step() {
  step_groups(state_, &Adafactor::step_single, &Adafactor::step_foreach);
}

// alpha = max(eps2, rms(p)) rho; the second moment (factored for matrices: row and
// column means of g^2, combined as row col / mean(row)) moves toward g^2 by 1 - beta2;
// u = g / sqrt(max(v, eps1^2)); p -= alpha u / max(1, rms(u) / d).
void Adafactor::step_single(const AdafactorOptions& o, Tensor& p, Tensor g,
                            AdafactorParamState& s) {
  const StepNumbers k = begin_step(o, p, s);
  const double alpha = std::max(o.eps2(), rms(p)) * k.rho;
  if (o.weight_decay() != 0) p *= 1.0 - o.lr() * o.weight_decay();
  Tensor squared = g * g;
  Tensor variance;
  if (factored(p)) {
    loom::lerp_(s.row_var, loom::mean(squared, IntList{-1}, true), k.one_minus_beta2);
    loom::lerp_(s.col_var, loom::mean(squared, IntList{-2}, true), k.one_minus_beta2);
    variance = loom::matmul(s.row_var, s.col_var);
    variance /= loom::clamp_min(loom::mean(s.row_var, IntList{-2}, true), Scalar(k.eps1));
  } else {
    loom::lerp_(s.variance, squared, k.one_minus_beta2);
    variance = s.variance;
  }
  Tensor update = loom::clamp_min(variance, Scalar(k.eps1 * k.eps1));
  loom::rsqrt_(update);
  update *= g;
  update *= -alpha / std::max(1.0, rms(update) / o.d());
  p += update;
}

// The same update over a group's lists (Note [Foreach ops]: the same bits as above). The
// means and products of the factored moments stay per parameter, as in PyTorch's
// multi-tensor Adafactor; every pointwise step and both norms run over whole lists. The
// clamps take one bound per list, so the parameters go in lists of one eps1 (one dtype
// when eps1 is the dtype's).
void Adafactor::step_foreach(GroupUpdate<AdafactorParamState>& group) {
  const AdafactorOptions& o = group.options;
  std::map<double, std::vector<size_t>> by_eps1;
  for (size_t i = 0; i < group.params.size(); ++i) {
    by_eps1[o.eps1().value_or(dtype_eps(group.params[i].dtype()))].push_back(i);
  }
  for (const auto& [eps1, indices] : by_eps1) {
    const size_t n = indices.size();
    std::vector<Tensor> params, grads;
    std::vector<AdafactorParamState*> states;
    std::vector<StepNumbers> numbers;
    for (size_t i : indices) {
      params.push_back(group.params[i]);
      grads.push_back(group.grads[i]);
      states.push_back(group.states[i]);
      numbers.push_back(begin_step(o, params.back(), *states.back()));
    }
    std::vector<double> alphas(n);
    const std::vector<Tensor> param_norms = loom::_foreach_norm(params);
    for (size_t k = 0; k < n; ++k) {
      alphas[k] =
          std::max(o.eps2(), rms_of_norm(param_norms[k], params[k].numel())) * numbers[k].rho;
    }
    if (o.weight_decay() != 0) loom::_foreach_mul_(params, 1.0 - o.lr() * o.weight_decay());
    const std::vector<Tensor> squared = loom::_foreach_mul(grads, grads);

    // The factored moments: row and column means of g^2, then v = row col / mean(row).
    std::vector<Tensor> variances(n);
    std::vector<size_t> matrices, vectors;
    for (size_t k = 0; k < n; ++k) (factored(params[k]) ? matrices : vectors).push_back(k);
    if (!matrices.empty()) {
      std::vector<Tensor> rows, cols, row_means, col_means, row_var_means;
      std::vector<double> weights;
      for (size_t k : matrices) {
        rows.push_back(states[k]->row_var);
        cols.push_back(states[k]->col_var);
        row_means.push_back(loom::mean(squared[k], IntList{-1}, true));
        col_means.push_back(loom::mean(squared[k], IntList{-2}, true));
        weights.push_back(numbers[k].one_minus_beta2);
      }
      loom::_foreach_lerp_(rows, row_means, weights);
      loom::_foreach_lerp_(cols, col_means, weights);
      for (const Tensor& row : rows) row_var_means.push_back(loom::mean(row, IntList{-2}, true));
      row_var_means = loom::_foreach_clamp_min(row_var_means, Scalar(eps1));
      for (size_t j = 0; j < matrices.size(); ++j) {
        Tensor& v = variances[matrices[j]];
        v = loom::matmul(rows[j], cols[j]);
        v /= row_var_means[j];
      }
    }
    if (!vectors.empty()) {
      std::vector<Tensor> moments, targets;
      std::vector<double> weights;
      for (size_t k : vectors) {
        moments.push_back(states[k]->variance);
        targets.push_back(squared[k]);
        weights.push_back(numbers[k].one_minus_beta2);
        variances[k] = states[k]->variance;
      }
      loom::_foreach_lerp_(moments, targets, weights);
    }

    std::vector<Tensor> updates = loom::_foreach_clamp_min(variances, Scalar(eps1 * eps1));
    loom::_foreach_rsqrt_(updates);
    loom::_foreach_mul_(updates, grads);
    const std::vector<Tensor> update_norms = loom::_foreach_norm(updates);
    std::vector<double> scales(n);
    for (size_t k = 0; k < n; ++k) {
      scales[k] =
          -alphas[k] / std::max(1.0, rms_of_norm(update_norms[k], updates[k].numel()) / o.d());
    }
    loom::_foreach_mul_(updates, scales);
    loom::_foreach_add_(params, updates);
  }
}

std::vector<Optimizer::StateField> Adafactor::state_fields(size_t group, size_t i) {
  AdafactorParamState& s = state_slot(state_, group, i);
  return {{"step", nullptr, &s.step},
          {"row_var", &s.row_var},
          {"col_var", &s.col_var},
          {"variance", &s.variance}};
}

}  // namespace loom::optim
