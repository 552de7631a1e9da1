// The pointwise GPU kernels: unary and binary math, comparisons, where, copy (with dtype
// conversion) and fill, each a functor handed to the generic launcher
// (elementwise_launcher.cuh). Float16 and bfloat16 compute in float; integer arithmetic
// wraps (computed in the unsigned type), as on the CPU.
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

// --- unary ---

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

// --- binary ---

// Python's floor division of floats as PyTorch computes it: from fmod, so 1 // 0.1 is 9,
// inf // 2 is nan and 5 // -inf is -1; a zero divisor gives x / 0.
template <typename A>
__device__ __forceinline__ A floor_divide(A a, A b) {
  if (b == A(0)) return a / b;
  const A mod = dev::fmod(a, b);
  A div = (a - mod) / b;
  if (mod != A(0) && (b < A(0)) != (mod < A(0))) div -= A(1);
  if (div == A(0)) return dev::copysign(A(0), a / b);
  A floored = dev::floor(div);
  if (div - floored > A(0.5)) floored += A(1);
  return floored;
}

template <typename T>
struct BinaryFn {
  BinaryOp op;
  OpMath<T> alpha;
  __device__ __forceinline__ T operator()(T va, T vb) const {
    using A = OpMath<T>;
    if constexpr (std::is_same_v<T, bool>) {
      switch (op) {
        case BinaryOp::Add:
          return va || (vb && alpha);
        case BinaryOp::Mul:
        case BinaryOp::BitAnd:
          return va && vb;
        case BinaryOp::BitOr:
          return va || vb;
        case BinaryOp::BitXor:
          return va != vb;
        case BinaryOp::Maximum:
          return va || vb;
        case BinaryOp::Minimum:
          return va && vb;
        default:
          return va;
      }
    } else if constexpr (std::is_integral_v<T>) {
      using W = Wrap<T>;
      const W x = static_cast<W>(va), y = static_cast<W>(vb), al = static_cast<W>(alpha);
      switch (op) {
        case BinaryOp::Add:
          return static_cast<T>(x + al * y);
        case BinaryOp::Sub:
          return static_cast<T>(x - al * y);
        case BinaryOp::Mul:
          return static_cast<T>(x * y);
        case BinaryOp::Maximum:
          return va > vb ? va : vb;
        case BinaryOp::Minimum:
          return va < vb ? va : vb;
        case BinaryOp::BitAnd:
          return static_cast<T>(x & y);
        case BinaryOp::BitOr:
          return static_cast<T>(x | y);
        case BinaryOp::BitXor:
          return static_cast<T>(x ^ y);
        case BinaryOp::Fmod:
          return vb == 0 ? T(0) : static_cast<T>(va % vb);
        case BinaryOp::Remainder: {
          if (vb == 0) return T(0);
          T r = static_cast<T>(va % vb);
          if (r != 0 && ((r < 0) != (vb < 0))) r = static_cast<T>(r + vb);
          return r;
        }
        default:
          return va;
      }
    } else {
      const A x = convert<A>(va), y = convert<A>(vb);
      switch (op) {
        case BinaryOp::Add:
          return convert<T>(x + alpha * y);
        case BinaryOp::Sub:
          return convert<T>(x - alpha * y);
        case BinaryOp::Mul:
          return convert<T>(x * y);
        case BinaryOp::Div:
          return convert<T>(x / y);
        case BinaryOp::Maximum:
          return convert<T>(x != x || x > y ? x : y);
        case BinaryOp::Minimum:
          return convert<T>(x != x || x < y ? x : y);
        case BinaryOp::Pow:
          return convert<T>(dev::pow(x, y));
        case BinaryOp::Atan2:
          return convert<T>(dev::atan2(x, y));
        case BinaryOp::Fmod:
          return convert<T>(dev::fmod(x, y));
        case BinaryOp::Remainder: {
          A r = dev::fmod(x, y);
          if (r != A(0) && ((r < A(0)) != (y < A(0)))) r += y;
          return convert<T>(r);
        }
        case BinaryOp::Lerp:  // from the nearer end, so a weight of 1 gives exactly other
          return convert<T>(dev::fabs(alpha) < A(0.5) ? x + alpha * (y - x)
                                                      : y - (y - x) * (A(1) - alpha));
        case BinaryOp::DivTrunc:
          return convert<T>(dev::trunc(x / y));
        case BinaryOp::DivFloor:
          return convert<T>(floor_divide(x, y));
        default:
          return va;
      }
    }
  }
};

template <typename T>
struct CompareFn {
  BinaryOp op;
  __device__ __forceinline__ bool operator()(T va, T vb) const {
    const OpMath<T> x = convert<OpMath<T>>(va), y = convert<OpMath<T>>(vb);
    switch (op) {
      case BinaryOp::Eq:
        return x == y;
      case BinaryOp::Ne:
        return x != y;
      case BinaryOp::Lt:
        return x < y;
      case BinaryOp::Le:
        return x <= y;
      case BinaryOp::Gt:
        return x > y;
      case BinaryOp::Ge:
        return x >= y;
      case BinaryOp::LogicalAnd:
        return convert<bool>(va) && convert<bool>(vb);
      case BinaryOp::LogicalOr:
        return convert<bool>(va) || convert<bool>(vb);
      default:
        return convert<bool>(va) != convert<bool>(vb);  // LogicalXor
    }
  }
};

template <typename Out, typename In>
struct ConvertFn {
  __device__ __forceinline__ Out operator()(In x) const { return convert<Out>(x); }
};

template <typename T>
struct ConstantFn {
  T value;
  __device__ __forceinline__ T operator()() const { return value; }
};

// where's inputs differ in type (bool condition); it gathers through a byte view.
template <typename T>
__global__ void where_kernel(int64_t n, StridedSpace<4> space, T* out, const bool* condition,
                             const T* self, const T* other) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[4];
    space.offsets(i, o);
    out[o[0]] = condition[o[1]] ? self[o[2]] : other[o[3]];
  }
}

}  // namespace

bool is_predicate(UnaryOp op) {
  return op == UnaryOp::IsNan || op == UnaryOp::IsInf || op == UnaryOp::IsFinite ||
         op == UnaryOp::LogicalNot;
}

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::Eq;
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

const char* launch_binary(BinaryOp op, int32_t dtype, double alpha, const StridedSpace<3>& space,
                          void* out, const void* self, const void* other, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    InputPointers<T, 2> inputs{{static_cast<const T*>(self), static_cast<const T*>(other)}};
    if (is_comparison(op)) {
      result =
          launch_elementwise<2>(space, static_cast<bool*>(out), inputs, CompareFn<T>{op}, stream);
    } else {
      result = launch_elementwise<2>(space, static_cast<T*>(out), inputs,
                                     BinaryFn<T>{op, static_cast<OpMath<T>>(alpha)}, stream);
    }
  });
  return result;
}

const char* launch_where(int32_t dtype, const StridedSpace<4>& space, void* out,
                         const void* condition, const void* self, const void* other,
                         gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = launch_grid_stride(where_kernel<T>, space.numel(), stream, space, static_cast<T*>(out),
                                static_cast<const bool*>(condition), static_cast<const T*>(self),
                                static_cast<const T*>(other));
  });
  return result;
}

const char* launch_copy(int32_t out_dtype, int32_t src_dtype, const StridedSpace<2>& space,
                        void* out, const void* src, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(out_dtype, [&](auto out_tag) {
    using Out = decltype(out_tag);
    visit_dtype(src_dtype, [&](auto in_tag) {
      using In = decltype(in_tag);
      result = launch_elementwise<1>(space, static_cast<Out*>(out),
                                     InputPointers<In, 1>{{static_cast<const In*>(src)}},
                                     ConvertFn<Out, In>{}, stream);
    });
  });
  return result;
}

const char* launch_fill(int32_t dtype, bool value_is_floating, double value_d, int64_t value_i,
                        const StridedSpace<1>& space, void* out, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T value = value_is_floating ? convert<T>(value_d) : convert<T>(value_i);
    result = launch_elementwise<0>(space, static_cast<T*>(out), InputPointers<T, 0>{{nullptr}},
                                   ConstantFn<T>{value}, stream);
  });
  return result;
}

}  // namespace loom::gpu
