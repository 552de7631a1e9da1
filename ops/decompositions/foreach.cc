// Decompositions of the foreach ops: each is the loop of its per-tensor op over element i
// of every list, which every backend gets; the CPU plugin overrides them with kernels that
// cover all the lists in one pass (plugins/cpu/kernels/foreach.cc). Also the fused Adam
// updates (Note [Fused Adam]).
//
// Note [Foreach ops]
// ~~~~~~~~~~~~~~~~~~
// `_foreach_mul_(params, 0.9)` is `params[i].mul_(0.9)` for every i, and must give the same
// bits, so an optimizer may use either (torch.optim's foreach and single-tensor paths). The
// lists must have the same length (at least one tensor); scalars come one for all
// (Scalar) or one per tensor (float[], of the lists' length). A Scalar travels as the
// per-tensor op's C++ number does (a wrapped number), so dtypes and promotion follow the
// per-tensor op too. A backend's multi-tensor kernel may take its fast path only where the
// loop's order cannot show: written tensors disjoint from each other, and an input tensor
// either disjoint from every written one or the very tensor written at its own position
// (`_foreach_addcmul_(v, g, g)`); elsewhere it runs the loop. The ops refuse autograd
// (tensors that require grad): optimizers call them under no-grad, as PyTorch's do.
#include <cmath>
#include <optional>

#include "decomposition.h"

namespace loom::ops {
namespace {

using TensorVector = std::vector<Tensor>;

// Checks the lists of one call: not empty, all of self's length.
void check_lists(const char* op, const TensorVector& self,
                 std::initializer_list<std::pair<const char*, size_t>> others) {
  if (self.empty()) fail(op, "expected a non-empty tensor list for self, found an empty one");
  for (const auto& [name, size] : others) {
    if (size != self.size()) {
      fail(op, "expected ", name, " to have self's length ", self.size(), ", found ", size);
    }
  }
}

TensorVector foreach_add_list(const TensorVector& self, const TensorVector& other,
                              const Scalar& alpha) {
  check_lists("loom::_foreach_add.List", self, {{"other", other.size()}});
  TensorVector out;
  out.reserve(self.size());
  for (size_t i = 0; i < self.size(); ++i) out.push_back(loom::add(self[i], other[i], alpha));
  return out;
}

void foreach_add_scalar_(const TensorVector& self, const Scalar& scalar) {
  check_lists("loom::_foreach_add_.Scalar", self, {});
  for (const Tensor& t : self) loom::add_(t, wrapped_scalar(scalar));
}

void foreach_add_list_(const TensorVector& self, const TensorVector& other, const Scalar& alpha) {
  check_lists("loom::_foreach_add_.List", self, {{"other", other.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::add_(self[i], other[i], alpha);
}

TensorVector foreach_mul_list(const TensorVector& self, const TensorVector& other) {
  check_lists("loom::_foreach_mul.List", self, {{"other", other.size()}});
  TensorVector out;
  out.reserve(self.size());
  for (size_t i = 0; i < self.size(); ++i) out.push_back(loom::mul(self[i], other[i]));
  return out;
}

void foreach_mul_scalar_(const TensorVector& self, const Scalar& scalar) {
  check_lists("loom::_foreach_mul_.Scalar", self, {});
  for (const Tensor& t : self) loom::mul_(t, wrapped_scalar(scalar));
}

void foreach_mul_scalar_list_(const TensorVector& self, std::span<const double> scalars) {
  check_lists("loom::_foreach_mul_.ScalarList", self, {{"scalars", scalars.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::mul_(self[i], wrapped_scalar(scalars[i]));
}

void foreach_mul_list_(const TensorVector& self, const TensorVector& other) {
  check_lists("loom::_foreach_mul_.List", self, {{"other", other.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::mul_(self[i], other[i]);
}

void foreach_div_scalar_list_(const TensorVector& self, std::span<const double> scalars) {
  check_lists("loom::_foreach_div_.ScalarList", self, {{"scalars", scalars.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::div_(self[i], wrapped_scalar(scalars[i]));
}

void foreach_maximum_list_(const TensorVector& self, const TensorVector& other) {
  check_lists("loom::_foreach_maximum_.List", self, {{"other", other.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::maximum_(self[i], other[i]);
}

TensorVector foreach_clamp_min_scalar(const TensorVector& self, const Scalar& scalar) {
  check_lists("loom::_foreach_clamp_min.Scalar", self, {});
  TensorVector out;
  out.reserve(self.size());
  for (const Tensor& t : self) out.push_back(loom::clamp_min(t, scalar));
  return out;
}

TensorVector foreach_sqrt(const TensorVector& self) {
  check_lists("loom::_foreach_sqrt", self, {});
  TensorVector out;
  out.reserve(self.size());
  for (const Tensor& t : self) out.push_back(loom::sqrt(t));
  return out;
}

void foreach_rsqrt_(const TensorVector& self) {
  check_lists("loom::_foreach_rsqrt_", self, {});
  for (const Tensor& t : self) loom::rsqrt_(t);
}

void foreach_lerp_scalar_(const TensorVector& self, const TensorVector& tensors1,
                          const Scalar& weight) {
  check_lists("loom::_foreach_lerp_.Scalar", self, {{"tensors1", tensors1.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::lerp_(self[i], tensors1[i], weight);
}

void foreach_lerp_scalar_list_(const TensorVector& self, const TensorVector& tensors1,
                               std::span<const double> weight) {
  check_lists("loom::_foreach_lerp_.ScalarList", self,
              {{"tensors1", tensors1.size()}, {"weight", weight.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::lerp_(self[i], tensors1[i], weight[i]);
}

TensorVector foreach_addcmul_scalar(const TensorVector& self, const TensorVector& tensor1,
                                    const TensorVector& tensor2, const Scalar& value) {
  check_lists("loom::_foreach_addcmul.Scalar", self,
              {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  TensorVector out;
  out.reserve(self.size());
  for (size_t i = 0; i < self.size(); ++i) {
    out.push_back(loom::addcmul(self[i], tensor1[i], tensor2[i], value));
  }
  return out;
}

void foreach_addcmul_scalar_(const TensorVector& self, const TensorVector& tensor1,
                             const TensorVector& tensor2, const Scalar& value) {
  check_lists("loom::_foreach_addcmul_.Scalar", self,
              {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::addcmul_(self[i], tensor1[i], tensor2[i], value);
}

void foreach_addcdiv_scalar_(const TensorVector& self, const TensorVector& tensor1,
                             const TensorVector& tensor2, const Scalar& value) {
  check_lists("loom::_foreach_addcdiv_.Scalar", self,
              {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::addcdiv_(self[i], tensor1[i], tensor2[i], value);
}

void foreach_addcdiv_scalar_list_(const TensorVector& self, const TensorVector& tensor1,
                                  const TensorVector& tensor2, std::span<const double> scalars) {
  check_lists(
      "loom::_foreach_addcdiv_.ScalarList", self,
      {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}, {"scalars", scalars.size()}});
  for (size_t i = 0; i < self.size(); ++i) {
    loom::addcdiv_(self[i], tensor1[i], tensor2[i], scalars[i]);
  }
}

TensorVector foreach_norm_scalar(const TensorVector& self, const Scalar& ord) {
  check_lists("loom::_foreach_norm.Scalar", self, {});
  TensorVector out;
  out.reserve(self.size());
  for (const Tensor& t : self) out.push_back(loom::linalg_vector_norm(t, ord));
  return out;
}

// Note [Fused Adam]
// ~~~~~~~~~~~~~~~~~
// `_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr,
// beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf)` is one step of
// Adam (AdamW for `_fused_adamw_`: decoupled weight decay) over every parameter of a
// group, as torch._fused_adam_: a backend may update all of them in a few launches (the
// GPU plugins: one per table of chunks, Note [Multi-tensor launches]). state_steps holds
// each parameter's step count after this step (the caller increments it first, as
// torch.optim does): one-element tensors on the parameters' device or on the cpu.
// With found_inf set (non-zero) the step changes nothing; with grad_scale the gradients
// are divided by it in place first. max_exp_avg_sqs is empty unless amsgrad. The
// decomposition is Adam's single-tensor update (loom::optim::Adam::step_single), so both
// give the same bits; it reads each step count and found_inf on the host.
// The one element of t, read on the host as a double.
double host_value(const Tensor& t) {
  const Tensor host = loom::to(t, Device{kCPU, -1}, ScalarType::Float64, false, true);
  return *host.data<double>();
}

void fused_adam(bool decoupled, const TensorVector& self, const TensorVector& grads,
                const TensorVector& exp_avgs, const TensorVector& exp_avg_sqs,
                const TensorVector& max_exp_avg_sqs, const TensorVector& state_steps, double lr,
                double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                bool maximize, const std::optional<Tensor>& grad_scale,
                const std::optional<Tensor>& found_inf) {
  if (found_inf && host_value(*found_inf) != 0) return;
  for (size_t i = 0; i < self.size(); ++i) {
    const Tensor& p = self[i];
    Tensor g = grads[i];
    if (grad_scale) loom::div_(g, loom::reshape(*grad_scale, {}));
    if (maximize) g = loom::neg(g);
    if (weight_decay != 0) {
      if (decoupled) {
        loom::mul_(p, wrapped_scalar(1.0 - lr * weight_decay));
      } else {
        g = loom::add(g, p, weight_decay);
      }
    }
    loom::lerp_(exp_avgs[i], g, 1.0 - beta1);
    loom::mul_(exp_avg_sqs[i], wrapped_scalar(beta2));
    loom::addcmul_(exp_avg_sqs[i], g, g, 1.0 - beta2);
    const double step = host_value(state_steps[i]);
    const double bias_correction1 = 1.0 - std::pow(beta1, step);
    const double bias_correction2 = 1.0 - std::pow(beta2, step);
    Tensor second = exp_avg_sqs[i];
    if (amsgrad) {
      loom::copy_(max_exp_avg_sqs[i], loom::maximum(max_exp_avg_sqs[i], exp_avg_sqs[i]));
      second = max_exp_avg_sqs[i];
    }
    Tensor denom = loom::sqrt(second);
    loom::div_(denom, wrapped_scalar(std::sqrt(bias_correction2)));
    loom::add_(denom, wrapped_scalar(eps));
    loom::addcdiv_(p, exp_avgs[i], denom, -lr / bias_correction1);
  }
}

template <bool Decoupled>
void fused_adam_(const TensorVector& self, const TensorVector& grads, const TensorVector& exp_avgs,
                 const TensorVector& exp_avg_sqs, const TensorVector& max_exp_avg_sqs,
                 const TensorVector& state_steps, double lr, double beta1, double beta2,
                 double weight_decay, double eps, bool amsgrad, bool maximize,
                 const std::optional<Tensor>& grad_scale, const std::optional<Tensor>& found_inf) {
  fused_adam(Decoupled, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
             beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::_foreach_add.List", decomposition<&foreach_add_list>()},
    {"loom::_foreach_add_.Scalar", decomposition<&foreach_add_scalar_>()},
    {"loom::_foreach_add_.List", decomposition<&foreach_add_list_>()},
    {"loom::_foreach_mul.List", decomposition<&foreach_mul_list>()},
    {"loom::_foreach_mul_.Scalar", decomposition<&foreach_mul_scalar_>()},
    {"loom::_foreach_mul_.ScalarList", decomposition<&foreach_mul_scalar_list_>()},
    {"loom::_foreach_mul_.List", decomposition<&foreach_mul_list_>()},
    {"loom::_foreach_div_.ScalarList", decomposition<&foreach_div_scalar_list_>()},
    {"loom::_foreach_maximum_.List", decomposition<&foreach_maximum_list_>()},
    {"loom::_foreach_clamp_min.Scalar", decomposition<&foreach_clamp_min_scalar>()},
    {"loom::_foreach_sqrt", decomposition<&foreach_sqrt>()},
    {"loom::_foreach_rsqrt_", decomposition<&foreach_rsqrt_>()},
    {"loom::_foreach_lerp_.Scalar", decomposition<&foreach_lerp_scalar_>()},
    {"loom::_foreach_lerp_.ScalarList", decomposition<&foreach_lerp_scalar_list_>()},
    {"loom::_foreach_addcmul.Scalar", decomposition<&foreach_addcmul_scalar>()},
    {"loom::_foreach_addcmul_.Scalar", decomposition<&foreach_addcmul_scalar_>()},
    {"loom::_foreach_addcdiv_.Scalar", decomposition<&foreach_addcdiv_scalar_>()},
    {"loom::_foreach_addcdiv_.ScalarList", decomposition<&foreach_addcdiv_scalar_list_>()},
    {"loom::_foreach_norm.Scalar", decomposition<&foreach_norm_scalar>()},
    {"loom::_fused_adam_", decomposition<&fused_adam_<false>>()},
    {"loom::_fused_adamw_", decomposition<&fused_adam_<true>>()},
};

}  // namespace

std::span<const DecompositionEntry> foreach_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
