// The GPU kernels of the copy family: copy_ between dtypes (any strides, a broadcast
// source) and fill_, handed to the generic launcher (elementwise_launcher.cuh).
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

template <typename Out, typename In>
struct ConvertFn {
  __device__ __forceinline__ Out operator()(In x) const { return convert<Out>(x); }
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
