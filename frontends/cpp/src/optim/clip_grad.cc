// clip_grad_norm_ and clip_grad_value_ over the norm, mul and clamp ops (or their foreach
// forms over all gradients).
#include "loom/optim/clip_grad.h"

#include <cmath>
#include <limits>

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/operators.h"
#include "loom/ops/generated/ops.h"
#include "loom/optim/optimizer.h"
#include "loom/tensor_io.h"

namespace loom::optim {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite, std::optional<bool> foreach) {
  const char* what = "optim::clip_grad_norm_";
  LOOM_CHECK(max_norm >= 0, what, "expected max_norm >= 0, found ", max_norm);
  LOOM_CHECK(norm_type > 0, what, "expected a positive norm_type, found ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  if (grads.empty()) return 0.0;
  const bool lists = use_foreach(foreach, grads);
  std::vector<Tensor> norms;
  if (lists) {
    norms = loom::_foreach_norm(grads, norm_type);
  } else {
    for (const Tensor& g : grads) norms.push_back(loom::linalg_vector_norm(g, norm_type));
  }
  const bool inf = std::isinf(norm_type);
  double total = 0.0;
  for (const Tensor& norm : norms) {
    const double n = norm.item<double>();
    total = inf ? std::max(total, n) : total + std::pow(n, norm_type);
  }
  if (!inf) total = std::pow(total, 1.0 / norm_type);
  LOOM_CHECK(!error_if_nonfinite || std::isfinite(total), what, "the total norm of order ",
             norm_type, " of the gradients is ", total,
             ", not finite (set error_if_nonfinite=false to scale anyway)");
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0 && lists) {
    loom::_foreach_mul_(grads, coef);
  } else if (coef < 1.0) {
    for (Tensor& g : grads) g *= coef;
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  LOOM_CHECK(clip_value >= 0, "optim::clip_grad_value_", "expected clip_value >= 0, found ",
             clip_value);
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) loom::clamp_(g, Scalar(-clip_value), Scalar(clip_value));
  }
}

}  // namespace loom::optim
