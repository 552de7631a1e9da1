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

// Note [Division by invariant integers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A GPU has no integer divider: `i / size` and `i % size` cost some twenty instructions
// each, and a strided element walks every dim with both. The sizes are fixed for a launch,
// so the host computes for each a multiplier and a shift once (Granlund and Montgomery's
// division by invariant integers): with shift = ceil(log2(d)) and
// magic = floor(2^32 * (2^shift - d) / d) + 1, n / d = (mulhi(n, magic) + n) >> shift for
// every n < 2^31, one multiply-high, one add and one shift. (mulhi(n, magic) <= n, so the
// sum fits 32 bits.) The 32-bit kernels' offsets (OffsetCalculator) divide this way.
struct IntDivider {
  uint32_t divisor = 1;
  uint32_t magic = 0;
  uint32_t shift = 0;

  IntDivider() = default;
  explicit IntDivider(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    const uint64_t m = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1;
    magic = static_cast<uint32_t>(m);
  }
  // n / divisor, for n < 2^31.
  LOOM_GPU_HD uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(n, magic);
#else  // the host, and clang's HIP, which turns this into one multiply-high
    const uint32_t high = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic) >> 32);
#endif
    return (high + n) >> shift;
  }
};

// The operand offsets of a space whose elements and offsets fit 32 bits (fits_int32),
// dividing by each dim's size through an IntDivider. Passed to kernels by value.
template <int N>
struct OffsetCalculator {
  int32_t ndim = 0;
  IntDivider sizes[kMaxDims];
  int32_t strides[N][kMaxDims] = {};

  LOOM_GPU_HD void offsets(uint32_t i, int32_t (&out)[N]) const {
    LOOM_GPU_UNROLL
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = 0; d < ndim; ++d) {
      const uint32_t next = sizes[d].div(i);
      const int32_t idx = static_cast<int32_t>(i - next * sizes[d].divisor);
      i = next;
      LOOM_GPU_UNROLL
      for (int k = 0; k < N; ++k) out[k] += idx * strides[k][d];
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

// The 32-bit offset calculator of a space that fits_int32.
template <int N>
OffsetCalculator<N> offset_calculator(const StridedSpace<N>& space) {
  OffsetCalculator<N> c;
  c.ndim = space.ndim;
  for (int d = 0; d < space.ndim; ++d) {
    c.sizes[d] = IntDivider(static_cast<uint32_t>(space.sizes[d]));
    for (int k = 0; k < N; ++k) c.strides[k][d] = static_cast<int32_t>(space.strides[k][d]);
  }
  return c;
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

// Note [Broadcast inner vectors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `x * row` (a [rows, cols] tensor times a [cols] row) is not contiguous, since the row's
// outer stride is 0, but its inner dim is dense for every operand that moves along it.
// When out's inner stride is 1 and each input's is 1 or 0 (broadcast along it), a thread
// takes `width` consecutive elements of that dim: one offset computation for all of them,
// vector loads and a vector store for the dense operands, one load for the broadcast
// ones. The width must divide the inner size, and each dense operand's start and outer
// strides must keep its vectors aligned. Returns that width (2..8), or 1: not usable.
template <int N>
int inner_vector_width(const StridedSpace<N>& space, const void* const* pointers,
                       const int* element_sizes) {
  if (space.ndim < 1 || space.strides[0][0] != 1) return 1;
  int width = 8;
  for (int k = 0; k < N; ++k) {
    const int64_t inner = space.strides[k][0];
    if (inner != 0 && inner != 1) return 1;
    width = std::min(width, 16 / element_sizes[k]);
  }
  for (; width > 1; width /= 2) {
    if (space.sizes[0] % width != 0) continue;
    bool aligned = true;
    for (int k = 0; k < N && aligned; ++k) {
      if (space.strides[k][0] == 0 || pointers[k] == nullptr) continue;
      const auto address = reinterpret_cast<uintptr_t>(pointers[k]);
      aligned = address % (static_cast<uintptr_t>(width) * element_sizes[k]) == 0;
      for (int d = 1; d < space.ndim && aligned; ++d) aligned = space.strides[k][d] % width == 0;
    }
    if (aligned) return width;
  }
  return 1;
}

// Note [Reduction layout]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A reduction sees its input as `outputs` independent rows of `row_length` elements (the
// reduced dims, wherever they are in memory: each row's elements are found through a
// StridedSpace over the reduced dims, each row's start through one over the kept dims).
// Two layouts share that description:
//  - rows (the reduced dims innermost, as in a full sum or a sum over the last dim): one
//    block reduces `rows_per_block` rows, block.x threads splitting a row, each folding
//    its share (whole 16-byte vectors when the row is dense and aligned: Note [Vectorised
//    rows]) into four accumulators, then the row's threads combine by warp shuffles and,
//    past a warp, through shared memory;
//  - columns (a kept dim innermost and dense, as in a sum over dim 0: Note [Column
//    reductions]).
// Every thread folds its elements in a fixed order and the partial results combine in a
// fixed tree, so a result depends on the shape alone, never on timing: the reductions are
// deterministic, run to run.
struct ReductionLaunch {
  uint32_t grid = 0;
  uint32_t threads_per_row = 0;  // block.x: a power of two, 1..512
  uint32_t rows_per_block = 0;   // block.y
};

// The element count of a vector load in a reduction (Note [Vectorised rows]): 16 bytes,
// at most 8 elements.
inline constexpr int64_t kReductionVector = 8;

// Note [Split reductions]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Few long rows (a full sum) would leave most of the GPU idle with one block a row, so
// each row is split into `chunks` equal pieces reduced by separate blocks into a workspace
// of partial results (8 bytes each, the widest accumulator), which a second launch
// reduces. The split depends on the shape alone, so results stay deterministic. A chunk's
// length is a multiple of kReductionVector, so every chunk of a dense row starts on a
// vector.
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
  int64_t chunk_length = (row_length + chunks - 1) / chunks;
  chunk_length = (chunk_length + kReductionVector - 1) / kReductionVector * kReductionVector;
  chunks = (row_length + chunk_length - 1) / chunk_length;  // every chunk non-empty
  return {chunks, chunk_length, outputs * chunks * 8};
}

// Each thread of a row gets at least 32 elements (eight 16-byte vectors of float32) before
// a row takes more threads: fewer, busier threads keep more loads in flight per combine.
inline ReductionLaunch plan_reduction(int64_t outputs, int64_t row_length) {
  constexpr uint32_t kBlockThreads = 512;
  uint32_t per_row = 1;
  while (per_row < kBlockThreads && static_cast<int64_t>(per_row) * 32 < row_length) per_row *= 2;
  const uint32_t rows = kBlockThreads / per_row;
  const int64_t blocks = std::max<int64_t>(1, (outputs + rows - 1) / rows);
  return {static_cast<uint32_t>(std::min<int64_t>(blocks, kMaxGrid)), per_row, rows};
}

// Note [Vectorised rows]
// ~~~~~~~~~~~~~~~~~~~~~~
// A row whose reduced elements are dense (one dim of stride 1) is read in 16-byte vectors
// when every row and chunk starts on one: the input's address aligned to 16 bytes, every
// row start (the kept dims' strides) and the chunk length multiples of the vector's
// element count. The kernel then reads a chunk's whole vectors, and its last few elements
// one by one.
template <int N>
bool rows_are_vectorisable(const StridedSpace<N>& rows, int input_operand,
                           const StridedSpace<N>& row, int64_t chunk_length, const void* input,
                           int element_size) {
  const int64_t vector = std::min<int64_t>(kReductionVector, 16 / element_size);
  if (vector < 2 || row.ndim != 1 || row.strides[input_operand][0] != 1) return false;
  if (reinterpret_cast<uintptr_t>(input) % 16 != 0) return false;
  if (chunk_length % vector != 0 && chunk_length != row.sizes[0]) return false;
  for (int d = 0; d < rows.ndim; ++d) {
    if (rows.strides[input_operand][d] % vector != 0) return false;
  }
  return true;
}

// Note [Reductions over outer dims]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A sum over dim 0 of [8192, 8192] has rows 8192 elements apart: one row a thread group
// would read one element per row start, scattered. When the innermost kept dim is dense
// in the input and no reduced dim is, the threads of a block take neighbouring outputs
// instead (block.x, `columns` of them): at each reduced position they read neighbouring
// elements, one coalesced load. block.y threads split the reduced elements of each output
// (each folds every block.y-th one into four accumulators) and combine through shared
// memory in a fixed tree. Few outputs with long reductions split the reduced elements
// into `chunks` (grid.y), each writing a partial result, which a second column reduction
// over the [chunks, outputs] workspace combines: deterministic, as the rows layout.
struct ColumnReduction {
  uint32_t columns = 0;  // block.x: outputs per block (a power of two)
  uint32_t splits = 0;   // block.y: threads per output (a power of two)
  uint32_t grid = 0;     // grid.x: blocks of outputs (a grid-stride loop covers the rest)
  int64_t chunks = 1;    // grid.y
  int64_t chunk_length = 0;
  int64_t workspace_bytes = 0;  // outputs * chunks partial results of 8 bytes; 0: none
};

// Whether a reduction takes the column layout: its innermost kept dim is dense in the
// input (operand `input_operand` of rows) and at least 32 wide, and no reduced dim is
// dense.
template <int N>
bool is_column_reduction(const StridedSpace<N>& rows, const StridedSpace<N>& row,
                         int input_operand) {
  if (rows.ndim < 1 || row.ndim < 1) return false;
  if (rows.strides[input_operand][0] != 1 || rows.sizes[0] < 32) return false;
  for (int d = 0; d < row.ndim; ++d) {
    const int64_t stride = row.strides[input_operand][d];
    if (stride == 1 || stride == -1 || stride == 0) return false;
  }
  return true;
}

inline ColumnReduction plan_column_reduction(int64_t outputs, int64_t length) {
  constexpr uint32_t kBlockThreads = 512;
  constexpr int64_t kTargetBlocks = 1024;
  constexpr int64_t kMinChunk = 256;  // reduced positions worth a block of their own
  ColumnReduction p;
  p.columns = 32;
  p.splits = 1;
  while (p.splits < kBlockThreads / p.columns && static_cast<int64_t>(p.splits) * 16 < length) {
    p.splits *= 2;
  }
  const int64_t blocks = (outputs + p.columns - 1) / p.columns;
  p.grid = static_cast<uint32_t>(std::min<int64_t>(std::max<int64_t>(blocks, 1), kMaxGrid));
  p.chunk_length = length;
  if (blocks < kTargetBlocks / 4 && length >= 2 * kMinChunk) {
    const int64_t chunks = std::min(length / kMinChunk, (kTargetBlocks + blocks - 1) / blocks);
    if (chunks >= 2) {
      p.chunk_length = (length + chunks - 1) / chunks;
      p.chunks = (length + p.chunk_length - 1) / p.chunk_length;  // every chunk non-empty
      p.workspace_bytes = outputs * p.chunks * 8;
    }
  }
  return p;
}

// The workspace a reduction of `outputs` rows of `length` elements needs, whichever layout
// it takes.
template <int N>
int64_t reduction_workspace_bytes(const StridedSpace<N>& rows, const StridedSpace<N>& row,
                                  int input_operand) {
  const int64_t outputs = rows.numel(), length = row.numel();
  if (is_column_reduction(rows, row, input_operand)) {
    return plan_column_reduction(outputs, length).workspace_bytes;
  }
  return plan_reduction_split(outputs, length).workspace_bytes;
}

}  // namespace loom::gpu
