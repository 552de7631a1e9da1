// Scans along one dim: cumsum and cumprod (floating types accumulate in double, integers
// in wrapping 64-bit, as on the CPU), cummax and cummin (the running extreme and its
// position, Note [cummax and cummin] in loom/sdk/reference/scan.hpp: an equal value moves the
// position to itself, a NaN takes over and stays). Short lines: one thread walks each in
// order; long lines: a block scans each (Note [Block scans]). Deterministic either way.
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

// Note [Block scans]
// ~~~~~~~~~~~~~~~~~~
// A long line (a cumsum over 100k elements) walked by one thread leaves the GPU idle, so
// lines longer than kScanSerialLength get a block each: the block walks its line in tiles
// of kScanThreads * kScanItems elements; each thread scans its kScanItems neighbours,
// the block scans the threads' totals in shared memory (Hillis and Steele: log2 steps),
// and each element gets the carry of the earlier tiles, its thread's exclusive prefix and
// its own running value, combined in that fixed order, so results stay deterministic. A
// scan's states combine associatively: sums and products (in double or wrapping 64-bit,
// whose rounding differs from a serial walk only in double's last bits), and the running
// extreme with its position (Note [cummax and cummin]: a later segment's extreme takes
// over where it would have as an element).
constexpr int kScanThreads = 256;
constexpr int kScanItems = 4;
constexpr int64_t kScanSerialLength = 256;

template <typename T, bool IsProd>
struct SumProdScan {
  using State = ScanAcc<T>;
  static __device__ __forceinline__ State identity() { return IsProd ? State(1) : State(0); }
  static __device__ __forceinline__ State combine(State a, State b) {
    return IsProd ? a * b : a + b;
  }
  static __device__ __forceinline__ State element(T v, int64_t) {
    if constexpr (std::is_same_v<State, uint64_t>) {
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    } else {
      return convert<double>(v);
    }
  }
};

template <typename T, bool IsMax>
struct ExtremeScan {
  struct State {
    T value;
    ExtremeKey<T> key;
    int64_t at;
    bool any;
  };
  static __device__ __forceinline__ State identity() { return State{T{}, {}, 0, false}; }
  static __device__ __forceinline__ State combine(const State& a, const State& b) {
    if (!b.any) return a;
    if (!a.any) return b;
    return sdk::takes_running_extreme<IsMax>(false, b.key, a.key) ? b : a;
  }
  static __device__ __forceinline__ State element(T v, int64_t i) {
    return State{v, static_cast<ExtremeKey<T>>(v), i, true};
  }
};

// The block scan of each long line (Note [Block scans]); `Write` stores element i's state.
template <typename T, typename Scan, int N, typename Write>
__device__ void scan_lines_by_block(int64_t lines, const StridedSpace<N>& space, int64_t length,
                                    int64_t in_stride, const T* in, Write write) {
  using State = typename Scan::State;
  LOOM_GPU_DYNAMIC_SHARED(unsigned char, shared_bytes);
  State* buffers = reinterpret_cast<State*>(shared_bytes);  // two of kScanThreads
  const int t = threadIdx.x;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    int64_t o[N];
    space.offsets(line, o);
    State carry = Scan::identity();
    for (int64_t tile = 0; tile < length; tile += int64_t{kScanThreads} * kScanItems) {
      State local[kScanItems];
      State running = Scan::identity();
      const int64_t first = tile + int64_t{t} * kScanItems;
#pragma unroll
      for (int k = 0; k < kScanItems; ++k) {
        if (first + k < length) {
          running = Scan::combine(running,
                                  Scan::element(in[o[N - 1] + (first + k) * in_stride], first + k));
        }
        local[k] = running;
      }
      State* from = buffers;
      State* to = buffers + kScanThreads;
      from[t] = running;
      __syncthreads();
      for (int offset = 1; offset < kScanThreads; offset *= 2) {
        to[t] = t >= offset ? Scan::combine(from[t - offset], from[t]) : from[t];
        __syncthreads();
        State* swap = from;
        from = to;
        to = swap;
      }
      const State prefix = Scan::combine(carry, t > 0 ? from[t - 1] : Scan::identity());
#pragma unroll
      for (int k = 0; k < kScanItems; ++k) {
        if (first + k < length) write(o, first + k, Scan::combine(prefix, local[k]));
      }
      carry = Scan::combine(carry, from[kScanThreads - 1]);
      __syncthreads();  // the buffers are read before the next tile writes them
    }
  }
}

template <typename T, bool IsProd>
__global__ void block_scan_kernel(int64_t lines, StridedSpace<2> space, int64_t length,
                                  int64_t out_stride, int64_t in_stride, T* out, const T* in) {
  using Scan = SumProdScan<T, IsProd>;
  scan_lines_by_block<T, Scan, 2>(lines, space, length, in_stride, in,
                                  [&](const int64_t(&o)[2], int64_t i, typename Scan::State v) {
                                    if constexpr (std::is_same_v<typename Scan::State, uint64_t>) {
                                      out[o[0] + i * out_stride] =
                                          static_cast<T>(static_cast<int64_t>(v));
                                    } else {
                                      out[o[0] + i * out_stride] = convert<T>(v);
                                    }
                                  });
}

template <typename T, bool IsMax>
__global__ void block_running_extreme_kernel(int64_t lines, StridedSpace<3> space, int64_t length,
                                             LineStrides strides, T* values, int64_t* indices,
                                             const T* in) {
  using Scan = ExtremeScan<T, IsMax>;
  scan_lines_by_block<T, Scan, 3>(
      lines, space, length, strides.in, in,
      [&](const int64_t(&o)[3], int64_t i, const typename Scan::State& v) {
        values[o[0] + i * strides.values] = v.value;
        indices[o[1] + i * strides.indices] = v.at;
      });
}

// A block per line for long lines (Note [Block scans]), else a thread per line.
inline bool scans_by_block(int64_t length) {
  return length > kScanSerialLength;
}

template <typename State, typename... KernelArgs, typename... Args>
const char* launch_block_scan(void (*kernel)(int64_t, KernelArgs...), int64_t lines,
                              gpuStream_t stream, Args... args) {
  if (lines == 0) return nullptr;
  const uint32_t grid = static_cast<uint32_t>(lines < kMaxGrid ? lines : kMaxGrid);
  launch_kernel(kernel, grid, kScanThreads, 2 * kScanThreads * sizeof(State), stream, lines,
                static_cast<KernelArgs>(args)...);
  return last_launch_error();
}

}  // namespace

const char* launch_scan(bool is_prod, int32_t dtype, const StridedSpace<2>& lines, int64_t length,
                        int64_t out_stride, int64_t in_stride, void* out, const void* in,
                        gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (scans_by_block(length)) {
      auto kernel = is_prod ? block_scan_kernel<T, true> : block_scan_kernel<T, false>;
      result =
          launch_block_scan<ScanAcc<T>>(kernel, lines.numel(), stream, lines, length, out_stride,
                                        in_stride, static_cast<T*>(out), static_cast<const T*>(in));
      return;
    }
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
    if (scans_by_block(length)) {
      auto kernel =
          is_max ? block_running_extreme_kernel<T, true> : block_running_extreme_kernel<T, false>;
      result = launch_block_scan<typename ExtremeScan<T, true>::State>(
          kernel, lines.numel(), stream, lines, length, strides, static_cast<T*>(values), indices,
          static_cast<const T*>(in));
      return;
    }
    auto kernel = is_max ? running_extreme_kernel<T, true> : running_extreme_kernel<T, false>;
    result = launch_grid_stride(kernel, lines.numel(), stream, lines, length, strides,
                                static_cast<T*>(values), indices, static_cast<const T*>(in));
  });
  return result;
}

}  // namespace loom::gpu
