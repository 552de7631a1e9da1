// Derivatives of the unary family: the pointwise functions of one tensor, activations
// included. Rounding functions have zero gradient; isnan/isinf/isfinite are not
// differentiable.
#include <cmath>

#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;

// Registers `op` with gradient grad * derivative(self), saving self.
template <Tensor (*Derivative)(const Tensor& self)>
Formula of_input(const char* name) {
  return {name, inputs({0}), 0,
          [](BackwardContext& c) { c.set(0, [&] { return c.grad() * Derivative(c.input(0)); }); }};
}

// Registers `op` with gradient grad * derivative(result), saving the result.
template <Tensor (*Derivative)(const Tensor& result)>
Formula of_result(const char* name) {
  return {name, 0, outputs({0}),
          [](BackwardContext& c) { c.set(0, [&] { return c.grad() * Derivative(c.result()); }); }};
}

Formula zero_gradient(const char* name) {
  return {name, 0, 0,
          [](BackwardContext& c) { c.set(0, [&] { return sdk::zeros_like(c.grad()); }); }};
}

Tensor d_abs(const Tensor& x) {
  return op::sign(x);
}
Tensor d_exp(const Tensor& y) {
  return y;
}
Tensor d_exp2(const Tensor& y) {
  return y * kLn2;
}
Tensor d_expm1(const Tensor& y) {
  return y + 1.0;
}
Tensor d_log(const Tensor& x) {
  return op::reciprocal(x);
}
Tensor d_log2(const Tensor& x) {
  return op::reciprocal(x * kLn2);
}
Tensor d_log10(const Tensor& x) {
  return op::reciprocal(x * kLn10);
}
Tensor d_log1p(const Tensor& x) {
  return op::reciprocal(x + 1.0);
}
Tensor d_sqrt(const Tensor& y) {
  return op::reciprocal(y * 2.0);
}
Tensor d_rsqrt(const Tensor& y) {
  return y * y * y * -0.5;
}
Tensor d_reciprocal(const Tensor& y) {
  return -(y * y);
}
Tensor d_sin(const Tensor& x) {
  return op::cos(x);
}
Tensor d_cos(const Tensor& x) {
  return -op::sin(x);
}
Tensor d_tan(const Tensor& y) {
  return y * y + 1.0;
}
Tensor d_asin(const Tensor& x) {
  return op::rsqrt(1.0 - x * x);
}
Tensor d_acos(const Tensor& x) {
  return -op::rsqrt(1.0 - x * x);
}
Tensor d_atan(const Tensor& x) {
  return op::reciprocal(x * x + 1.0);
}
Tensor d_sinh(const Tensor& x) {
  return op::cosh(x);
}
Tensor d_cosh(const Tensor& x) {
  return op::sinh(x);
}
Tensor d_tanh(const Tensor& y) {
  return 1.0 - y * y;
}
Tensor d_sigmoid(const Tensor& y) {
  return y * (1.0 - y);
}
Tensor d_erf(const Tensor& x) {
  return op::exp(-(x * x)) * kTwoOverSqrtPi;
}
Tensor d_silu(const Tensor& x) {
  Tensor s = op::sigmoid(x);
  return s * (x * (1.0 - s) + 1.0);
}
Tensor d_mish(const Tensor& x) {
  Tensor t = op::tanh(op::softplus(x));
  return t + x * op::sigmoid(x) * (1.0 - t * t);
}
Tensor d_log_sigmoid(const Tensor& x) {
  return op::sigmoid(-x);
}
Tensor d_hardswish(const Tensor& x) {
  Tensor middle = (x * 2.0 + 3.0) / 6.0;
  Tensor below = op::le(x, scalar_like(x, -3.0));
  Tensor above = op::ge(x, scalar_like(x, 3.0));
  return op::masked_fill(zero_where(middle, below), above, sdk::scalar(1.0));
}
Tensor d_hardsigmoid(const Tensor& x) {
  Tensor inside = op::logical_and(op::gt(x, scalar_like(x, -3.0)), op::lt(x, scalar_like(x, 3.0)));
  return op::to(inside, x.dtype()) / 6.0;
}
// gelu: x Phi(x) exactly, or 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor d_gelu(const Tensor& x, std::string_view approximate) {
  constexpr double kSqrtTwoOverPi = 0.79788456080286535588;
  constexpr double kInvSqrtTwo = 0.70710678118654752440;
  constexpr double kInvSqrtTwoPi = 0.39894228040143267794;
  if (approximate == "tanh") {
    Tensor x2 = x * x;
    Tensor t = op::tanh((x + x2 * x * 0.044715) * kSqrtTwoOverPi);
    return (t + 1.0) * 0.5 +
           x * (1.0 - t * t) * ((x2 * (3 * 0.044715) + 1.0) * (0.5 * kSqrtTwoOverPi));
  }
  Tensor cdf = (op::erf(x * kInvSqrtTwo) + 1.0) * 0.5;
  return cdf + x * op::exp(x * x * -0.5) * kInvSqrtTwoPi;
}
Tensor d_nan_to_num(const Tensor& x) {
  return op::to(op::isfinite(x), x.dtype());
}

// The gradient passes where lo <(=) self <(=) hi; Scalar bounds may be None.
Tensor pass_between(BackwardContext& c, std::optional<double> lo, std::optional<double> hi,
                    bool strict) {
  Tensor self = c.input(0);
  Tensor g = c.grad();
  if (lo)
    g = zero_where(
        g, strict ? op::le(self, scalar_like(self, *lo)) : op::lt(self, scalar_like(self, *lo)));
  if (hi)
    g = zero_where(
        g, strict ? op::ge(self, scalar_like(self, *hi)) : op::gt(self, scalar_like(self, *hi)));
  return g;
}

std::optional<double> optional_scalar(const BackwardContext& c, size_t arg) {
  if (c.is_none(arg)) return std::nullopt;
  return c.scalar_arg(arg).to_double();
}

}  // namespace

void register_unary_formulas(FormulaTable& t) {
  t.add({"loom::neg", 0, 0, [](BackwardContext& c) { c.set(0, [&] { return -c.grad(); }); }});
  t.add(of_input<d_abs>("loom::abs"));
  t.add(of_result<d_exp>("loom::exp"));
  t.add(of_result<d_exp2>("loom::exp2"));
  t.add(of_result<d_expm1>("loom::expm1"));
  t.add(of_input<d_log>("loom::log"));
  t.add(of_input<d_log2>("loom::log2"));
  t.add(of_input<d_log10>("loom::log10"));
  t.add(of_input<d_log1p>("loom::log1p"));
  t.add(of_result<d_sqrt>("loom::sqrt"));
  t.add(of_result<d_rsqrt>("loom::rsqrt"));
  t.add(of_result<d_reciprocal>("loom::reciprocal"));
  t.add(of_input<d_sin>("loom::sin"));
  t.add(of_input<d_cos>("loom::cos"));
  t.add(of_result<d_tan>("loom::tan"));
  t.add(of_input<d_asin>("loom::asin"));
  t.add(of_input<d_acos>("loom::acos"));
  t.add(of_input<d_atan>("loom::atan"));
  t.add(of_input<d_sinh>("loom::sinh"));
  t.add(of_input<d_cosh>("loom::cosh"));
  t.add(of_result<d_tanh>("loom::tanh"));
  t.add(of_result<d_sigmoid>("loom::sigmoid"));
  t.add(of_input<d_erf>("loom::erf"));
  t.add(of_input<d_silu>("loom::silu"));
  t.add(of_input<d_mish>("loom::mish"));
  t.add(of_input<d_log_sigmoid>("loom::log_sigmoid"));
  t.add(of_input<d_hardswish>("loom::hardswish"));
  t.add(of_input<d_hardsigmoid>("loom::hardsigmoid"));
  t.add(of_input<d_nan_to_num>("loom::nan_to_num"));
  t.add({"loom::gelu", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad() * d_gelu(c.input(0), c.str_arg(1)); });
         }});
  t.add({"loom::leaky_relu", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             Tensor x = c.input(0);
             Tensor slope = scalar_like(x, c.scalar_arg(1).to_double());
             return c.grad() *
                    op::where(op::gt(x, scalar_like(x, 0.0)), scalar_like(x, 1.0), slope);
           });
         }});
  // relu's gradient from its result, in one op (one pass on the CPU), as in PyTorch.
  t.add({"loom::relu", 0, outputs({0}), [](BackwardContext& c) {
           c.set(0, [&] { return op::threshold_backward(c.grad(), c.result(), 0.0); });
         }});
  // Linear in grad_output (relu's double backward); self only selects, so it gets none.
  t.add({"loom::threshold_backward", inputs({1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return op::threshold_backward(c.grad(), c.input(1), c.scalar_arg(2)); });
         }});
  // elu: scale * x for x > 0, scale * alpha * (exp(input_scale * x) - 1) otherwise.
  t.add({"loom::elu", inputs({0}), outputs({0}), [](BackwardContext& c) {
           c.set(0, [&] {
             const double alpha = c.scalar_arg(1).to_double();
             const double scale = c.scalar_arg(2).to_double();
             const double input_scale = c.scalar_arg(3).to_double();
             Tensor x = c.input(0);
             Tensor negative = (c.result() + alpha * scale) * input_scale;
             Tensor positive = op::gt(x, scalar_like(x, 0.0));
             return c.grad() * op::where(positive, scalar_like(x, scale), negative);
           });
         }});
  // softplus: log(1 + exp(beta x)) / beta, the identity where beta x > threshold.
  t.add({"loom::softplus", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             const double beta = c.scalar_arg(1).to_double();
             const double threshold = c.scalar_arg(2).to_double();
             Tensor x = c.input(0);
             Tensor linear = op::gt(x * beta, scalar_like(x, threshold));
             return c.grad() * op::masked_fill(op::sigmoid(x * beta), linear, sdk::scalar(1.0));
           });
         }});
  t.add({"loom::clamp", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             return pass_between(c, optional_scalar(c, 1), optional_scalar(c, 2), false);
           });
         }});
  t.add({"loom::clamp_min", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return pass_between(c, c.scalar_arg(1).to_double(), {}, false); });
         }});
  t.add({"loom::clamp_max", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return pass_between(c, {}, c.scalar_arg(1).to_double(), false); });
         }});
  // clamp with tensor bounds, min(max(self, min), max): self's gradient where it is
  // within the bounds, min's where it was raised to min and that stood, max's where max
  // won (so with min > max, max wins, as in the forward).
  t.add({"loom::clamp.Tensor", inputs({0, 1, 2}), 0, [](BackwardContext& c) {
           Tensor self = c.input(0);
           Tensor below = c.is_none(1) ? Tensor() : op::lt(self, c.input(1));
           Tensor raised = c.is_none(1) ? self : op::maximum(self, c.input(1));
           Tensor above = c.is_none(2) ? Tensor() : op::gt(raised, c.input(2));
           c.set(0, [&] {
             Tensor g = c.grad();
             if (below.defined()) g = zero_where(g, below);
             if (above.defined()) g = zero_where(g, above);
             return g;
           });
           c.set(1, [&] {
             Tensor g = zero_where(c.grad(), op::logical_not(below));
             return above.defined() ? zero_where(g, above) : g;
           });
           c.set(2, [&] { return zero_where(c.grad(), op::logical_not(above)); });
         }});
  t.add({"loom::hardtanh", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             return pass_between(c, c.scalar_arg(1).to_double(), c.scalar_arg(2).to_double(), true);
           });
         }});
  for (const char* name :
       {"loom::sign", "loom::floor", "loom::ceil", "loom::round", "loom::trunc"}) {
    t.add(zero_gradient(name));
  }
  t.not_differentiable({"loom::isnan", "loom::isinf", "loom::isfinite", "loom::logical_not"});
}

}  // namespace loom::autograd
