// Adafactor, following torch.optim.Adafactor's single-tensor update.
#include "loom/optim/adafactor.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  for_each_update(
      state_, [](const AdafactorOptions& o, Tensor& p, Tensor g, AdafactorParamState& s) {
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
      });
}

std::vector<Optimizer::StateField> Adafactor::state_fields(size_t group, size_t i) {
  AdafactorParamState& s = state_slot(state_, group, i);
  return {{"step", nullptr, &s.step},
          {"row_var", &s.row_var},
          {"col_var", &s.col_var},
          {"variance", &s.variance}};
}

}  // namespace loom::optim
