// Pointwise kernels with masks, three operands or modes: where, masked_fill, lerp,
// addcmul, addcdiv, and div with a rounding mode. Inputs arrive with out's shape and the
// compute dtype (masks as bool), per Note [Structured ops] and Note [Masks and modes].
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "../elementwise_loop.h"
#include "../kernels.h"
#include "../pointwise_formulas.h"
#include "../scalar_types.h"
#include "../vector_math.h"

namespace loom::cpu {
namespace {

using sdk::Scalar;
using sdk::Tensor;

// Converts a Scalar to T (C++ conversion; float16/bfloat16 round from float).
template <typename T>
T scalar_as(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>) {
    return s.is_floating_point() ? s.d != 0.0 : s.i != 0;
  } else if constexpr (is_reduced_float_v<T>) {
    return T(static_cast<float>(s.to_double()));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(s.to_double());
  } else {
    return s.is_floating_point() ? static_cast<T>(s.d) : static_cast<T>(s.i);
  }
}

Tensor where_out(const Tensor& condition, const Tensor& self, const Tensor& other,
                 const Tensor& out) {
  dispatch_all_types(out.dtype(), "where", [&]<typename T>(T) {
    map_elements<T, bool, T, T>(
        out, [](bool c, T x, T y) -> T { return select_bits(c, x, y); }, condition, self, other);
  });
  return out;
}

Tensor masked_fill_out(const Tensor& self, const Tensor& mask, Scalar value, const Tensor& out) {
  dispatch_all_types(out.dtype(), "masked_fill", [&]<typename T>(T) {
    if constexpr (is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (value.is_floating_point() && value.d != std::trunc(value.d)) {
        throw sdk::Error("[masked_fill] value " + std::to_string(value.d) +
                         " cannot be converted to the integer dtype " + dtype_name(out.dtype()) +
                         " without loss");
      }
    }
    const T v = scalar_as<T>(value);
    map_elements<T, T, bool>(
        out, [v](T x, bool m) -> T { return select_bits(m, v, x); }, self, mask);
  });
  return out;
}

Tensor lerp_scalar_out(const Tensor& self, const Tensor& end, Scalar weight, const Tensor& out) {
  dispatch_floating_types(out.dtype(), "lerp", [&]<typename T>(T) {
    using A = acc_type<T>;
    const A w = static_cast<A>(weight.to_double());
    map_elements<T, T, T>(
        out, [w](T a, T b) -> T { return static_cast<T>(lerp_value<A>(A(a), A(b), w)); }, self,
        end);
  });
  return out;
}

Tensor lerp_tensor_out(const Tensor& self, const Tensor& end, const Tensor& weight,
                       const Tensor& out) {
  dispatch_floating_types(out.dtype(), "lerp", [&]<typename T>(T) {
    using A = acc_type<T>;
    map_elements<T, T, T, T>(
        out, [](T a, T b, T w) -> T { return static_cast<T>(lerp_value<A>(A(a), A(b), A(w))); },
        self, end, weight);
  });
  return out;
}

// self + value * t1 * t2
Tensor addcmul_out(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value,
                   const Tensor& out) {
  dispatch_numeric_types(out.dtype(), "addcmul", [&]<typename T>(T) {
    if constexpr (is_integral_v<T>) {
      if (value.is_floating_point()) {
        throw sdk::Error(std::string("[addcmul] value must be an integer for integer tensors, ") +
                         "found " + std::to_string(value.d));
      }
      using W = wrap_type<T>;
      const W v = static_cast<W>(value.i);
      map_elements<T, T, T, T>(
          out, [v](T x, T a, T b) -> T { return static_cast<T>(W(x) + v * W(a) * W(b)); }, self, t1,
          t2);
    } else {
      using A = acc_type<T>;
      const A v = static_cast<A>(value.to_double());
      map_elements<T, T, T, T>(
          out, [v](T x, T a, T b) -> T { return static_cast<T>(A(x) + v * A(a) * A(b)); }, self, t1,
          t2);
    }
  });
  return out;
}

// self + value * t1 / t2 (floating types only, as in PyTorch)
Tensor addcdiv_out(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value,
                   const Tensor& out) {
  dispatch_floating_types(out.dtype(), "addcdiv", [&]<typename T>(T) {
    using A = acc_type<T>;
    const A v = static_cast<A>(value.to_double());
    map_elements<T, T, T, T>(
        out, [v](T x, T a, T b) -> T { return static_cast<T>(A(x) + v * A(a) / A(b)); }, self, t1,
        t2);
  });
  return out;
}

enum class Rounding { None, Trunc, Floor };

Rounding parse_rounding(std::optional<std::string_view> mode) {
  if (!mode) return Rounding::None;
  if (*mode == "trunc") return Rounding::Trunc;
  if (*mode == "floor") return Rounding::Floor;
  throw sdk::Error("[div] expected rounding_mode None, 'trunc' or 'floor', found '" +
                   std::string(*mode) + "'");
}

// Python's floor division of floats, which PyTorch computes: from fmod, so 1 // 0.1 is 9
// (0.1 is a little above a tenth), inf // 2 is nan and 5 // -inf is -1, where
// floor(x / y) would give 10, inf and -0. Division by zero gives x / 0 (inf or nan).
template <typename A>
A floor_divide_floating(A a, A b) {
  if (b == A(0)) return a / b;
  const A mod = std::fmod(a, b);
  A div = (a - mod) / b;
  if (mod != A(0) && (b < A(0)) != (mod < A(0))) div -= A(1);
  if (div == A(0)) return std::copysign(A(0), a / b);
  A floored = std::floor(div);
  if (div - floored > A(0.5)) floored += A(1);
  return floored;
}

Tensor div_mode_out(const Tensor& self, const Tensor& other,
                    std::optional<std::string_view> rounding_mode, const Tensor& out) {
  const Rounding mode = parse_rounding(rounding_mode);
  dispatch_numeric_types(out.dtype(), "div", [&]<typename T>(T) {
    if constexpr (is_integral_v<T>) {
      std::atomic<bool> by_zero{false};  // f runs on several threads
      std::atomic<bool> overflow{false};
      map_elements<T, T, T>(
          out,
          [&by_zero, &overflow, mode](T x, T y) -> T {
            if (y == 0) {
              by_zero.store(true, std::memory_order_relaxed);
              return T(0);
            }
            if constexpr (std::is_signed_v<T>) {
              if (y == T(-1)) {
                // lowest / -1 does not fit: x86 traps on it in 32 and 64 bits (PyTorch's
                // process dies there), so those refuse; int8 and int16 wrap as in PyTorch.
                if (sizeof(T) >= 4 && x == std::numeric_limits<T>::lowest()) {
                  overflow.store(true, std::memory_order_relaxed);
                  return T(0);
                }
                return static_cast<T>(wrap_type<T>(0) - wrap_type<T>(x));
              }
            }
            T q = static_cast<T>(x / y);
            if constexpr (std::is_signed_v<T>) {
              if (mode == Rounding::Floor && (x % y != 0) && ((x < 0) != (y < 0))) --q;
            }
            return q;
          },
          self, other);
      if (by_zero.load()) throw sdk::Error("[div] integer division by zero");
      if (overflow.load()) {
        throw sdk::Error("[div] integer overflow: the lowest " +
                         std::string(dtype_name(out.dtype())) +
                         " divided by -1 does not fit the dtype");
      }
    } else {
      using A = acc_type<T>;
      map_elements<T, T, T>(
          out,
          [mode](T x, T y) -> T {
            if (mode == Rounding::Floor) return static_cast<T>(floor_divide_floating(A(x), A(y)));
            A q = A(x) / A(y);
            if (mode == Rounding::Trunc) q = std::trunc(q);
            return static_cast<T>(q);
          },
          self, other);
    }
  });
  return out;
}

}  // namespace

void register_ternary_kernels(sdk::Registrar& r) {
  r.impl<&where_out>("loom::where.self_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&masked_fill_out>("loom::masked_fill.Scalar_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&lerp_scalar_out>("loom::lerp.Scalar_out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&lerp_tensor_out>("loom::lerp.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&addcmul_out>("loom::addcmul.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&addcdiv_out>("loom::addcdiv.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&div_mode_out>("loom::div.Tensor_mode_out", LOOM_KEY_CPU, sdk::dtypes::numeric);
}

}  // namespace loom::cpu
