// 2-D pooling kernels, one thread per output element (kernels/pool_math.h has the window
// arithmetic): max pooling with the flat in-plane index of each maximum, average pooling,
// and adaptive average and max pooling; grid sampling and its backward. Floating dtypes,
// computed in OpMath. As in
// PyTorch and the CPU plugin, the first of equal maxima wins and a NaN takes the place of
// anything before it (the first NaN stays).
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"
#include "loom/sdk/reference/grid_sample.hpp"
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

// grid_sampler_2d: one thread an output element (n, c, y, x), Note [Grid sampling]'s
// arithmetic from the SDK.
template <typename T>
__global__ void grid_sample_kernel(int64_t n, GridShape s, const T* in, const T* grid, T* out) {
  using A = OpMath<T>;
  const sdk::GridAxis<A> along_x{s.in_w, s.padding, s.align_corners};
  const sdk::GridAxis<A> along_y{s.in_h, s.padding, s.align_corners};
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t x = i % s.out_w, y = (i / s.out_w) % s.out_h;
    const int64_t c = (i / (s.out_w * s.out_h)) % s.channels;
    const int64_t b = i / (s.out_w * s.out_h * s.channels);
    const T* point = grid + b * s.grid_strides[0] + y * s.grid_strides[1] + x * s.grid_strides[2];
    const A gx = along_x.unnormalize(static_cast<A>(point[0]));
    const A gy = along_y.unnormalize(static_cast<A>(point[s.grid_strides[3]]));
    const T* plane = in + b * s.in_strides[0] + c * s.in_strides[1];
    auto tap = [&](A row, A col) -> A {
      if (!(row >= 0 && row < static_cast<A>(s.in_h) && col >= 0 && col < static_cast<A>(s.in_w))) {
        return A(0);
      }
      return static_cast<A>(plane[static_cast<int64_t>(row) * s.in_strides[2] +
                                  static_cast<int64_t>(col) * s.in_strides[3]]);
    };
    out[b * s.out_strides[0] + c * s.out_strides[1] + y * s.out_strides[2] + x * s.out_strides[3]] =
        static_cast<T>(sdk::grid_sample_value(along_x, along_y, gx, gy, s.interpolation, tap));
  }
}

// Its backward: one thread a grid point (n, y, x), whose taps take each channel's output
// gradient into grad_input (atomic adds: neighbouring points share pixels) and whose
// slopes make grad_grid. out_strides are grad_output's; grad_input arrives zeroed.
template <typename T>
__global__ void grid_sample_backward_kernel(int64_t n, GridShape s, GridBackwardStrides g,
                                            const T* grad_output, const T* in, const T* grid,
                                            T* grad_input, T* grad_grid) {
  using A = OpMath<T>;
  const sdk::GridAxis<A> along_x{s.in_w, s.padding, s.align_corners};
  const sdk::GridAxis<A> along_y{s.in_h, s.padding, s.align_corners};
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t x = i % s.out_w, y = (i / s.out_w) % s.out_h, b = i / (s.out_w * s.out_h);
    const T* point = grid + b * s.grid_strides[0] + y * s.grid_strides[1] + x * s.grid_strides[2];
    const A gx = along_x.unnormalize(static_cast<A>(point[0]));
    const A gy = along_y.unnormalize(static_cast<A>(point[s.grid_strides[3]]));
    const sdk::GridTaps<A> taps =
        sdk::grid_sample_taps(along_x, along_y, gx, gy, s.interpolation, s.in_h, s.in_w);
    A grad_x = 0, grad_y = 0;  // d loss / d unnormalised coordinate
    for (int64_t c = 0; c < s.channels; ++c) {
      const A go = static_cast<A>(grad_output[b * s.out_strides[0] + c * s.out_strides[1] +
                                              y * s.out_strides[2] + x * s.out_strides[3]]);
      const T* plane = in + b * s.in_strides[0] + c * s.in_strides[1];
      T* plane_grad = grad_input + b * g.grad_input[0] + c * g.grad_input[1];
      for (int k = 0; k < taps.count; ++k) {
        const sdk::GridTap<A>& t = taps.taps[k];
        const A v = static_cast<A>(plane[t.row * s.in_strides[2] + t.col * s.in_strides[3]]);
        T* target = plane_grad + t.row * g.grad_input[2] + t.col * g.grad_input[3];
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
          dev::atomic_add_16bit(target, static_cast<float>(t.weight * go));  // rounded once
        } else {
          dev::atomic_add(target, static_cast<T>(t.weight * go));
        }
        grad_x += t.weight_dx * v * go;
        grad_y += t.weight_dy * v * go;
      }
    }
    T* slot = grad_grid + b * g.grad_grid[0] + y * g.grad_grid[1] + x * g.grad_grid[2];
    slot[0] = static_cast<T>(grad_x * taps.slope_x);
    slot[g.grad_grid[3]] = static_cast<T>(grad_y * taps.slope_y);
  }
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

const char* launch_grid_sample(int32_t dtype, const GridShape& shape, const void* in,
                               const void* grid, void* out, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_floating_v<T>) {
      result = launch_grid_stride(
          grid_sample_kernel<T>, shape.batch * shape.channels * shape.out_h * shape.out_w, stream,
          shape, static_cast<const T*>(in), static_cast<const T*>(grid), static_cast<T*>(out));
    }
  });
  return result;
}

const char* launch_grid_sample_backward(int32_t dtype, const GridShape& shape,
                                        const GridBackwardStrides& strides, const void* grad_output,
                                        const void* in, const void* grid, void* grad_input,
                                        void* grad_grid, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_floating_v<T>) {
      result = launch_grid_stride(
          grid_sample_backward_kernel<T>, shape.batch * shape.out_h * shape.out_w, stream, shape,
          strides, static_cast<const T*>(grad_output), static_cast<const T*>(in),
          static_cast<const T*>(grid), static_cast<T*>(grad_input), static_cast<T*>(grad_grid));
    }
  });
  return result;
}

}  // namespace loom::gpu
