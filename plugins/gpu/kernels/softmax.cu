// softmax and log_softmax along one dim: each block takes one line of `length` elements
// (stride `inner`), finds its max and the sum of exp(x - max) with a fixed combining tree,
// then writes the line (a line that fits in shared memory is read from memory once). As
// on the CPU, a NaN in a line makes it NaN.
#include <cstdint>

#include "device_math.cuh"
#include "device_types.h"
#include "launch.h"

namespace loom::gpu {
namespace {

constexpr int kSoftmaxThreads = 256;

template <typename A, typename F>
__device__ A block_fold(A value, A* shared, F combine) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width)
      shared[threadIdx.x] = combine(shared[threadIdx.x], shared[threadIdx.x + width]);
    __syncthreads();
  }
  const A result = shared[0];
  __syncthreads();
  return result;
}

// Lines of at most this many bytes (in the compute type) are read from memory once and
// kept in shared memory for the sum and the write; longer ones are read three times.
constexpr int64_t kCachedLineBytes = 40 * 1024;

template <typename T, bool Log, bool Cached>
__global__ void softmax_kernel(int64_t lines, int64_t length, int64_t inner, T* out, const T* in) {
  using A = OpMath<T>;
  __shared__ A shared[kSoftmaxThreads];
  LOOM_GPU_DYNAMIC_SHARED(unsigned char, cache_bytes);
  A* cache = reinterpret_cast<A*>(cache_bytes);
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const int64_t base = (line / inner) * length * inner + line % inner;
    auto value = [&](int64_t j) -> A {
      if constexpr (Cached) return cache[j];
      return convert<A>(in[base + j * inner]);
    };
    A m = -INFINITY;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      const A x = convert<A>(in[base + j * inner]);
      if constexpr (Cached) cache[j] = x;
      m = (x != x || x > m) ? x : m;
    }
    m = block_fold(m, shared, [](A a, A b) { return a != a || a > b ? a : b; });
    A sum = 0;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) sum += dev::exp(value(j) - m);
    sum = block_fold(sum, shared, [](A a, A b) { return a + b; });
    const A log_sum = dev::log(sum);
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      const A shifted = value(j) - m;
      out[base + j * inner] = convert<T>(Log ? shifted - log_sum : dev::exp(shifted) / sum);
    }
    __syncthreads();  // the cache is rewritten by the next line
  }
}

template <typename T, bool Log>
void queue_softmax(unsigned grid, int64_t lines, int64_t length, int64_t inner, T* out, const T* in,
                   gpuStream_t stream) {
  const int64_t cache_bytes = length * static_cast<int64_t>(sizeof(OpMath<T>));
  if (cache_bytes <= kCachedLineBytes) {
    launch_kernel(softmax_kernel<T, Log, true>, grid, kSoftmaxThreads,
                  static_cast<size_t>(cache_bytes), stream, lines, length, inner, out, in);
  } else {
    launch_kernel(softmax_kernel<T, Log, false>, grid, kSoftmaxThreads, 0, stream, lines, length,
                  inner, out, in);
  }
}

}  // namespace

const char* launch_softmax(bool log, int32_t dtype, int64_t outer, int64_t length, int64_t inner,
                           void* out, const void* in, gpuStream_t stream) {
  const char* result = "the dtype is not supported by this kernel";
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = nullptr;
    const int64_t lines = outer * inner;
    if (lines == 0 || length == 0) return;
    const unsigned grid = static_cast<unsigned>(lines < kMaxGrid ? lines : kMaxGrid);
    if (log) {
      queue_softmax<T, true>(grid, lines, length, inner, static_cast<T*>(out),
                             static_cast<const T*>(in), stream);
    } else {
      queue_softmax<T, false>(grid, lines, length, inner, static_cast<T*>(out),
                              static_cast<const T*>(in), stream);
    }
    const gpuError_t err = gpuGetLastError();
    if (err != gpuSuccess) result = gpuGetErrorString(err);
  });
  return result;
}

}  // namespace loom::gpu
