// Index math and launch planning shared by the GPU kernels and the host: how a strided
// N-d iteration space maps a linear element number to each operand's offset, how dims
// are coalesced before a launch, and the grid/block shapes the launchers use. Everything
// here is plain arithmetic, compiled into device code (LOOM_GPU_HD) and unit-tested on
// the host (tests/gpu/index_math_test.cc), so a machine without a GPU checks it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__HIPCC__)  // clang's HIP mode: __forceinline__ comes with hip_runtime.h only
#define LOOM_GPU_HD __host__ __device__ inline __attribute__((always_inline))
#define LOOM_GPU_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define LOOM_GPU_HD __host__ __device__ __forceinline__
#define LOOM_GPU_UNROLL _Pragma("unroll")
#else
#define LOOM_GPU_HD inline
#define LOOM_GPU_UNROLL  // host compilers: their own unrolling
#endif

namespace loom::gpu {

inline constexpr int kMaxDims = 16;     // after coalescing
inline constexpr int kMaxOperands = 4;  // output first, then up to three inputs

// An iteration space of `ndim` dims, innermost first, and each operand's strides in
// elements. Passed to kernels by value.
template <int N>
struct StridedSpace {
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  // True when every operand walks memory densely in element order (one dim of stride 1,
  // or no dim at all).
  bool contiguous() const {
    if (ndim == 0) return true;
    if (ndim > 1) return false;
    for (int k = 0; k < N; ++k) {
      if (strides[k][0] != 1) return false;
    }
    return true;
  }

  // The element offsets of linear element `i` (row-major numbering of the space).
  template <typename Index>
  LOOM_GPU_HD void offsets(Index i, Index (&out)[N]) const {
    LOOM_GPU_UNROLL
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = 0; d < ndim; ++d) {
      const Index size = static_cast<Index>(sizes[d]);
      const Index idx = i % size;
      i /= size;
      LOOM_GPU_UNROLL
      for (int k = 0; k < N; ++k) out[k] += idx * static_cast<Index>(strides[k][d]);
    }
  }
};

// Builds the space of a row-major shape `sizes[ndim]` and each operand's strides (row-major
// order, elements), innermost first: size-1 dims are dropped and neighbouring dims merged
// where every operand steps through them as one (stride[outer] == stride[inner] *
// size[inner]). Returns false when more than kMaxDims dims remain.
template <int N>
bool make_strided_space(const int64_t* sizes, int ndim, const int64_t* const (&strides)[N],
                        StridedSpace<N>* out) {
  StridedSpace<N> s;
  for (int d = ndim - 1; d >= 0; --d) {  // innermost first
    if (sizes[d] == 1) continue;
    if (s.ndim > 0) {
      const int last = s.ndim - 1;
      bool mergeable = true;
      for (int k = 0; k < N; ++k) {
        mergeable = mergeable && strides[k][d] == s.strides[k][last] * s.sizes[last];
      }
      if (mergeable) {
        s.sizes[last] *= sizes[d];
        continue;
      }
    }
    if (s.ndim == kMaxDims) return false;
    s.sizes[s.ndim] = sizes[d];
    for (int k = 0; k < N; ++k) s.strides[k][s.ndim] = strides[k][d];
    ++s.ndim;
  }
  *out = s;
  return true;
}

// True when the element count and every element offset of the space fit a signed 32-bit
// index. Offsets may be negative (flip reads backwards from its last element): the most
// negative and the most positive reach are checked apart.
template <int N>
bool fits_int32(const StridedSpace<N>& space) {
  const int64_t limit = int64_t{1} << 31;
  if (space.numel() >= limit) return false;
  for (int k = 0; k < N; ++k) {
    int64_t highest = 0, lowest = 0;
    for (int d = 0; d < space.ndim; ++d) {
      const int64_t step = (space.sizes[d] - 1) * space.strides[k][d];
      (step > 0 ? highest : lowest) += step;
    }
    if (highest >= limit || lowest < -limit) return false;
  }
  return true;
}

// A 1-d launch: `grid` blocks of `block` threads.
struct Launch {
  uint32_t grid = 0;
  uint32_t block = 0;
};

inline constexpr uint32_t kElementwiseBlock = 128;
inline constexpr int kElementwisePerThread = 4;
// Grid-stride loops cover the rest; enough blocks to fill any current GPU many times.
inline constexpr uint32_t kMaxGrid = 1u << 20;

// The launch of an elementwise kernel over n elements, `per_thread` elements a thread.
inline Launch plan_elementwise(int64_t n, int per_thread = kElementwisePerThread) {
  const int64_t per_block = static_cast<int64_t>(kElementwiseBlock) * per_thread;
  const int64_t blocks = std::max<int64_t>(1, (n + per_block - 1) / per_block);
  return {static_cast<uint32_t>(std::min<int64_t>(blocks, kMaxGrid)), kElementwiseBlock};
}

// The vector width (elements per load) a contiguous kernel may use: the widest power of
// two up to 8 whose loads stay within 16 bytes for every operand and to which every
// pointer is aligned (width * element size).
inline int vector_width(const void* const* pointers, const int* element_sizes, int count) {
  int width = 8;
  for (int k = 0; k < count; ++k) {
    width = std::min(width, 16 / element_sizes[k]);
  }
  while (width > 1) {
    bool aligned = true;
    for (int k = 0; k < count; ++k) {
      const auto address = reinterpret_cast<uintptr_t>(pointers[k]);
      aligned = aligned && address % (static_cast<uintptr_t>(width) * element_sizes[k]) == 0;
    }
    if (aligned) break;
    width /= 2;
  }
  return width;
}

// Note [Reduction layout]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A reduction sees its input as `outputs` independent rows of `row_length` elements (the
// reduced dims, wherever they are in memory: each row's elements are found through a
// StridedSpace over the reduced dims, each row's start through one over the kept dims).
// One block reduces `rows_per_block` rows: block.x threads split a row, block.y rows per
// block. Each thread folds its elements in a fixed order, then the block combines the
// partial results in a fixed tree, so a result never depends on timing: the reductions
// are deterministic, run to run.
struct ReductionLaunch {
  uint32_t grid = 0;
  uint32_t threads_per_row = 0;  // block.x: a power of two, 1..512
  uint32_t rows_per_block = 0;   // block.y
};

// Note [Split reductions]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Few long rows (a full sum) would leave most of the GPU idle with one block a row, so
// each row is split into `chunks` equal pieces reduced by separate blocks into a workspace
// of partial results (8 bytes each, the widest accumulator), which a second launch
// reduces. The split depends on the shape alone, so results stay deterministic.
struct ReductionSplit {
  int64_t chunks = 1;
  int64_t chunk_length = 0;
  int64_t workspace_bytes = 0;  // 0: no split
};

inline ReductionSplit plan_reduction_split(int64_t outputs, int64_t row_length) {
  constexpr int64_t kMinChunk = 16384;     // elements worth a block of their own
  constexpr int64_t kTargetBlocks = 1024;  // several waves on any current GPU
  if (outputs <= 0 || outputs >= kTargetBlocks / 4 || row_length < 2 * kMinChunk) {
    return {1, row_length, 0};
  }
  int64_t chunks = std::min(row_length / kMinChunk, kTargetBlocks / outputs);
  if (chunks < 2) return {1, row_length, 0};
  const int64_t chunk_length = (row_length + chunks - 1) / chunks;
  chunks = (row_length + chunk_length - 1) / chunk_length;  // every chunk non-empty
  return {chunks, chunk_length, outputs * chunks * 8};
}

inline ReductionLaunch plan_reduction(int64_t outputs, int64_t row_length) {
  constexpr uint32_t kBlockThreads = 512;
  uint32_t per_row = 1;
  while (per_row < kBlockThreads && static_cast<int64_t>(per_row) * 4 < row_length) per_row *= 2;
  const uint32_t rows = kBlockThreads / per_row;
  const int64_t blocks = std::max<int64_t>(1, (outputs + rows - 1) / rows);
  return {static_cast<uint32_t>(std::min<int64_t>(blocks, kMaxGrid)), per_row, rows};
}

}  // namespace loom::gpu
