// The GPU kernels of the unary family: pointwise math (exp, tanh, gelu, clamp, ...) and
// the predicates (isnan, isinf, isfinite, logical_not), each a functor handed to the
// generic launcher (elementwise_launcher.cuh). Float16 and bfloat16 compute in float.
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

template <typename T>
struct UnaryFn {
  UnaryOp op;
  OpMath<T> a, b, c;

  __device__ __forceinline__ OpMath<T> floating(OpMath<T> x) const {
    using A = OpMath<T>;
    switch (op) {
      case UnaryOp::Exp:
        return dev::exp(x);
      case UnaryOp::Exp2:
        return dev::exp2(x);
      case UnaryOp::Expm1:
        return dev::expm1(x);
      case UnaryOp::Log:
        return dev::log(x);
      case UnaryOp::Log2:
        return dev::log2(x);
      case UnaryOp::Log10:
        return dev::log10(x);
      case UnaryOp::Log1p:
        return dev::log1p(x);
      case UnaryOp::Sqrt:
        return dev::sqrt(x);
      case UnaryOp::Rsqrt:
        return A(1) / dev::sqrt(x);
      case UnaryOp::Reciprocal:
        return A(1) / x;
      case UnaryOp::Sin:
        return dev::sin(x);
      case UnaryOp::Cos:
        return dev::cos(x);
      case UnaryOp::Tan:
        return dev::tan(x);
      case UnaryOp::Asin:
        return dev::asin(x);
      case UnaryOp::Acos:
        return dev::acos(x);
      case UnaryOp::Atan:
        return dev::atan(x);
      case UnaryOp::Sinh:
        return dev::sinh(x);
      case UnaryOp::Cosh:
        return dev::cosh(x);
      case UnaryOp::Tanh:
        return dev::tanh(x);
      case UnaryOp::Sigmoid:
        return A(1) / (A(1) + dev::exp(-x));
      case UnaryOp::Erf:
        return dev::erf(x);
      case UnaryOp::Silu:
        return x / (A(1) + dev::exp(-x));
      case UnaryOp::Gelu:
        return A(0.5) * x * (A(1) + dev::erf(x * A(0.70710678118654752440)));
      case UnaryOp::GeluTanh:
        return A(0.5) * x *
               (A(1) + dev::tanh(A(0.79788456080286535588) * (x + A(0.044715) * x * x * x)));
      case UnaryOp::Mish: {
        const A softplus = x > A(20) ? x : dev::log1p(dev::exp(x));
        return x * dev::tanh(softplus);
      }
      case UnaryOp::LogSigmoid: {
        // -softplus(-x), stable for large |x|
        const A m = x < A(0) ? x : A(0);
        return m - dev::log1p(dev::exp(-dev::fabs(x)));
      }
      case UnaryOp::Hardswish: {
        const A r = x + A(3) < A(0) ? A(0) : (x + A(3) > A(6) ? A(6) : x + A(3));
        return x * r / A(6);
      }
      case UnaryOp::Hardsigmoid: {
        const A r = x + A(3) < A(0) ? A(0) : (x + A(3) > A(6) ? A(6) : x + A(3));
        return r / A(6);
      }
      case UnaryOp::LeakyRelu:
        return x > A(0) ? x : x * a;
      case UnaryOp::Elu:
        return x > A(0) ? x * b : dev::expm1(x * c) * a;
      case UnaryOp::Softplus: {
        const A bx = x * a;
        return bx > b ? x : dev::log1p(dev::exp(bx)) / a;
      }
      default:
        return x;
    }
  }

  __device__ __forceinline__ T operator()(T v) const {
    using A = OpMath<T>;
    if constexpr (std::is_same_v<T, bool>) {
      return v;  // abs, sign and the rounding ops are the identity on bool
    } else {
      const A x = convert<A>(v);
      switch (op) {
        case UnaryOp::Neg:
          if constexpr (is_floating_v<T>) {
            return convert<T>(-x);
          } else {
            return static_cast<T>(Wrap<T>(0) - static_cast<Wrap<T>>(v));
          }
        case UnaryOp::Abs:
          if constexpr (is_floating_v<T>) {
            return convert<T>(dev::fabs(x));
          } else {
            return x < A(0) ? static_cast<T>(Wrap<T>(0) - static_cast<Wrap<T>>(v)) : v;
          }
        case UnaryOp::Sign:
          if (x != x) return v;  // NaN stays NaN
          return convert<T>(static_cast<A>((A(0) < x) - (x < A(0))));
        case UnaryOp::Relu:
          return x < A(0) ? convert<T>(A(0)) : v;
        case UnaryOp::Clamp: {
          if constexpr (is_floating_v<T>) {
            if (x != x) return v;                            // NaN stays NaN
            if (a != a || b != b) return convert<T>(a + b);  // a NaN bound: NaN
            A r = x < a ? a : x;
            return convert<T>(r > b ? b : r);
          } else {
            A r = x < a ? a : x;
            return convert<T>(r > b ? b : r);
          }
        }
        case UnaryOp::NanToNum:
          if constexpr (is_floating_v<T>) {
            if (x != x) return convert<T>(a);
            if (x - x != x - x) return convert<T>(x > A(0) ? b : c);
          }
          return v;
        default:
          break;
      }
      if constexpr (is_floating_v<T>) {
        switch (op) {
          case UnaryOp::Floor:
            return convert<T>(dev::floor(x));
          case UnaryOp::Ceil:
            return convert<T>(dev::ceil(x));
          case UnaryOp::Round:
            return convert<T>(dev::nearbyint(x));
          case UnaryOp::Trunc:
            return convert<T>(dev::trunc(x));
          default:
            return convert<T>(floating(x));
        }
      } else {
        return v;  // integers: the rounding ops are the identity
      }
    }
  }
};

template <typename T>
struct PredicateFn {
  UnaryOp op;
  __device__ __forceinline__ bool operator()(T v) const {
    if constexpr (is_floating_v<T>) {
      const OpMath<T> x = convert<OpMath<T>>(v);
      const bool nan = x != x;
      const bool inf = !nan && (x - x != x - x);
      switch (op) {
        case UnaryOp::IsNan:
          return nan;
        case UnaryOp::IsInf:
          return inf;
        case UnaryOp::IsFinite:
          return !nan && !inf;
        default:
          return x == OpMath<T>(0);  // LogicalNot
      }
    } else {
      switch (op) {
        case UnaryOp::IsNan:
        case UnaryOp::IsInf:
          return false;
        case UnaryOp::IsFinite:
          return true;
        default:
          return !convert<bool>(v);
      }
    }
  }
};

}  // namespace

bool is_predicate(UnaryOp op) {
  return op == UnaryOp::IsNan || op == UnaryOp::IsInf || op == UnaryOp::IsFinite ||
         op == UnaryOp::LogicalNot;
}

const char* launch_unary(UnaryOp op, int32_t dtype, const UnaryParams& params,
                         const StridedSpace<2>& space, void* out, const void* in,
                         gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    InputPointers<T, 1> inputs{{static_cast<const T*>(in)}};
    if (is_predicate(op)) {
      result =
          launch_elementwise<1>(space, static_cast<bool*>(out), inputs, PredicateFn<T>{op}, stream);
    } else {
      using A = OpMath<T>;
      UnaryFn<T> fn{op, static_cast<A>(params.a), static_cast<A>(params.b),
                    static_cast<A>(params.c)};
      if constexpr (!is_floating_v<T>)
        fn = {op, static_cast<A>(params.ia), static_cast<A>(params.ib), A(0)};
      result = launch_elementwise<1>(space, static_cast<T*>(out), inputs, fn, stream);
    }
  });
  return result;
}

}  // namespace loom::gpu
