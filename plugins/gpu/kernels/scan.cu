// Scans along one dim: cumsum and cumprod (floating types accumulate in double, integers
// in wrapping 64-bit, as on the CPU), cummax and cummin (the running extreme and its
// position, Note [cummax and cummin] in loom/sdk/reference/scan.hpp: an equal value moves the
// position to itself, a NaN takes over and stays). One thread walks one line in order, so results
// are deterministic; lines are the parallel dimension.
#include <cstdint>
#include <type_traits>

#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"
#include "loom/sdk/reference/scan.hpp"

namespace loom::gpu {
namespace {

template <typename T>
using ScanAcc = std::conditional_t<is_floating_v<T> || std::is_same_v<T, bool>, double, uint64_t>;

template <typename T, bool IsProd>
__global__ void scan_kernel(int64_t lines, StridedSpace<2> space, int64_t length,
                            int64_t out_stride, int64_t in_stride, T* out, const T* in) {
  using Acc = ScanAcc<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += step) {
    int64_t o[2];
    space.offsets(line, o);
    Acc running = IsProd ? Acc(1) : Acc(0);
    for (int64_t i = 0; i < length; ++i) {
      const T v = in[o[1] + i * in_stride];
      Acc x;
      if constexpr (std::is_same_v<Acc, uint64_t>) {
        x = static_cast<uint64_t>(static_cast<int64_t>(v));
      } else {
        x = convert<double>(v);
      }
      running = IsProd ? running * x : running + x;
      if constexpr (std::is_same_v<Acc, uint64_t>) {
        out[o[0] + i * out_stride] = static_cast<T>(static_cast<int64_t>(running));
      } else {
        out[o[0] + i * out_stride] = convert<T>(running);
      }
    }
  }
}

template <typename T>
using ExtremeKey = std::conditional_t<std::is_same_v<T, bool>, int, OpMath<T>>;

template <typename T, bool IsMax>
__global__ void running_extreme_kernel(int64_t lines, StridedSpace<3> space, int64_t length,
                                       LineStrides strides, T* values, int64_t* indices,
                                       const T* in) {
  using Key = ExtremeKey<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += step) {
    int64_t o[3];
    space.offsets(line, o);
    T best{};
    Key best_key{};
    int64_t best_at = 0;
    for (int64_t i = 0; i < length; ++i) {
      const T v = in[o[2] + i * strides.in];
      const Key key = static_cast<Key>(v);
      if (sdk::takes_running_extreme<IsMax>(i == 0, key, best_key)) {
        best = v;
        best_key = key;
        best_at = i;
      }
      values[o[0] + i * strides.values] = best;
      indices[o[1] + i * strides.indices] = best_at;
    }
  }
}

}  // namespace

const char* launch_scan(bool is_prod, int32_t dtype, const StridedSpace<2>& lines, int64_t length,
                        int64_t out_stride, int64_t in_stride, void* out, const void* in,
                        gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto kernel = is_prod ? scan_kernel<T, true> : scan_kernel<T, false>;
    result = launch_grid_stride(kernel, lines.numel(), stream, lines, length, out_stride, in_stride,
                                static_cast<T*>(out), static_cast<const T*>(in));
  });
  return result;
}

const char* launch_running_extreme(bool is_max, int32_t dtype, const StridedSpace<3>& lines,
                                   int64_t length, const LineStrides& strides, void* values,
                                   int64_t* indices, const void* in, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto kernel = is_max ? running_extreme_kernel<T, true> : running_extreme_kernel<T, false>;
    result = launch_grid_stride(kernel, lines.numel(), stream, lines, length, strides,
                                static_cast<T*>(values), indices, static_cast<const T*>(in));
  });
  return result;
}

}  // namespace loom::gpu
