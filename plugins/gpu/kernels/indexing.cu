// The indexing GPU kernels: gather (also index_select, through an index broadcast along
// the other dims) and scatter (a source, a value, or an atomic add). An index out of range
// is skipped and flagged in the launch's check slot, which the host turns into the op's
// error (Note [Input errors found by kernels]).
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

__device__ __forceinline__ bool in_range(int64_t i, int64_t size, int64_t* status) {
  if (i >= 0 && i < size) return true;
  dev::flag_input(status, i);
  return false;
}

template <typename T, typename Index>
__global__ void gather_kernel(int64_t n, StridedSpace<3> space, int64_t dim_size,
                              int64_t dim_stride, T* out, const Index* index, const T* self,
                              int64_t* status) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[3];
    space.offsets(i, o);
    const int64_t k = static_cast<int64_t>(index[o[1]]);
    if (in_range(k, dim_size, status)) out[o[0]] = self[o[2] + k * dim_stride];
  }
}

// float16 / bfloat16: a compare-and-swap loop on the aligned 32-bit word holding the
// element (the sum in float, rounded once), on every GPU both platforms support.
template <typename T>
__device__ __forceinline__ void atomic_add_16bit(T* target, float value) {
  const auto address = reinterpret_cast<uintptr_t>(target);
  auto* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
  const unsigned int shift = (address & 2) != 0 ? 16 : 0;
  unsigned int old = *word, assumed = 0;
  do {
    assumed = old;
    T current;
    current.x = static_cast<uint16_t>(assumed >> shift);
    const T sum(static_cast<float>(current) + value);
    const unsigned int updated =
        (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(sum.x) << shift);
    old = atomicCAS(word, assumed, updated);
  } while (old != assumed);
}

template <typename T>
inline constexpr bool has_atomic_add_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, int64_t> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename T>
__device__ __forceinline__ void atomic_add(T* target, T value) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(target),
              static_cast<unsigned long long>(value));
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    atomic_add_16bit(target, static_cast<float>(value));
  } else {
    atomicAdd(target, value);
  }
}

template <typename T>
__global__ void scatter_kernel(int64_t n, ScatterMode mode, StridedSpace<3> space, int64_t dim_size,
                               int64_t dim_stride, T* out, const int64_t* index, const T* src,
                               T value, int64_t* status) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[3];
    space.offsets(i, o);
    const int64_t k = index[o[1]];
    if (!in_range(k, dim_size, status)) continue;
    T* target = out + o[0] + k * dim_stride;
    if (mode == ScatterMode::Value) {
      *target = value;
    } else if (mode == ScatterMode::Source) {
      *target = src[o[2]];
    } else if constexpr (has_atomic_add_v<T>) {
      atomic_add(target, src[o[2]]);
    }
  }
}

}  // namespace

const char* launch_gather(int32_t dtype, int32_t index_dtype, const StridedSpace<3>& space,
                          int64_t dim_size, int64_t dim_stride, void* out, const void* index,
                          const void* self, int64_t* status, gpuStream_t stream) {
  if (index_dtype != LOOM_DTYPE_INT64 && index_dtype != LOOM_DTYPE_INT32) {
    return "index tensors must be int64 or int32";
  }
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (index_dtype == LOOM_DTYPE_INT64) {
      result =
          launch_grid_stride(gather_kernel<T, int64_t>, space.numel(), stream, space, dim_size,
                             dim_stride, static_cast<T*>(out), static_cast<const int64_t*>(index),
                             static_cast<const T*>(self), status);
    } else {
      result =
          launch_grid_stride(gather_kernel<T, int32_t>, space.numel(), stream, space, dim_size,
                             dim_stride, static_cast<T*>(out), static_cast<const int32_t*>(index),
                             static_cast<const T*>(self), status);
    }
  });
  return result;
}

const char* launch_scatter(ScatterMode mode, int32_t dtype, const StridedSpace<3>& space,
                           int64_t dim_size, int64_t dim_stride, void* out, const void* index,
                           const void* src, const ScalarArg& value, int64_t* status,
                           gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (mode == ScatterMode::Add && !has_atomic_add_v<T>) return;
    const T v = value.is_floating ? convert<T>(value.d) : convert<T>(value.i);
    result =
        launch_grid_stride(scatter_kernel<T>, space.numel(), stream, mode, space, dim_size,
                           dim_stride, static_cast<T*>(out), static_cast<const int64_t*>(index),
                           static_cast<const T*>(src), v, status);
  });
  return result;
}

}  // namespace loom::gpu
