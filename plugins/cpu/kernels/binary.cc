// Binary pointwise kernels: the out= variants of every binary structured op in ops.def.
//
// Per the structured-op contract (Note [Structured ops] in the dispatcher) both inputs
// already have out's shape (stride 0 on broadcast dims) and the compute dtype; out has
// that dtype too, or bool for comparisons and logical ops. Integer arithmetic wraps
// (computed in an unsigned type); float16 / bfloat16 compute in float.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>

#include "../elementwise_loop.h"
#include "../kernels.h"
#include "../pointwise_formulas.h"
#include "../scalar_types.h"

namespace loom::cpu {
namespace {

using sdk::Scalar;
using sdk::Tensor;

// Runs fn(T, T) -> T over two inputs of out's dtype (one of the dispatcher's types).
template <typename T, typename Fn>
void binary_map(const Tensor& self, const Tensor& other, const Tensor& out, Fn fn) {
  map_elements<T, T, T>(out, fn, self, other);
}

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// --- add / sub / mul / div ---

// self + sign * alpha * other.
template <int Sign>
Tensor add_sub(const char* op, const Tensor& self, const Tensor& other, Scalar alpha,
               const Tensor& out) {
  dispatch_all_types(out.dtype(), op, [&]<typename T>(T) {
    if constexpr (is_integral_v<T>) {
      if (alpha.is_floating_point()) {
        throw sdk::Error(std::string("[") + op + "] alpha must be an integer for integer " +
                         "tensors, found " + format_double(alpha.d));
      }
    }
    if constexpr (std::is_same_v<T, bool>) {  // add only: logical or
      if (alpha.i == 0) {
        map_elements<bool, bool>(
            out, [](bool x) { return x; }, self);
      } else {
        binary_map<T>(self, other, out, [](bool x, bool y) -> bool { return x || y; });
      }
    } else if constexpr (is_integral_v<T>) {
      using W = wrap_type<T>;
      const W a = Sign == 1 ? static_cast<W>(alpha.i) : W(0) - static_cast<W>(alpha.i);
      if (a == W(1)) {
        binary_map<T>(self, other, out, [](T x, T y) -> T { return static_cast<T>(W(x) + W(y)); });
      } else if (a == W(0) - W(1)) {
        binary_map<T>(self, other, out, [](T x, T y) -> T { return static_cast<T>(W(x) - W(y)); });
      } else {
        binary_map<T>(self, other, out,
                      [a](T x, T y) -> T { return static_cast<T>(W(x) + a * W(y)); });
      }
    } else {
      using A = acc_type<T>;
      const double alpha_d = alpha.to_double();
      if (alpha_d == 1.0) {
        binary_map<T>(self, other, out, [](T x, T y) -> T {
          return static_cast<T>(static_cast<A>(x) + Sign * static_cast<A>(y));
        });
      } else {
        const A a = static_cast<A>(Sign * alpha_d);
        binary_map<T>(self, other, out, [a](T x, T y) -> T {
          return static_cast<T>(static_cast<A>(x) + a * static_cast<A>(y));
        });
      }
    }
  });
  return out;
}

Tensor add_out(const Tensor& self, const Tensor& other, Scalar alpha, const Tensor& out) {
  return add_sub<1>("add", self, other, alpha, out);
}

Tensor sub_out(const Tensor& self, const Tensor& other, Scalar alpha, const Tensor& out) {
  if (out.dtype() == LOOM_DTYPE_BOOL) {
    throw sdk::Error(
        "[sub] subtraction with bool tensors is not supported; use logical_xor instead");
  }
  return add_sub<-1>("sub", self, other, alpha, out);
}

Tensor mul_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  dispatch_all_types(out.dtype(), "mul", [&]<typename T>(T) {
    if constexpr (std::is_same_v<T, bool>) {
      binary_map<T>(self, other, out, [](bool x, bool y) -> bool { return x && y; });
    } else if constexpr (is_integral_v<T>) {
      using W = wrap_type<T>;
      binary_map<T>(self, other, out, [](T x, T y) -> T { return static_cast<T>(W(x) * W(y)); });
    } else {
      using A = acc_type<T>;
      binary_map<T>(self, other, out, [](T x, T y) -> T {
        return static_cast<T>(static_cast<A>(x) * static_cast<A>(y));
      });
    }
  });
  return out;
}

// Float ops on the floating dtypes: fn(A, A) -> A in the acc type.
template <typename Fn>
Tensor float_binary(const char* op, const Tensor& self, const Tensor& other, const Tensor& out,
                    Fn fn) {
  dispatch_floating_types(out.dtype(), op, [&]<typename T>(T) {
    using A = acc_type<T>;
    binary_map<T>(self, other, out, [fn](T x, T y) -> T {
      return static_cast<T>(fn(static_cast<A>(x), static_cast<A>(y)));
    });
  });
  return out;
}

Tensor div_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return float_binary("div", self, other, out, [](auto x, auto y) { return x / y; });
}

Tensor atan2_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return float_binary("atan2", self, other, out, [](auto x, auto y) { return std::atan2(x, y); });
}

// --- remainder / fmod ---

[[noreturn]] void integer_division_by_zero(const char* op) {
  throw sdk::Error(std::string("[") + op + "] integer division by zero");
}

// Python-style when Floor (the result takes the divisor's sign), C-style otherwise.
template <bool Floor>
Tensor modulo(const char* op, const Tensor& self, const Tensor& other, const Tensor& out) {
  dispatch_numeric_types(out.dtype(), op, [&]<typename T>(T) {
    if constexpr (is_integral_v<T>) {
      std::atomic<bool> by_zero{false};  // f runs on several threads
      binary_map<T>(self, other, out, [&by_zero](T x, T y) -> T {
        if (y == 0) {
          by_zero.store(true, std::memory_order_relaxed);
          return T(0);
        }
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1)) return T(0);  // avoids lowest % -1 overflowing
        }
        T r = static_cast<T>(x % y);
        if constexpr (Floor && std::is_signed_v<T>) {
          if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
        }
        return r;
      });
      if (by_zero.load()) integer_division_by_zero(op);
    } else {
      using A = acc_type<T>;
      binary_map<T>(self, other, out, [](T x, T y) -> T {
        const A a = static_cast<A>(x), b = static_cast<A>(y);
        A r = std::fmod(a, b);
        if constexpr (Floor) {
          if (r != A(0) && ((r < A(0)) != (b < A(0)))) r += b;
        }
        return static_cast<T>(r);
      });
    }
  });
  return out;
}

Tensor remainder_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return modulo<true>("remainder", self, other, out);
}

Tensor fmod_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return modulo<false>("fmod", self, other, out);
}

// --- pow ---

// base ** exp by squaring, wrapping like repeated multiplication; a negative exponent
// gives what PyTorch's integer pow gives: 1 for base 1, +-1 for base -1 by the exponent's
// parity, 0 for any other base.
template <typename T>
T integer_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return T(1);
      if (base == -1) return exp % 2 == 0 ? T(1) : T(-1);
      return T(0);
    }
  }
  using W = wrap_type<T>;
  W result = 1, b = static_cast<W>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exp);
  while (e != 0) {
    if (e & 1u) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<T>(result);
}

// Note [pow's shortcuts]
// ~~~~~~~~~~~~~~~~~~~~~~
// One floating-point exponent for every element (a number, broadcast with stride 0) of
// 2, 3, -1, -2, 0.5 or -0.5 is computed as PyTorch computes it, by products, a division
// or a square root instead of pow(): x * x is exactly rounded where powf may be an ulp off,
// and `loss = out.pow(2)` costs a multiply, not a libm call per element (5% of a 20-layer
// MLP's training step went to powf). Returns false for other exponents.
template <typename T>
bool pow_by_shortcut(const Tensor& self, const Tensor& exponent, const Tensor& out) {
  using A = acc_type<T>;
  if (out.numel() == 0) return false;
  for (int64_t stride : exponent.strides()) {
    if (stride != 0) return false;
  }
  const A e = static_cast<A>(exponent.template data<const T>()[0]);
  auto run = [&](auto fn) {
    map_elements<T, T>(
        out, [fn](T x) -> T { return static_cast<T>(fn(static_cast<A>(x))); }, self);
    return true;
  };
  if (e == A(2)) return run([](A x) { return x * x; });
  if (e == A(3)) return run([](A x) { return x * x * x; });
  if (e == A(-1)) return run([](A x) { return A(1) / x; });
  if (e == A(-2)) return run([](A x) { return A(1) / (x * x); });
  if (e == A(0.5)) return run([](A x) { return std::sqrt(x); });
  if (e == A(-0.5)) return run([](A x) { return A(1) / std::sqrt(x); });
  return false;
}

Tensor pow_out(const Tensor& self, const Tensor& exponent, const Tensor& out) {
  dispatch_all_types(out.dtype(), "pow", [&]<typename T>(T) {
    if constexpr (std::is_same_v<T, bool>) {
      binary_map<T>(self, exponent, out, [](bool x, bool y) -> bool { return x || !y; });
    } else if constexpr (is_integral_v<T>) {
      binary_map<T>(self, exponent, out, [](T x, T y) -> T { return integer_pow(x, y); });
    } else {
      using A = acc_type<T>;
      if constexpr (std::is_floating_point_v<A>) {
        if (pow_by_shortcut<T>(self, exponent, out)) return;
      }
      binary_map<T>(self, exponent, out, [](T x, T y) -> T {
        return static_cast<T>(std::pow(static_cast<A>(x), static_cast<A>(y)));
      });
    }
  });
  return out;
}

// --- maximum / minimum (NaN propagates) ---

template <bool Max>
Tensor extremum(const char* op, const Tensor& self, const Tensor& other, const Tensor& out) {
  dispatch_all_types(out.dtype(), op, [&]<typename T>(T) {
    if constexpr (std::is_same_v<T, bool>) {
      binary_map<T>(self, other, out,
                    [](bool x, bool y) -> bool { return Max ? (x || y) : (x && y); });
    } else if constexpr (is_integral_v<T>) {
      binary_map<T>(self, other, out,
                    [](T x, T y) -> T { return Max ? (x > y ? x : y) : (x < y ? x : y); });
    } else {
      using A = acc_type<T>;
      binary_map<T>(self, other, out, [](T x, T y) -> T { return extremum_value<Max, A>(x, y); });
    }
  });
  return out;
}

Tensor maximum_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return extremum<true>("maximum", self, other, out);
}

Tensor minimum_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return extremum<false>("minimum", self, other, out);
}

// --- bitwise (bool and integers) ---

template <typename Fn>
Tensor bitwise(const char* op, const Tensor& self, const Tensor& other, const Tensor& out, Fn fn) {
  dispatch_integral_types(out.dtype(), op, [&]<typename T>(T) {
    binary_map<T>(self, other, out, [fn](T x, T y) -> T { return static_cast<T>(fn(x, y)); });
  });
  return out;
}

Tensor bitwise_and_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return bitwise("bitwise_and", self, other, out, [](auto x, auto y) { return x & y; });
}
Tensor bitwise_or_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return bitwise("bitwise_or", self, other, out, [](auto x, auto y) { return x | y; });
}
Tensor bitwise_xor_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return bitwise("bitwise_xor", self, other, out, [](auto x, auto y) { return x ^ y; });
}

// --- comparisons and logical ops: any input dtype, bool out ---

template <typename Fn>
Tensor predicate2(const char* op, const Tensor& self, const Tensor& other, const Tensor& out,
                  Fn fn) {
  dispatch_all_types(self.dtype(), op, [&]<typename T>(T) {
    using A = acc_type<T>;
    map_elements<bool, T, T>(
        out, [fn](T x, T y) -> bool { return fn(static_cast<A>(x), static_cast<A>(y)); }, self,
        other);
  });
  return out;
}

#define LOOM_CPU_PREDICATE2(NAME, EXPR)                                           \
  Tensor NAME##_out(const Tensor& self, const Tensor& other, const Tensor& out) { \
    return predicate2(#NAME, self, other, out, [](auto x, auto y) -> bool {       \
      using A [[maybe_unused]] = decltype(x);                                     \
      return EXPR;                                                                \
    });                                                                           \
  }

LOOM_CPU_PREDICATE2(eq, x == y)
LOOM_CPU_PREDICATE2(ne, x != y)
LOOM_CPU_PREDICATE2(lt, x < y)
LOOM_CPU_PREDICATE2(le, x <= y)
LOOM_CPU_PREDICATE2(gt, x > y)
LOOM_CPU_PREDICATE2(ge, x >= y)
LOOM_CPU_PREDICATE2(logical_and, (x != A(0)) && (y != A(0)))
LOOM_CPU_PREDICATE2(logical_or, (x != A(0)) || (y != A(0)))
LOOM_CPU_PREDICATE2(logical_xor, (x != A(0)) != (y != A(0)))

#undef LOOM_CPU_PREDICATE2

}  // namespace

void register_binary_kernels(sdk::Registrar& r) {
  r.impl<&add_out>("loom::add.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&sub_out>("loom::sub.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&mul_out>("loom::mul.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&div_out>("loom::div.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&remainder_out>("loom::remainder.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&fmod_out>("loom::fmod.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&pow_out>("loom::pow.Tensor_Tensor_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&maximum_out>("loom::maximum.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&minimum_out>("loom::minimum.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&atan2_out>("loom::atan2.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&bitwise_and_out>("loom::bitwise_and.out", LOOM_KEY_CPU, sdk::dtypes::integral_and_bool);
  r.impl<&bitwise_or_out>("loom::bitwise_or.out", LOOM_KEY_CPU, sdk::dtypes::integral_and_bool);
  r.impl<&bitwise_xor_out>("loom::bitwise_xor.out", LOOM_KEY_CPU, sdk::dtypes::integral_and_bool);
  r.impl<&eq_out>("loom::eq.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&ne_out>("loom::ne.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&lt_out>("loom::lt.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&le_out>("loom::le.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&gt_out>("loom::gt.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&ge_out>("loom::ge.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&logical_and_out>("loom::logical_and.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&logical_or_out>("loom::logical_or.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&logical_xor_out>("loom::logical_xor.out", LOOM_KEY_CPU, sdk::dtypes::all);
}

}  // namespace loom::cpu
