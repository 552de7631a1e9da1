// Adafactor, following torch.optim.Adafactor's single-tensor update.
#include "loom/optim/adafactor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/autograd.h"
#include "loom/operators.h"
#include "loom/ops/generated/ops.h"
#include "loom/tensor_io.h"

namespace loom::optim {

Adafactor::Adafactor(std::vector<ParamGroup<AdafactorOptions>> groups)
    : OptimizerWithOptions("optim::Adafactor", std::move(groups)) {
  check_groups();
}

void Adafactor::check_options(const AdafactorOptions& o) const {
  LOOM_CHECK(o.lr() >= 0, name_, "expected lr >= 0, found ", o.lr());
  LOOM_CHECK(o.beta2_decay() <= 0, name_, "expected beta2_decay <= 0, found ", o.beta2_decay());
  LOOM_CHECK(!o.eps1() || *o.eps1() >= 0, name_, "expected eps1 >= 0, found ", *o.eps1());
  LOOM_CHECK(o.eps2() >= 0, name_, "expected eps2 >= 0, found ", o.eps2());
  LOOM_CHECK(o.d() >= 1, name_, "expected a clipping threshold d >= 1, found ", o.d());
  LOOM_CHECK(o.weight_decay() >= 0, name_, "expected weight_decay >= 0, found ", o.weight_decay());
}

namespace {

double rms(const Tensor& t) {
  return loom::linalg_vector_norm(t).item<double>() /
         std::sqrt(static_cast<double>(std::max<int64_t>(t.numel(), 1)));
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

}  // namespace

// rho = min(lr, 1/sqrt(t)); alpha = max(eps2, rms(p)) * rho; the second moment (factored
// for matrices: row and column means of g^2, combined as row col / mean(row)) moves
// toward g^2 by t^beta2_decay; u = g / sqrt(max(v, eps1^2)); p -= alpha u / max(1,
// rms(u) / d).
void Adafactor::step() {
  NoGradGuard no_grad;
  state_.resize(groups_.size());
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const AdafactorOptions& o = groups_[gi].options;
    std::vector<Tensor>& params = groups_[gi].params;
    state_[gi].resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor& p = params[i];
      Tensor g = p.grad();
      if (!g.defined()) continue;
      AdafactorParamState& s = state_[gi][i];
      const bool factored = p.dim() >= 2;
      if (factored && !s.row_var.defined()) {
        s.row_var = loom::zeros_like(loom::mean(p, IntList{-1}, true));
        s.col_var = loom::zeros_like(loom::mean(p, IntList{-2}, true));
      }
      if (!factored && !s.variance.defined()) s.variance = loom::zeros_like(p);
      ++s.step;
      const double t = static_cast<double>(s.step);
      const double eps1 = o.eps1().value_or(dtype_eps(p.dtype()));
      const double one_minus_beta2 = std::pow(t, o.beta2_decay());
      const double rho = std::min(o.lr(), 1.0 / std::sqrt(t));
      const double alpha = std::max(o.eps2(), rms(p)) * rho;
      if (o.weight_decay() != 0) p *= 1.0 - o.lr() * o.weight_decay();
      Tensor variance;
      Tensor squared = g * g;
      if (factored) {
        loom::lerp_(s.row_var, loom::mean(squared, IntList{-1}, true), one_minus_beta2);
        loom::lerp_(s.col_var, loom::mean(squared, IntList{-2}, true), one_minus_beta2);
        variance = loom::matmul(s.row_var, s.col_var);
        variance /= loom::clamp_min(loom::mean(s.row_var, IntList{-2}, true), Scalar(eps1));
      } else {
        loom::lerp_(s.variance, squared, one_minus_beta2);
        variance = s.variance;
      }
      Tensor update = loom::rsqrt(loom::clamp_min(variance, Scalar(eps1 * eps1))) * g;
      const double denom = std::max(1.0, rms(update) / o.d());
      loom::add_(p, update, -alpha / denom);
    }
  }
}

std::vector<Optimizer::StateField> Adafactor::state_fields(size_t group, size_t i) {
  state_.resize(groups_.size());
  state_[group].resize(groups_[group].params.size());
  AdafactorParamState& s = state_[group][i];
  return {{"step", nullptr, &s.step},
          {"row_var", &s.row_var},
          {"col_var", &s.col_var},
          {"variance", &s.variance}};
}

const AdafactorParamState& Adafactor::state(size_t group, size_t i) const {
  LOOM_CHECK(group < state_.size() && i < state_[group].size(), name_, "no state for parameter ", i,
             " of group ", group, " (before its first step)");
  return state_[group][i];
}

}  // namespace loom::optim
