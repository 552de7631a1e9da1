// The GPU kernels of the copy family: copy_ between dtypes (any strides, a broadcast
// source) and fill_, handed to the generic launcher (elementwise_launcher.cuh); the only
// kernels that take the complex dtypes.
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

// complex64 and complex128 (ABI 1.9): moved and converted by copy_ and set by fill_, as
// PyTorch's CUDA copy does for every pair of dtypes; no other GPU kernel takes them.
template <typename R>
struct alignas(2 * sizeof(R)) Complex {
  using Real = R;
  R re, im;
};

template <typename T>
inline constexpr bool is_complex_v = false;
template <typename R>
inline constexpr bool is_complex_v<Complex<R>> = true;

// visit_dtype and the complex dtypes.
template <typename F>
bool visit_copy_dtype(int32_t dtype, F&& f) {
  if (dtype == LOOM_DTYPE_COMPLEX64) {
    f(Complex<float>{});
    return true;
  }
  if (dtype == LOOM_DTYPE_COMPLEX128) {
    f(Complex<double>{});
    return true;
  }
  return visit_dtype(dtype, f);
}

// convert<Out>(x), and for the complex dtypes what PyTorch's copy_ does: a real value
// becomes the real part, and a complex one written to a real dtype keeps its real part.
template <typename Out, typename In>
LOOM_GPU_HD Out convert_any(In x) {
  if constexpr (is_complex_v<Out> && is_complex_v<In>) {
    using R = typename Out::Real;
    return Out{convert<R>(x.re), convert<R>(x.im)};
  } else if constexpr (is_complex_v<Out>) {
    using R = typename Out::Real;
    return Out{convert<R>(x), R(0)};
  } else if constexpr (is_complex_v<In>) {
    return convert<Out>(x.re);
  } else {
    return convert<Out>(x);
  }
}

template <typename Out, typename In>
struct ConvertFn {
  __device__ __forceinline__ Out operator()(In x) const { return convert_any<Out>(x); }
};

template <typename T>
struct ConstantFn {
  T value;
  __device__ __forceinline__ T operator()() const { return value; }
};

}  // namespace

const char* launch_copy(int32_t out_dtype, int32_t src_dtype, const StridedSpace<2>& space,
                        void* out, const void* src, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_copy_dtype(out_dtype, [&](auto out_tag) {
    using Out = decltype(out_tag);
    visit_copy_dtype(src_dtype, [&](auto in_tag) {
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
  visit_copy_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T value = value_is_floating ? convert_any<T>(value_d) : convert_any<T>(value_i);
    result = launch_elementwise<0>(space, static_cast<T*>(out), InputPointers<T, 0>{{nullptr}},
                                   ConstantFn<T>{value}, stream);
  });
  return result;
}

}  // namespace loom::gpu
