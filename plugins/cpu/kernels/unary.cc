// Unary pointwise kernels: the out= variants of every unary structured op in ops.def, and
// relu's gradient threshold_backward (a decomposition op the plugin computes in one pass).
//
// Per the structured-op contract (Note [Structured ops] in the dispatcher) `self` already
// has out's shape and the compute dtype; out has that dtype too, or bool for predicates.
// PromotedFloat ops only ever see floating dtypes. float16 / bfloat16 compute in float.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "../elementwise_loop.h"
#include "../kernels.h"
#include "../scalar_types.h"
#include "loom/sdk/ops.hpp"

namespace loom::cpu {
namespace {

using sdk::Scalar;
using sdk::Tensor;
namespace op = sdk::op;

// Runs fn (acc_type<T> -> acc_type<T>) over a floating tensor.
template <typename Fn>
Tensor float_unary(const char* op, const Tensor& self, const Tensor& out, Fn fn) {
  dispatch_floating_types(out.dtype(), op, [&]<typename T>(T) {
    using A = acc_type<T>;
    map_elements<T, T>(
        out, [fn](T x) -> T { return static_cast<T>(fn(static_cast<A>(x))); }, self);
  });
  return out;
}

// out = self for types where the op is the identity.
template <typename T>
void copy_elements(const Tensor& self, const Tensor& out) {
  map_elements<T, T>(
      out, [](T x) -> T { return x; }, self);
}

// A kernel `NAME_out(self, out)` applying EXPR (in x of type A = the acc type) to a
// floating tensor.
#define LOOM_CPU_FLOAT_UNARY(NAME, EXPR)                     \
  Tensor NAME##_out(const Tensor& self, const Tensor& out) { \
    return float_unary(#NAME, self, out, [](auto x) {        \
      using A [[maybe_unused]] = decltype(x);                \
      return static_cast<A>(EXPR);                           \
    });                                                      \
  }

LOOM_CPU_FLOAT_UNARY(exp, std::exp(x))
LOOM_CPU_FLOAT_UNARY(exp2, std::exp2(x))
LOOM_CPU_FLOAT_UNARY(expm1, std::expm1(x))
LOOM_CPU_FLOAT_UNARY(log, std::log(x))
LOOM_CPU_FLOAT_UNARY(log2, std::log2(x))
LOOM_CPU_FLOAT_UNARY(log10, std::log10(x))
LOOM_CPU_FLOAT_UNARY(log1p, std::log1p(x))
LOOM_CPU_FLOAT_UNARY(sqrt, std::sqrt(x))
LOOM_CPU_FLOAT_UNARY(rsqrt, A(1) / std::sqrt(x))
LOOM_CPU_FLOAT_UNARY(reciprocal, A(1) / x)
LOOM_CPU_FLOAT_UNARY(sin, std::sin(x))
LOOM_CPU_FLOAT_UNARY(cos, std::cos(x))
LOOM_CPU_FLOAT_UNARY(tan, std::tan(x))
LOOM_CPU_FLOAT_UNARY(asin, std::asin(x))
LOOM_CPU_FLOAT_UNARY(acos, std::acos(x))
LOOM_CPU_FLOAT_UNARY(atan, std::atan(x))
LOOM_CPU_FLOAT_UNARY(sinh, std::sinh(x))
LOOM_CPU_FLOAT_UNARY(cosh, std::cosh(x))
LOOM_CPU_FLOAT_UNARY(tanh, std::tanh(x))
LOOM_CPU_FLOAT_UNARY(sigmoid, A(1) / (A(1) + std::exp(-x)))
LOOM_CPU_FLOAT_UNARY(erf, std::erf(x))
LOOM_CPU_FLOAT_UNARY(silu, x / (A(1) + std::exp(-x)))
LOOM_CPU_FLOAT_UNARY(hardswish, x* std::min(std::max(x + A(3), A(0)), A(6)) / A(6))
LOOM_CPU_FLOAT_UNARY(hardsigmoid, std::min(std::max(x + A(3), A(0)), A(6)) / A(6))
LOOM_CPU_FLOAT_UNARY(mish, x* std::tanh(std::log1p(std::exp(x))))
// min(x, 0) - log(1 + exp(-|x|)): no overflow for large |x| of either sign.
LOOM_CPU_FLOAT_UNARY(log_sigmoid, std::min(x, A(0)) - std::log1p(std::exp(-std::abs(x))))

#undef LOOM_CPU_FLOAT_UNARY

// --- sign-like ops on every numeric type ---

template <typename T>
T negate(T x) {
  if constexpr (is_integral_v<T>) {
    using W = wrap_type<T>;
    return static_cast<T>(W(0) - static_cast<W>(x));  // wraps (the lowest value stays)
  } else {
    return -x;
  }
}

Tensor neg_out(const Tensor& self, const Tensor& out) {
  if (out.dtype() == LOOM_DTYPE_BOOL) {
    throw sdk::Error("[neg] negation on a bool tensor is not supported; use logical_not");
  }
  dispatch_numeric_types(out.dtype(), "neg", [&]<typename T>(T) {
    map_elements<T, T>(
        out, [](T x) -> T { return negate(x); }, self);
  });
  return out;
}

Tensor abs_out(const Tensor& self, const Tensor& out) {
  dispatch_all_types(out.dtype(), "abs", [&]<typename T>(T) {
    if constexpr (std::is_unsigned_v<T>) {  // bool and uint8
      copy_elements<T>(self, out);
    } else if constexpr (is_integral_v<T>) {
      map_elements<T, T>(
          out, [](T x) -> T { return x < 0 ? negate(x) : x; }, self);
    } else {
      using A = acc_type<T>;
      map_elements<T, T>(
          out, [](T x) -> T { return static_cast<T>(std::abs(static_cast<A>(x))); }, self);
    }
  });
  return out;
}

Tensor sign_out(const Tensor& self, const Tensor& out) {
  dispatch_all_types(out.dtype(), "sign", [&]<typename T>(T) {
    if constexpr (std::is_same_v<T, bool>) {
      copy_elements<T>(self, out);
    } else if constexpr (std::is_unsigned_v<T>) {
      map_elements<T, T>(
          out, [](T x) -> T { return static_cast<T>(x != 0); }, self);
    } else if constexpr (is_integral_v<T>) {
      map_elements<T, T>(
          out, [](T x) -> T { return static_cast<T>((T(0) < x) - (x < T(0))); }, self);
    } else {
      using A = acc_type<T>;
      map_elements<T, T>(
          out,
          [](T x) -> T {
            A a = static_cast<A>(x);
            if (std::isnan(a)) return x;
            return static_cast<T>(static_cast<A>((A(0) < a) - (a < A(0))));
          },
          self);
    }
  });
  return out;
}

Tensor relu_out(const Tensor& self, const Tensor& out) {
  dispatch_numeric_types(out.dtype(), "relu", [&]<typename T>(T) {
    if constexpr (std::is_unsigned_v<T>) {
      copy_elements<T>(self, out);
    } else {
      using A = acc_type<T>;
      map_elements<T, T>(
          out, [](T x) -> T { return static_cast<A>(x) < A(0) ? T(0) : x; }, self);
    }
  });
  return out;
}

// threshold_backward: grad_output where self > threshold, else 0 (Note [Decompositions]: the
// op library's where(le(...)) costs a pass for the mask and one for the select). Operands
// of one floating dtype and shape take one pass; the others (broadcasting, mixed or integer
// dtypes) run the op library's pieces, as on backends without this kernel.
Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, Scalar threshold) {
  const bool one_pass = grad_output.dtype() == self.dtype() &&
                        sdk::dtypes::floating.contains(self.dtype()) &&
                        std::ranges::equal(grad_output.sizes(), self.sizes()) &&
                        grad_output.device().type == LOOM_DEVICE_CPU;
  if (!one_pass) {
    const LoomDevice cpu{LOOM_DEVICE_CPU, -1};
    Tensor zero = sdk::empty(std::span<const int64_t>(), grad_output.dtype(), cpu);
    op::fill_(zero, Scalar(0.0));
    Tensor bound =
        sdk::empty(std::span<const int64_t>(),
                   threshold.is_floating_point() ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_INT64, cpu);
    op::fill_(bound, threshold);
    return op::where(op::le(self, bound), zero, grad_output);
  }
  Tensor out = sdk::empty(self.sizes(), self.dtype(), self.device());
  dispatch_floating_types(self.dtype(), "threshold_backward", [&]<typename T>(T) {
    using A = acc_type<T>;
    const A bound = static_cast<A>(static_cast<T>(threshold.to_double()));  // as le converts it
    map_elements<T, T, T>(
        out, [bound](T grad, T x) -> T { return static_cast<A>(x) <= bound ? T(0) : grad; },
        grad_output, self);
  });
  return out;
}

// --- rounding: floating types round, integer types copy ---

template <typename Fn>
Tensor rounding(const char* op, const Tensor& self, const Tensor& out, Fn fn) {
  dispatch_all_types(out.dtype(), op, [&]<typename T>(T) {
    if constexpr (is_integral_v<T>) {
      copy_elements<T>(self, out);
    } else {
      using A = acc_type<T>;
      map_elements<T, T>(
          out, [fn](T x) -> T { return static_cast<T>(fn(static_cast<A>(x))); }, self);
    }
  });
  return out;
}

Tensor floor_out(const Tensor& self, const Tensor& out) {
  return rounding("floor", self, out, [](auto x) { return std::floor(x); });
}
Tensor ceil_out(const Tensor& self, const Tensor& out) {
  return rounding("ceil", self, out, [](auto x) { return std::ceil(x); });
}
// Half to even, like torch.round: nearbyint in the default rounding mode.
Tensor round_out(const Tensor& self, const Tensor& out) {
  return rounding("round", self, out, [](auto x) { return std::nearbyint(x); });
}
Tensor trunc_out(const Tensor& self, const Tensor& out) {
  return rounding("trunc", self, out, [](auto x) { return std::trunc(x); });
}

// --- predicates: any input dtype, bool out ---

template <typename Fn>
Tensor predicate(const char* op, const Tensor& self, const Tensor& out, Fn fn) {
  dispatch_all_types(self.dtype(), op, [&]<typename T>(T) {
    using A = acc_type<T>;
    map_elements<bool, T>(
        out, [fn](T x) -> bool { return fn(static_cast<A>(x)); }, self);
  });
  return out;
}

Tensor logical_not_out(const Tensor& self, const Tensor& out) {
  return predicate("logical_not", self, out, [](auto x) { return !(x != decltype(x)(0)); });
}
Tensor isnan_out(const Tensor& self, const Tensor& out) {
  return predicate("isnan", self, out, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::isnan(x);
    } else {
      return false;
    }
  });
}
Tensor isinf_out(const Tensor& self, const Tensor& out) {
  return predicate("isinf", self, out, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::isinf(x);
    } else {
      return false;
    }
  });
}
Tensor isfinite_out(const Tensor& self, const Tensor& out) {
  return predicate("isfinite", self, out, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::isfinite(x);
    } else {
      return true;
    }
  });
}

// --- clamp and friends ---

// A Scalar bound as the acc type of T. For integer T the bound is truncated and
// saturated to T's range, which clamps every value of T exactly as the real bound would.
template <typename T>
acc_type<T> bound_as(const Scalar& s) {
  using A = acc_type<T>;
  if constexpr (is_integral_v<T>) {
    constexpr auto lo = std::numeric_limits<T>::lowest();
    constexpr auto hi = std::numeric_limits<T>::max();
    if (s.is_floating_point()) {
      double v = std::trunc(s.d);
      if (std::isnan(v)) return A(0);
      if (v <= static_cast<double>(lo)) return lo;
      if (v >= static_cast<double>(hi)) return hi;
      return static_cast<A>(v);
    }
    if (s.i <= static_cast<int64_t>(lo)) return lo;
    if (s.i >= static_cast<int64_t>(hi)) return hi;
    return static_cast<A>(s.i);
  } else {
    return static_cast<A>(s.to_double());
  }
}

// out = min(max(self, lo), hi); NaN stays NaN; lo > hi gives hi; a NaN bound makes every
// element NaN (like torch.clamp, whose min/max propagate NaN).
Tensor clamp_impl(const char* op, const Tensor& self, std::optional<Scalar> min,
                  std::optional<Scalar> max, const Tensor& out) {
  dispatch_numeric_types(out.dtype(), op, [&]<typename T>(T) {
    using A = acc_type<T>;
    if constexpr (!is_integral_v<T>) {
      if ((min && std::isnan(min->to_double())) || (max && std::isnan(max->to_double()))) {
        const T nan = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
        map_elements<T, T>(
            out, [nan](T) -> T { return nan; }, self);
        return;
      }
    }
    if (min && max) {
      const A lo = bound_as<T>(*min), hi = bound_as<T>(*max);
      map_elements<T, T>(
          out,
          [lo, hi](T x) -> T {
            A a = static_cast<A>(x);
            a = a < lo ? lo : a;
            return static_cast<T>(a > hi ? hi : a);
          },
          self);
    } else if (min) {
      const A lo = bound_as<T>(*min);
      map_elements<T, T>(
          out,
          [lo](T x) -> T {
            const A a = static_cast<A>(x);
            return static_cast<T>(a < lo ? lo : a);
          },
          self);
    } else {
      const A hi = bound_as<T>(*max);
      map_elements<T, T>(
          out,
          [hi](T x) -> T {
            const A a = static_cast<A>(x);
            return static_cast<T>(a > hi ? hi : a);
          },
          self);
    }
  });
  return out;
}

Tensor clamp_out(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max,
                 const Tensor& out) {
  if (!min && !max) throw sdk::Error("[clamp] at least one of min and max must be given");
  return clamp_impl("clamp", self, min, max, out);
}

Tensor clamp_min_out(const Tensor& self, Scalar min, const Tensor& out) {
  return clamp_impl("clamp_min", self, min, std::nullopt, out);
}

Tensor clamp_max_out(const Tensor& self, Scalar max, const Tensor& out) {
  return clamp_impl("clamp_max", self, std::nullopt, max, out);
}

Tensor hardtanh_out(const Tensor& self, Scalar min_val, Scalar max_val, const Tensor& out) {
  return clamp_impl("hardtanh", self, min_val, max_val, out);
}

Tensor leaky_relu_out(const Tensor& self, Scalar negative_slope, const Tensor& out) {
  const double slope = negative_slope.to_double();
  return float_unary("leaky_relu", self, out, [slope](auto x) {
    using A = decltype(x);
    return x > A(0) ? x : x * static_cast<A>(slope);
  });
}

Tensor elu_out(const Tensor& self, Scalar alpha, Scalar scale, Scalar input_scale,
               const Tensor& out) {
  const double a = alpha.to_double(), s = scale.to_double(), in = input_scale.to_double();
  return float_unary("elu", self, out, [a, s, in](auto x) {
    using A = decltype(x);
    return x > A(0) ? x * static_cast<A>(s)
                    : std::expm1(x * static_cast<A>(in)) * static_cast<A>(a * s);
  });
}

Tensor softplus_out(const Tensor& self, Scalar beta, Scalar threshold, const Tensor& out) {
  const double b = beta.to_double(), t = threshold.to_double();
  return float_unary("softplus", self, out, [b, t](auto x) {
    using A = decltype(x);
    const A bx = x * static_cast<A>(b);
    return bx > static_cast<A>(t) ? x
                                  : static_cast<A>(std::log1p(std::exp(bx)) / static_cast<A>(b));
  });
}

Tensor gelu_out(const Tensor& self, std::string_view approximate, const Tensor& out) {
  if (approximate == "none") {
    return float_unary("gelu", self, out, [](auto x) {
      using A = decltype(x);
      constexpr A kInvSqrt2 = A(0.70710678118654752440);
      return A(0.5) * x * (A(1) + std::erf(x * kInvSqrt2));
    });
  }
  if (approximate == "tanh") {
    return float_unary("gelu", self, out, [](auto x) {
      using A = decltype(x);
      constexpr A kSqrt2OverPi = A(0.79788456080286535588);
      constexpr A kCoeff = A(0.044715);
      return A(0.5) * x * (A(1) + std::tanh(kSqrt2OverPi * (x + kCoeff * x * x * x)));
    });
  }
  throw sdk::Error("[gelu] approximate must be 'none' or 'tanh', found '" +
                   std::string(approximate) + "'");
}

// nan -> nan (default 0), +inf -> posinf (default the largest finite value of the dtype),
// -inf -> neginf (default the lowest); integer and bool tensors are copied.
Tensor nan_to_num_out(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf, const Tensor& out) {
  dispatch_all_types(out.dtype(), "nan_to_num", [&]<typename T>(T) {
    if constexpr (is_integral_v<T>) {
      copy_elements<T>(self, out);
    } else {
      using A = acc_type<T>;
      const T nan_v = static_cast<T>(static_cast<A>(nan.value_or(0.0)));
      const T pos_v = posinf ? static_cast<T>(static_cast<A>(*posinf)) : max_finite<T>();
      const T neg_v = neginf ? static_cast<T>(static_cast<A>(*neginf)) : lowest_finite<T>();
      map_elements<T, T>(
          out,
          [=](T x) -> T {
            const A a = static_cast<A>(x);
            if (std::isnan(a)) return nan_v;
            if (std::isinf(a)) return a > A(0) ? pos_v : neg_v;
            return x;
          },
          self);
    }
  });
  return out;
}

}  // namespace

void register_unary_kernels(sdk::Registrar& r) {
  r.impl<&neg_out>("loom::neg.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&abs_out>("loom::abs.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&sign_out>("loom::sign.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&exp_out>("loom::exp.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&exp2_out>("loom::exp2.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&expm1_out>("loom::expm1.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&log_out>("loom::log.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&log2_out>("loom::log2.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&log10_out>("loom::log10.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&log1p_out>("loom::log1p.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&sqrt_out>("loom::sqrt.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&rsqrt_out>("loom::rsqrt.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&reciprocal_out>("loom::reciprocal.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&sin_out>("loom::sin.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&cos_out>("loom::cos.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&tan_out>("loom::tan.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&asin_out>("loom::asin.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&acos_out>("loom::acos.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&atan_out>("loom::atan.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&sinh_out>("loom::sinh.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&cosh_out>("loom::cosh.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&tanh_out>("loom::tanh.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&sigmoid_out>("loom::sigmoid.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&erf_out>("loom::erf.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&relu_out>("loom::relu.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&threshold_backward>("loom::threshold_backward", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&silu_out>("loom::silu.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&hardswish_out>("loom::hardswish.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&hardsigmoid_out>("loom::hardsigmoid.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&mish_out>("loom::mish.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&log_sigmoid_out>("loom::log_sigmoid.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&clamp_min_out>("loom::clamp_min.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&clamp_max_out>("loom::clamp_max.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&gelu_out>("loom::gelu.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&floor_out>("loom::floor.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&ceil_out>("loom::ceil.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&round_out>("loom::round.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&trunc_out>("loom::trunc.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&logical_not_out>("loom::logical_not.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&isnan_out>("loom::isnan.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&isinf_out>("loom::isinf.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&isfinite_out>("loom::isfinite.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&clamp_out>("loom::clamp.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&leaky_relu_out>("loom::leaky_relu.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&elu_out>("loom::elu.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&softplus_out>("loom::softplus.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&hardtanh_out>("loom::hardtanh.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&nan_to_num_out>("loom::nan_to_num.out", LOOM_KEY_CPU, sdk::dtypes::all);
}

}  // namespace loom::cpu
