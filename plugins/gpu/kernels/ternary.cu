// The GPU kernels of the ternary pointwise family (where, lerp with a weight tensor,
// addcmul, addcdiv), masked_fill, and integer division with a rounding mode, which flags a zero
// divisor in its launch's check slot (Note [Input errors found by kernels]).
#include <cstdint>
#include <limits>
#include <type_traits>

#include "device_math.cuh"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

template <typename T>
T scalar_as(const ScalarArg& value) {
  return value.is_floating ? convert<T>(value.d) : convert<T>(value.i);
}

template <typename T>
struct TernaryFn {
  TernaryOp op;
  OpMath<T> value;  // floating: the scalar; integers: unused (see wrapped_value)
  std::conditional_t<is_floating_v<T>, uint64_t, Wrap<T>> wrapped_value;
  __device__ __forceinline__ T operator()(T x, T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      // addcmul on integers wraps, computed in the unsigned type
      using W = decltype(wrapped_value);
      return static_cast<T>(static_cast<W>(x) +
                            wrapped_value * static_cast<W>(a) * static_cast<W>(b));
    } else {
      using A = OpMath<T>;
      const A s = convert<A>(x), p = convert<A>(a), q = convert<A>(b);
      switch (op) {
        case TernaryOp::Lerp:
          return convert<T>(dev::fabs(q) < A(0.5) ? s + q * (p - s) : p - (p - s) * (A(1) - q));
        case TernaryOp::Addcmul:
          return convert<T>(s + value * p * q);
        default:
          return convert<T>(s + value * p / q);
      }
    }
  }
};

template <typename T>
__global__ void masked_fill_kernel(int64_t n, StridedSpace<3> space, T* out, Operand<T> self,
                                   Operand<bool> mask, T value) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[3];
    space.offsets(i, o);
    out[o[0]] = mask[o[2]] ? value : self[o[1]];
  }
}

template <typename T>
__global__ void integer_divide_kernel(int64_t n, StridedSpace<3> space, T* out, Operand<T> self,
                                      Operand<T> other, bool floor, int64_t* check) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[3];
    space.offsets(i, o);
    const T x = self[o[1]], y = other[o[2]];
    T q = 0;
    if (y == 0) {
      dev::flag_input(check, 1);
    } else if (std::is_signed_v<T> && y == T(-1)) {
      // lowest / -1 does not fit: refused in 32 and 64 bits (x86 traps there), int8 and
      // int16 wrap, as on the CPU.
      if (sizeof(T) >= 4 && x == std::numeric_limits<T>::lowest()) {
        dev::flag_input(check, 2);
      } else {
        q = static_cast<T>(Wrap<T>(0) - static_cast<Wrap<T>>(x));
      }
    } else {
      q = static_cast<T>(x / y);
      if constexpr (std::is_signed_v<T>) {
        if (floor && x % y != 0 && ((x < 0) != (y < 0))) --q;
      }
    }
    out[o[0]] = q;
  }
}

template <typename F>
void visit_integer_dtype(int32_t dtype, F&& f) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) f(tag);
  });
}

// where's inputs differ in type (bool condition); it gathers through a byte view.
template <typename T>
__global__ void where_kernel(int64_t n, StridedSpace<4> space, T* out, Operand<bool> condition,
                             Operand<T> self, Operand<T> other) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[4];
    space.offsets(i, o);
    out[o[0]] = condition[o[1]] ? self[o[2]] : other[o[3]];
  }
}

}  // namespace

const char* launch_ternary(TernaryOp op, int32_t dtype, const ScalarArg& value,
                           const StridedSpace<4>& space, void* out, const void* self, const void* a,
                           const void* b, gpuStream_t stream, const HostScalars& scalars) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      if (std::is_integral_v<T> && op != TernaryOp::Addcmul) return;
      TernaryFn<T> fn{op, static_cast<OpMath<T>>(value.is_floating ? value.d : value.i),
                      static_cast<decltype(fn.wrapped_value)>(value.i)};
      const auto inputs = input_pointers<T, 3>({self, a, b}, scalars);
      result = launch_elementwise<3>(space, static_cast<T*>(out), inputs, fn, stream);
    }
  });
  return result;
}

const char* launch_masked_fill(int32_t dtype, const ScalarArg& value, const StridedSpace<3>& space,
                               void* out, const void* self, const void* mask, gpuStream_t stream,
                               const HostScalars& scalars) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = launch_grid_stride(masked_fill_kernel<T>, space.numel(), stream, space,
                                static_cast<T*>(out), operand<T>(self, scalars, 0),
                                operand<bool>(mask, scalars, 1), scalar_as<T>(value));
  });
  return result;
}

const char* launch_integer_divide(int32_t dtype, bool floor, const StridedSpace<3>& space,
                                  void* out, const void* self, const void* other, int64_t* check,
                                  gpuStream_t stream, const HostScalars& scalars) {
  const char* result = kUnsupportedDtype;
  visit_integer_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = launch_grid_stride(integer_divide_kernel<T>, space.numel(), stream, space,
                                static_cast<T*>(out), operand<T>(self, scalars, 0),
                                operand<T>(other, scalars, 1), floor, check);
  });
  return result;
}

const char* launch_where(int32_t dtype, const StridedSpace<4>& space, void* out,
                         const void* condition, const void* self, const void* other,
                         gpuStream_t stream, const HostScalars& scalars) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = launch_grid_stride(where_kernel<T>, space.numel(), stream, space, static_cast<T*>(out),
                                operand<bool>(condition, scalars, 0), operand<T>(self, scalars, 1),
                                operand<T>(other, scalars, 2));
  });
  return result;
}

}  // namespace loom::gpu
