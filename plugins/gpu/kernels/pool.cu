// 2-D pooling kernels, one thread per output element (kernels/pool_math.h has the window
// arithmetic): max pooling with the flat in-plane index of each maximum, average pooling,
// and adaptive average and max pooling. Floating dtypes, computed in OpMath. As in
// PyTorch and the CPU plugin, the first of equal maxima wins and a NaN takes the place of
// anything before it (the first NaN stays).
#include <cstdint>

#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"
#include "pool_math.h"

namespace loom::gpu {
namespace {

__device__ __forceinline__ int64_t plane_offset(const int64_t (&strides)[4],
                                                const PoolPosition& p) {
  return p.n * strides[0] + p.c * strides[1];
}

// Calls f(p, plane) for each output position p this thread owns (a grid-stride loop over
// the n outputs), plane being the input plane of p's batch and channel.
template <typename T, typename F>
__device__ __forceinline__ void for_each_output(int64_t n, const PoolShape& s, const T* in, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const PoolPosition p = pool_position(s, i);
    f(p, in + plane_offset(s.in_strides, p));
  }
}

// Moves (best, at) to v at `index` when v is larger, or the first NaN.
template <typename A>
__device__ __forceinline__ void take_max(A v, int64_t index, A& best, int64_t& at) {
  if (at < 0 || v > best || (v != v && best == best)) {
    best = v;
    at = index;
  }
}

template <typename T>
__global__ void max_pool_kernel(int64_t n, PoolShape s, T* values, int64_t* indices, const T* in) {
  using A = OpMath<T>;
  for_each_output(n, s, in, [&](const PoolPosition& p, const T* plane) {
    const WindowTaps rows =
        window_taps(p.y, s.kernel[0], s.stride[0], s.padding[0], s.dilation[0], s.in_h);
    const WindowTaps cols =
        window_taps(p.x, s.kernel[1], s.stride[1], s.padding[1], s.dilation[1], s.in_w);
    A best = -INFINITY;
    int64_t at = -1;
    for (int64_t r = rows.first; r < rows.last; ++r) {
      const int64_t iy = rows.start + r * s.dilation[0];
      for (int64_t c = cols.first; c < cols.last; ++c) {
        const int64_t ix = cols.start + c * s.dilation[1];
        take_max(convert<A>(plane[iy * s.in_strides[2] + ix * s.in_strides[3]]), iy * s.in_w + ix,
                 best, at);
      }
    }
    values[pool_offset(s.out_strides, p)] = convert<T>(best);
    indices[pool_offset(s.index_strides, p)] = at;
  });
}

template <typename T>
__global__ void adaptive_max_pool_kernel(int64_t n, PoolShape s, T* values, int64_t* indices,
                                         const T* in) {
  using A = OpMath<T>;
  for_each_output(n, s, in, [&](const PoolPosition& p, const T* plane) {
    const AdaptiveCell cell = adaptive_cell(s, p);
    A best = 0;
    int64_t at = -1;
    for (int64_t iy = cell.y0; iy < cell.y1; ++iy) {
      for (int64_t ix = cell.x0; ix < cell.x1; ++ix) {
        const A v = convert<A>(plane[iy * s.in_strides[2] + ix * s.in_strides[3]]);
        // a later NaN moves the position to itself (the CPU plugin's rule for adaptive cells)
        if (at < 0 || v > best || v != v) {
          best = v;
          at = iy * s.in_w + ix;
        }
      }
    }
    values[pool_offset(s.out_strides, p)] = convert<T>(best);
    indices[pool_offset(s.index_strides, p)] = at;
  });
}

// divisor: 0 for the window's own count (count_include_pad picks which), else the override.
template <typename T>
__global__ void avg_pool_kernel(int64_t n, PoolShape s, bool count_include_pad, int64_t divisor,
                                T* out, const T* in) {
  using A = OpMath<T>;
  for_each_output(n, s, in, [&](const PoolPosition& p, const T* plane) {
    const AverageWindow rows = average_window(p.y, s.kernel[0], s.stride[0], s.padding[0], s.in_h);
    const AverageWindow cols = average_window(p.x, s.kernel[1], s.stride[1], s.padding[1], s.in_w);
    A total = 0;
    for (int64_t iy = rows.begin; iy < rows.end; ++iy) {
      for (int64_t ix = cols.begin; ix < cols.end; ++ix) {
        total += convert<A>(plane[iy * s.in_strides[2] + ix * s.in_strides[3]]);
      }
    }
    const int64_t count = divisor != 0        ? divisor
                          : count_include_pad ? rows.padded_extent * cols.padded_extent
                                              : (rows.end - rows.begin) * (cols.end - cols.begin);
    out[pool_offset(s.out_strides, p)] = convert<T>(total / static_cast<A>(count));
  });
}

template <typename T>
__global__ void adaptive_avg_pool_kernel(int64_t n, PoolShape s, T* out, const T* in) {
  using A = OpMath<T>;
  for_each_output(n, s, in, [&](const PoolPosition& p, const T* plane) {
    const AdaptiveCell cell = adaptive_cell(s, p);
    A total = 0;
    for (int64_t iy = cell.y0; iy < cell.y1; ++iy) {
      for (int64_t ix = cell.x0; ix < cell.x1; ++ix) {
        total += convert<A>(plane[iy * s.in_strides[2] + ix * s.in_strides[3]]);
      }
    }
    out[pool_offset(s.out_strides, p)] =
        convert<T>(total / static_cast<A>((cell.y1 - cell.y0) * (cell.x1 - cell.x0)));
  });
}

}  // namespace

const char* launch_max_pool(bool adaptive, int32_t dtype, const PoolShape& shape, void* values,
                            int64_t* indices, const void* in, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = launch_grid_stride(adaptive ? adaptive_max_pool_kernel<T> : max_pool_kernel<T>,
                                shape.outputs(), stream, shape, static_cast<T*>(values), indices,
                                static_cast<const T*>(in));
  });
  return result;
}

const char* launch_avg_pool(bool adaptive, int32_t dtype, const PoolShape& shape,
                            bool count_include_pad, int64_t divisor, void* out, const void* in,
                            gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (adaptive) {
      result = launch_grid_stride(adaptive_avg_pool_kernel<T>, shape.outputs(), stream, shape,
                                  static_cast<T*>(out), static_cast<const T*>(in));
    } else {
      result =
          launch_grid_stride(avg_pool_kernel<T>, shape.outputs(), stream, shape, count_include_pad,
                             divisor, static_cast<T*>(out), static_cast<const T*>(in));
    }
  });
  return result;
}

}  // namespace loom::gpu
