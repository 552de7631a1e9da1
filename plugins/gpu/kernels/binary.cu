// The GPU kernels of the binary family: arithmetic, pow, atan2, fmod, remainder, bitwise
// ops, comparisons and logical ops, each a functor handed to the generic launcher
// (elementwise_launcher.cuh). Float16 and bfloat16 compute in float; integer arithmetic
// wraps (computed in the unsigned type), as on the CPU.
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

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

// base ** exp for integers, as the CPU's (and PyTorch's) integer pow: by squaring, wrapping
// like repeated multiplication; a negative exponent gives 1 for base 1, +-1 for base -1 by
// the exponent's parity, and 0 for any other base.
template <typename T>
__device__ __forceinline__ T integer_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return T(1);
      if (base == -1) return exp % 2 == 0 ? T(1) : T(-1);
      return T(0);
    }
  }
  using W = Wrap<T>;
  W result = 1, b = static_cast<W>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exp);
  while (e != 0) {
    if (e & 1u) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<T>(result);
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
        case BinaryOp::Pow:  // the CPU's: x ** 0 is 1, x ** 1 is x
          return va || !vb;
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
        case BinaryOp::Pow:
          return integer_pow(va, vb);
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

}  // namespace

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::Eq;
}

const char* launch_binary(BinaryOp op, int32_t dtype, double alpha, const StridedSpace<3>& space,
                          void* out, const void* self, const void* other, gpuStream_t stream,
                          const HostScalars& scalars) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto inputs = input_pointers<T, 2>({self, other}, scalars);
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

}  // namespace loom::gpu
