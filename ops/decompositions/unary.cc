// Decompositions of the unary family: clamp with tensor bounds, prelu, glu, relu's
// gradient threshold_backward, the inverse hyperbolic functions and bitwise_not.
#include <vector>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// clamp.Tensor: max(self, min) then min(_, max), elementwise with broadcasting and
// promotion over all three (as PyTorch's clamp.Tensor); NaN in any operand propagates.
Tensor clamp_tensor(const Tensor& self, const std::optional<Tensor>& min,
                    const std::optional<Tensor>& max) {
  if (!min && !max) {
    fail("loom::clamp.Tensor", "expected at least one of min and max, found neither");
  }
  Tensor result = self;
  if (min) result = loom::maximum(result, *min);
  if (max) result = loom::minimum(result, *max);
  return result.impl() == self.impl() ? loom::clone(self) : result;
}

Tensor clamp_tensor_(const Tensor& self, const std::optional<Tensor>& min,
                     const std::optional<Tensor>& max) {
  Tensor result = clamp_tensor(self, min, max);
  constexpr const char* op = "loom::clamp_.Tensor";
  if (!same_shape(result.sizes(), self.sizes())) {
    fail(op, "the result has shape ", shape_to_string(result.sizes()), " but self has shape ",
         shape_to_string(self.sizes()));
  }
  if (!can_cast(result.dtype(), self.dtype())) {
    fail(op, "result type ", scalar_type_name(result.dtype()), " can't be cast to self's dtype ",
         scalar_type_name(self.dtype()));
  }
  loom::copy_(self, result);
  return self;
}

// prelu: x where x > 0, else weight * x, with one weight or one per channel (dim 1).
Tensor prelu(const Tensor& self, const Tensor& weight) {
  constexpr const char* op = "loom::prelu";
  if (weight.dim() > 1) {
    fail(op, "expected a 0-D or 1-D weight, found ", weight.dim(), " dims");
  }
  const int64_t channels = self.dim() >= 2 ? self.sizes()[1] : 1;
  if (weight.numel() != 1 && weight.numel() != channels) {
    fail(op, "expected 1 weight or one per channel (", channels, " channels in dim 1), found ",
         weight.numel());
  }
  Tensor w = weight;
  if (weight.numel() != 1 && self.dim() > 2) {
    std::vector<int64_t> shape(static_cast<size_t>(self.dim()), 1);
    shape[1] = channels;
    w = weight.reshape(shape);
  }
  return loom::where(loom::gt(self, wrapped_number(0.0)), self, loom::mul(w, self));
}

// glu: the first half of `dim` times the sigmoid of the second half.
Tensor glu(const Tensor& self, int64_t dim) {
  constexpr const char* op = "loom::glu";
  if (self.dim() == 0) fail(op, "expected a tensor with a dim to halve, found a 0-dim tensor");
  if (!is_floating_point(self.dtype())) {
    fail(op, "expected a floating point input, found ", scalar_type_name(self.dtype()));
  }
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const int64_t size = self.sizes()[d];
  if (size % 2 != 0) fail(op, "expected an even size in dim ", d, " to halve, found ", size);
  return loom::mul(self.narrow(d, 0, size / 2), loom::sigmoid(self.narrow(d, size / 2, size / 2)));
}

// threshold_backward: grad_output where self > threshold, zero elsewhere (a NaN in self lets
// the gradient through), broadcast and promoted as where.self; relu's gradient is
// threshold_backward(grad, relu's result, 0), as in PyTorch.
Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {
  return loom::where(loom::le(self, wrapped_scalar(threshold)), wrapped_number(0.0), grad_output);
}

// Note [Inverse hyperbolic functions through log1p]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), acosh(x) = log1p(t +
// sqrt(t (t + 2))) with t = x - 1, atanh(x) = log1p(2x / (1 - x)) / 2: equal to the
// textbook log forms, and accurate near 0 (asinh, atanh) and 1 (acosh), where log(x + ...)
// loses every digit to cancellation. Above 2^28, where x^2 would overflow float32 or lose
// the 1, asinh and acosh are log(|x|) + log(2). Integer and bool inputs compute in float32,
// as PyTorch's.
Tensor as_floating(const Tensor& self) {
  return is_floating_point(self.dtype()) ? self : self.to(ScalarType::Float32);
}

constexpr double kLarge = 268435456.0;  // 2^28
constexpr double kLog2 = 0.69314718055994530942;

Tensor asinh(const Tensor& input) {
  Tensor x = as_floating(input);
  Tensor a = loom::abs(x);
  Tensor small = loom::log1p(loom::add(
      a, loom::div(loom::mul(x, x), loom::add(loom::sqrt(loom::add(loom::mul(x, x), 1)), 1))));
  Tensor large = loom::add(loom::log(a), kLog2);
  return loom::mul(loom::sign(x), loom::where(loom::gt(a, kLarge), large, small));
}

Tensor acosh(const Tensor& input) {
  Tensor x = as_floating(input);
  Tensor t = loom::sub(x, 1);
  Tensor near = loom::log1p(loom::add(t, loom::sqrt(loom::mul(t, loom::add(t, 2)))));
  Tensor large = loom::add(loom::log(x), kLog2);
  return loom::where(loom::gt(x, kLarge), large, near);
}

Tensor atanh(const Tensor& input) {
  Tensor x = as_floating(input);
  Tensor one_minus_x = loom::add(loom::neg(x), 1);
  return loom::mul(loom::log1p(loom::div(loom::mul(x, 2), one_minus_x)), 0.5);
}

Tensor bitwise_not(const Tensor& self) {
  if (self.dtype() == ScalarType::Bool) return loom::logical_not(self);
  if (!is_integral(self.dtype(), /*include_bool=*/false)) {
    fail("loom::bitwise_not", "expected an integer or bool tensor, found ",
         scalar_type_name(self.dtype()));
  }
  return loom::bitwise_xor(self, -1);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::clamp.Tensor", decomposition<&clamp_tensor>()},
    {"loom::clamp_.Tensor", decomposition<&clamp_tensor_>()},
    {"loom::prelu", decomposition<&prelu>()},
    {"loom::glu", decomposition<&glu>()},
    {"loom::threshold_backward", decomposition<&threshold_backward>()},
    {"loom::asinh", decomposition<&asinh>()},
    {"loom::acosh", decomposition<&acosh>()},
    {"loom::atanh", decomposition<&atanh>()},
    {"loom::bitwise_not", decomposition<&bitwise_not>()},
};

}  // namespace

std::span<const DecompositionEntry> unary_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
