// sort and topk along one dim: each line's (key, position) items go to scratch, a bitonic
// network sorts them (Note [Bitonic sort] in sort_math.h), and the first `count` items
// become the values (self's elements, bit for bit) and their positions.
#include <cstdint>
#include <type_traits>

#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"
#include "sort_math.h"

namespace loom::gpu {
namespace {

template <typename T>
using SortKey = std::conditional_t<std::is_same_v<T, bool>, int, OpMath<T>>;

static_assert(sizeof(SortItem<double>) == kSortItemBytes &&
                  sizeof(SortItem<int8_t>) == kSortItemBytes,
              "the host sizes the scratch with kSortItemBytes per item");

template <typename T>
__global__ void sort_load_kernel(int64_t n, StridedSpace<3> lines, int64_t width, int64_t length,
                                 int64_t in_stride, const T* in, SortItem<SortKey<T>>* items) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < n; g += step) {
    const int64_t line = g / width, p = g % width;
    SortItem<SortKey<T>> item{SortKey<T>(0), -1};
    if (p < length) {
      int64_t o[3];
      lines.offsets(line, o);
      item.key = static_cast<SortKey<T>>(in[o[2] + p * in_stride]);
      item.position = p;
    }
    items[g] = item;
  }
}

// A chunk pass (SortPass) on one chunk of `chunk` items of a line in shared memory.
template <typename Key>
__global__ void sort_chunk_kernel(int64_t width, int64_t chunk, SortPass pass, bool descending,
                                  SortItem<Key>* items) {
  LOOM_GPU_DYNAMIC_SHARED(unsigned char, shared_bytes);
  auto* s = reinterpret_cast<SortItem<Key>*>(shared_bytes);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * chunk;  // of all lines' items
  const int64_t base = first % width;                              // its line position
  for (int64_t t = threadIdx.x; t < chunk; t += blockDim.x) s[t] = items[first + t];
  __syncthreads();
  for (int64_t k = pass.k_first; k <= pass.k_last; k <<= 1) {
    for (int64_t j = k == pass.k_first ? pass.j_first : k / 2; j >= 1; j >>= 1) {
      for (int64_t t = threadIdx.x; t < chunk / 2; t += blockDim.x) {
        bitonic_step(s, base, t, k, j, descending);
      }
      __syncthreads();
    }
  }
  for (int64_t t = threadIdx.x; t < chunk; t += blockDim.x) items[first + t] = s[t];
}

// A global pass: one stage (k, j) over lines * width / 2 pairs.
template <typename Key>
__global__ void sort_stage_kernel(int64_t pairs, int64_t width, int64_t k, int64_t j,
                                  bool descending, SortItem<Key>* items) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t half = width / 2;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < pairs;
       g += step) {
    bitonic_step(items + (g / half) * width, 0, g % half, k, j, descending);
  }
}

template <typename T>
__global__ void sort_store_kernel(int64_t n, StridedSpace<3> lines, int64_t width, int64_t count,
                                  LineStrides strides, const T* in,
                                  const SortItem<SortKey<T>>* items, T* values, int64_t* indices) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < n; g += step) {
    const int64_t line = g / count, p = g % count;
    int64_t o[3];
    lines.offsets(line, o);
    const int64_t position = items[line * width + p].position;
    values[o[0] + p * strides.values] = in[o[2] + position * strides.in];
    indices[o[1] + p * strides.indices] = position;
  }
}

template <typename Key>
const char* run_network(int64_t line_count, int64_t width, bool descending, SortItem<Key>* items,
                        gpuStream_t stream) {
  const int64_t chunk = sort_chunk(width);
  const int threads = static_cast<int>(chunk / 2 > 0 ? chunk / 2 : 1);
  const size_t shared = static_cast<size_t>(chunk) * sizeof(SortItem<Key>);
  const auto blocks = static_cast<unsigned int>(line_count * (width / chunk));
  for (const SortPass& pass : sort_passes(width)) {
    const char* error = nullptr;
    if (pass.in_chunks) {
      launch_kernel(sort_chunk_kernel<Key>, blocks, threads, shared, stream, width, chunk, pass,
                    descending, items);
      error = last_launch_error();
    } else {
      error = launch_grid_stride(sort_stage_kernel<Key>, line_count * width / 2, stream, width,
                                 pass.k_first, pass.j_first, descending, items);
    }
    if (error != nullptr) return error;
  }
  return nullptr;
}

}  // namespace

const char* launch_sort(int32_t dtype, const StridedSpace<3>& lines, int64_t length, int64_t count,
                        bool descending, const LineStrides& strides, void* values, int64_t* indices,
                        const void* in, void* scratch, gpuStream_t stream) {
  const int64_t line_count = lines.numel();
  if (line_count == 0 || count == 0) return nullptr;
  const int64_t width = sort_width(length);
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using Key = SortKey<T>;
    auto* items = static_cast<SortItem<Key>*>(scratch);
    result = launch_grid_stride(sort_load_kernel<T>, line_count * width, stream, lines, width,
                                length, strides.in, static_cast<const T*>(in), items);
    if (result == nullptr) result = run_network<Key>(line_count, width, descending, items, stream);
    if (result == nullptr) {
      result = launch_grid_stride(sort_store_kernel<T>, line_count * count, stream, lines, width,
                                  count, strides, static_cast<const T*>(in), items,
                                  static_cast<T*>(values), indices);
    }
  });
  return result;
}

}  // namespace loom::gpu
