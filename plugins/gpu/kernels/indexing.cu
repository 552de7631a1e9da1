// The indexing GPU kernels: gather (also index_select, through an index broadcast along
// the other dims) and scatter (a source, a value, or an atomic add, product, max or min). An index
// out of range is skipped and flagged in the launch's check slot, which the host turns into the
// op's error (Note [Input errors found by kernels]).
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"
#include "loom/sdk/reference/scatter_reduce.hpp"

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

// scatter_reduce's sum, product, max and min of two elements (Note [scatter_reduce]): in
// float for float16 / bfloat16, in the unsigned twin for integer sums and products (they
// wrap).
template <typename T>
__device__ __forceinline__ T scatter_combined(ScatterMode mode, T a, T b) {
  const sdk::ScatterReduce kind = mode == ScatterMode::Multiply  ? sdk::ScatterReduce::Prod
                                  : mode == ScatterMode::Maximum ? sdk::ScatterReduce::Max
                                  : mode == ScatterMode::Minimum ? sdk::ScatterReduce::Min
                                                                 : sdk::ScatterReduce::Sum;
  if constexpr (std::is_integral_v<T>) {
    if (kind == sdk::ScatterReduce::Prod || kind == sdk::ScatterReduce::Sum) {
      using U = std::make_unsigned_t<std::conditional_t<(sizeof(T) < 4), int32_t, T>>;
      return static_cast<T>(sdk::scatter_combine<U>(kind, static_cast<U>(a), static_cast<U>(b)));
    }
    return sdk::scatter_combine<T>(kind, a, b);
  } else {
    return convert<T>(
        sdk::scatter_combine<OpMath<T>>(kind, convert<OpMath<T>>(a), convert<OpMath<T>>(b)));
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
    } else if constexpr (dev::has_atomic_add_v<T>) {
      if (mode == ScatterMode::Add) {
        dev::atomic_add(target, src[o[2]]);
      } else {
        const T v = src[o[2]];
        dev::atomic_update(target, [&](T current) { return scatter_combined(mode, current, v); });
      }
    } else if constexpr (!std::is_same_v<T, bool>) {  // 8- and 16-bit integers
      const T v = src[o[2]];
      dev::atomic_update(target, [&](T current) { return scatter_combined(mode, current, v); });
    }
  }
}

template <typename T>
__device__ __forceinline__ bool nonzero_at(const T* self, const StridedSpace<1>& space, int64_t i) {
  int64_t o[1];
  space.offsets(i, o);
  return convert<bool>(self[o[0]]);
}

// Each block counts the nonzero elements of its chunk of the row-major order.
template <typename T>
__global__ void nonzero_count_kernel(int64_t n, StridedSpace<1> space, const T* self,
                                     int64_t* counts) {
  __shared__ int64_t partial[kNonzeroThreads];
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kNonzeroChunk;
  const int64_t last = first + kNonzeroChunk < n ? first + kNonzeroChunk : n;
  int64_t count = 0;
  for (int64_t i = first + threadIdx.x; i < last; i += blockDim.x)
    count += nonzero_at(self, space, i);
  partial[threadIdx.x] = count;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = partial[0];
}

// Each block writes the coordinates of its chunk's nonzero elements in order, from row
// offsets[block]: a tile of blockDim elements at a time, ranked by a scan of their flags.
template <typename T>
__global__ void nonzero_write_kernel(int64_t n, StridedSpace<1> space, NonzeroShape shape,
                                     const T* self, const int64_t* offsets, int64_t* out) {
  __shared__ int64_t rank[kNonzeroThreads];
  const int t = static_cast<int>(threadIdx.x);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kNonzeroChunk;
  const int64_t last = first + kNonzeroChunk < n ? first + kNonzeroChunk : n;
  int64_t row = offsets[blockIdx.x];
  for (int64_t base = first; base < last; base += blockDim.x) {
    const int64_t i = base + t;
    const bool flag = i < last && nonzero_at(self, space, i);
    rank[t] = flag ? 1 : 0;
    __syncthreads();
    for (int s = 1; s < static_cast<int>(blockDim.x); s <<= 1) {  // inclusive scan
      const int64_t before = t >= s ? rank[t - s] : 0;
      __syncthreads();
      rank[t] += before;
      __syncthreads();
    }
    if (flag) {
      int64_t* coords = out + (row + rank[t] - 1) * shape.ndim;
      int64_t rest = i;
      for (int d = shape.ndim - 1; d >= 0; --d) {
        coords[d] = rest % shape.sizes[d];
        rest /= shape.sizes[d];
      }
    }
    row += rank[blockDim.x - 1];
    __syncthreads();
  }
}

// out[o0] = self[o1 + sum over k of index_k[o2] * stride_k], each index wrapped once and
// range-checked against its dim.
template <typename T>
__global__ void advanced_index_kernel(int64_t n, StridedSpace<3> space, AdvancedIndices a, T* out,
                                      const T* self) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[3];
    space.offsets(i, o);
    int64_t source = o[1];
    bool ok = true;
    for (int k = 0; k < a.count; ++k) {
      const int64_t v = a.index[k][o[2]];
      if (v < -a.size[k] || v >= a.size[k]) {
        dev::flag_input(a.check[k], v);
        ok = false;
      } else {
        source += (v < 0 ? v + a.size[k] : v) * a.stride[k];
      }
    }
    if (ok) out[o[0]] = self[source];
  }
}

}  // namespace

const char* launch_nonzero_count(int32_t dtype, const StridedSpace<1>& space, const void* self,
                                 int64_t* counts, gpuStream_t stream) {
  const int64_t n = space.numel(), blocks = nonzero_blocks(n);
  if (blocks == 0) return nullptr;
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(nonzero_count_kernel<T>, static_cast<unsigned int>(blocks), kNonzeroThreads, 0,
                  stream, n, space, static_cast<const T*>(self), counts);
    result = last_launch_error();
  });
  return result;
}

const char* launch_nonzero_write(int32_t dtype, const StridedSpace<1>& space,
                                 const NonzeroShape& shape, const void* self,
                                 const int64_t* offsets, int64_t* out, gpuStream_t stream) {
  const int64_t n = space.numel(), blocks = nonzero_blocks(n);
  if (blocks == 0) return nullptr;
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(nonzero_write_kernel<T>, static_cast<unsigned int>(blocks), kNonzeroThreads, 0,
                  stream, n, space, shape, static_cast<const T*>(self), offsets, out);
    result = last_launch_error();
  });
  return result;
}

const char* launch_advanced_index(int32_t dtype, const StridedSpace<3>& space,
                                  const AdvancedIndices& indices, void* out, const void* self,
                                  gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = launch_grid_stride(advanced_index_kernel<T>, space.numel(), stream, space, indices,
                                static_cast<T*>(out), static_cast<const T*>(self));
  });
  return result;
}

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
    // bool has no arithmetic; the other types without atomic adds add by compare-and-swap
    const bool reduces = mode != ScatterMode::Source && mode != ScatterMode::Value;
    if (reduces && std::is_same_v<T, bool>) return;
    const T v = value.is_floating ? convert<T>(value.d) : convert<T>(value.i);
    result =
        launch_grid_stride(scatter_kernel<T>, space.numel(), stream, mode, space, dim_size,
                           dim_stride, static_cast<T*>(out), static_cast<const int64_t*>(index),
                           static_cast<const T*>(src), v, status);
  });
  return result;
}

}  // namespace loom::gpu
