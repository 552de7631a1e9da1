// Reductions over any set of dims (Note [Reduction layout]): sum and prod (floating
// inputs accumulate in float, or double for float64; integers in wrapping 64-bit), max
// and min (NaN propagates), any and all; and max.dim / min.dim's value and index. Rows
// read in 16-byte vectors where dense and combine by warp shuffles; sums over outer dims
// read along the kept dim (Note [Reductions over outer dims]). Deterministic: a fixed split of
// each row between threads and blocks and a fixed combining tree.
#include <cstdint>
#include <type_traits>

#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

template <typename Acc>
struct Combine {
  ReduceOp op;
  __device__ __forceinline__ Acc identity() const {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Any:
        return Acc(0);
      case ReduceOp::Prod:
      case ReduceOp::All:
        return Acc(1);
      default:
        return Acc(0);  // Max / Min start from the row's first element
    }
  }
  __device__ __forceinline__ Acc operator()(Acc a, Acc b) const {
    switch (op) {
      case ReduceOp::Sum:
        return a + b;
      case ReduceOp::Prod:
        if constexpr (std::is_same_v<Acc, bool>) {
          return a && b;
        } else {
          return a * b;
        }
      case ReduceOp::Max:
        return a != a || a > b ? a : b;
      case ReduceOp::Min:
        return a != a || a < b ? a : b;
      case ReduceOp::Any:
        return Acc((a != Acc(0)) || (b != Acc(0)));
      default:
        return Acc((a != Acc(0)) && (b != Acc(0)));  // All
    }
  }
};

template <typename Acc, typename In>
__device__ __forceinline__ Acc load_as(In v) {
  if constexpr (std::is_same_v<Acc, uint64_t>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));  // wraps like int64
  } else if constexpr (std::is_same_v<Acc, bool>) {
    return convert<bool>(v);
  } else {
    return convert<Acc>(v);
  }
}

// The offset of element j of a row: one multiply for the common one-dim row (the general
// path divides by each dim's size).
__device__ __forceinline__ int64_t row_offset(const StridedSpace<2>& row, int64_t j) {
  if (row.ndim <= 1) return row.ndim == 0 ? 0 : j * row.strides[1][0];
  int64_t o[2];
  row.offsets(j, o);
  return o[1];
}

// v from the lane `delta` above within segments of `width` lanes (a power of two up to 32).
template <typename T>
__device__ __forceinline__ T shuffle_down(T v, unsigned delta, int width) {
  if constexpr (std::is_same_v<T, bool>) {
    return shuffle_down(static_cast<int>(v), delta, width) != 0;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return static_cast<uint64_t>(
        shuffle_down(static_cast<unsigned long long>(v), delta, width));  // NOLINT(runtime/int)
  } else {
#if defined(__HIPCC__)
    return __shfl_down(v, delta, width);
#else
    return __shfl_down_sync(0xffffffffu, v, delta, width);
#endif
  }
}

// Combines each segment of `width` lanes into its first lane, in a fixed order. Every lane
// of the warp takes part.
template <typename Acc>
__device__ __forceinline__ Acc warp_combine(Acc v, int width, const Combine<Acc>& combine) {
  for (int offset = width / 2; offset > 0; offset /= 2) {
    v = combine(v, shuffle_down(v, offset, width));
  }
  return v;
}

// Folds row elements j = first, first + step, ... below end into acc through four
// accumulators (four loads in flight a thread), combined in a fixed order.
template <typename In, typename Acc>
__device__ __forceinline__ Acc fold_every(const In* base, const StridedSpace<2>& row, int64_t first,
                                          int64_t end, int64_t step, Acc acc,
                                          const Combine<Acc>& combine) {
  Acc acc1 = acc, acc2 = acc, acc3 = acc;
  int64_t j = first;
  for (; j + 3 * step < end; j += 4 * step) {
    acc = combine(acc, load_as<Acc>(base[row_offset(row, j)]));
    acc1 = combine(acc1, load_as<Acc>(base[row_offset(row, j + step)]));
    acc2 = combine(acc2, load_as<Acc>(base[row_offset(row, j + 2 * step)]));
    acc3 = combine(acc3, load_as<Acc>(base[row_offset(row, j + 3 * step)]));
  }
  for (; j < end; j += step) acc = combine(acc, load_as<Acc>(base[row_offset(row, j)]));
  return combine(combine(acc, acc1), combine(acc2, acc3));
}

// Folds elements [begin, end) of a row, every blockDim.x-th from begin + threadIdx.x (or,
// with `vectorised`, every blockDim.x-th 16-byte vector: Note [Vectorised rows]), into
// four accumulators combined in a fixed order.
template <typename In, typename Acc>
__device__ __forceinline__ Acc fold_row(const In* base, const StridedSpace<2>& row, int64_t begin,
                                        int64_t end, bool vectorised, Acc acc,
                                        const Combine<Acc>& combine) {
  const int64_t step = blockDim.x;
  if (!vectorised) return fold_every(base, row, begin + threadIdx.x, end, step, acc, combine);
  constexpr int V = 16 / sizeof(In) > kReductionVector ? kReductionVector : 16 / sizeof(In);
  using Vec = Vector<In, V>;
  const Vec* vectors = reinterpret_cast<const Vec*>(base + begin);
  const int64_t count = (end - begin) / V;
  Acc acc1 = acc, acc2 = acc, acc3 = acc;
  int64_t q = threadIdx.x;
  for (; q + 3 * step < count; q += 4 * step) {
    const Vec a = vectors[q], b = vectors[q + step], c = vectors[q + 2 * step],
              d = vectors[q + 3 * step];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      acc = combine(acc, load_as<Acc>(a.v[e]));
      acc1 = combine(acc1, load_as<Acc>(b.v[e]));
      acc2 = combine(acc2, load_as<Acc>(c.v[e]));
      acc3 = combine(acc3, load_as<Acc>(d.v[e]));
    }
  }
  for (; q < count; q += step) {
    const Vec a = vectors[q];
#pragma unroll
    for (int e = 0; e < V; ++e) acc = combine(acc, load_as<Acc>(a.v[e]));
  }
  for (int64_t j = begin + count * V + threadIdx.x; j < end; j += step) {  // the last few
    acc = combine(acc, load_as<Acc>(base[j]));
  }
  return combine(combine(acc, acc1), combine(acc2, acc3));
}

template <typename Out, typename Acc>
__device__ __forceinline__ Out to_output(Acc v) {
  if constexpr (std::is_same_v<Acc, uint64_t>) {
    return convert<Out>(static_cast<int64_t>(v));
  } else {
    return convert<Out>(v);
  }
}

// The rows layout (Note [Reduction layout]): `outputs` rows, each in `chunks` pieces of
// `chunk_length` elements (Note [Split reductions]): piece v = (row v / chunks, chunk v %
// chunks). With one chunk a row the result goes to out through the rows space; with
// several, to partial[v]. shared: one Acc per warp of the block.
template <typename Out, typename In, typename Acc>
__global__ void reduce_kernel(int64_t outputs, int64_t row_length, int64_t chunks,
                              int64_t chunk_length, StridedSpace<2> rows, StridedSpace<2> row,
                              bool vectorised, Out* out, Acc* partial, const In* in,
                              Combine<Acc> combine) {
  LOOM_GPU_DYNAMIC_SHARED(unsigned char, shared_bytes);
  Acc* scratch = reinterpret_cast<Acc*>(shared_bytes);
  const bool extremum = combine.op == ReduceOp::Max || combine.op == ReduceOp::Min;
  const int64_t pieces = outputs * chunks;
  const int width = blockDim.x < 32 ? static_cast<int>(blockDim.x) : 32;
  const int warps_per_row = static_cast<int>(blockDim.x) / width;  // 1 below a warp
  for (int64_t v0 = static_cast<int64_t>(blockIdx.x) * blockDim.y; v0 < pieces;
       v0 += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const int64_t v = v0 + threadIdx.y;
    Acc acc = combine.identity();
    int64_t start[2] = {0, 0};
    if (v < pieces) {
      rows.offsets(v / chunks, start);
      const int64_t begin = (v % chunks) * chunk_length;
      const int64_t end = begin + chunk_length < row_length ? begin + chunk_length : row_length;
      const In* base = in + start[1];
      if (extremum && end > begin) {  // max and min start from an element of the piece
        const int64_t first = begin + threadIdx.x < end ? begin + threadIdx.x : begin;
        acc = load_as<Acc>(base[row_offset(row, first)]);
      }
      acc = fold_row(base, row, begin, end, vectorised, acc, combine);
    }
    acc = warp_combine(acc, width, combine);
    if (warps_per_row > 1) {  // the warps of a row, through shared memory
      const int warp = static_cast<int>(threadIdx.x) / 32;
      if (threadIdx.x % 32 == 0) scratch[threadIdx.y * warps_per_row + warp] = acc;
      __syncthreads();
      if (threadIdx.x < 32) {
        acc = scratch[threadIdx.y * warps_per_row +
                      (static_cast<int>(threadIdx.x) < warps_per_row ? threadIdx.x : 0)];
        acc = warp_combine(acc, warps_per_row, combine);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0 && v < pieces) {
      if (chunks > 1) {
        partial[v] = acc;
      } else {
        out[start[0]] = to_output<Out>(acc);
      }
    }
  }
}

// The columns layout (Note [Reductions over outer dims]): block.x threads take neighbouring
// outputs, block.y threads split chunk blockIdx.y of their reduced elements. With several
// chunks the results go to partial[chunk * outputs + output].
template <typename Out, typename In, typename Acc>
__global__ void reduce_columns_kernel(int64_t outputs, int64_t length, int64_t chunk_length,
                                      StridedSpace<2> rows, StridedSpace<2> row, Out* out,
                                      Acc* partial, const In* in, Combine<Acc> combine) {
  LOOM_GPU_DYNAMIC_SHARED(unsigned char, shared_bytes);
  Acc* scratch = reinterpret_cast<Acc*>(shared_bytes);
  const bool extremum = combine.op == ReduceOp::Max || combine.op == ReduceOp::Min;
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * chunk_length;
  const int64_t end = begin + chunk_length < length ? begin + chunk_length : length;
  const int slot = threadIdx.y * blockDim.x + threadIdx.x;
  for (int64_t o0 = static_cast<int64_t>(blockIdx.x) * blockDim.x; o0 < outputs;
       o0 += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = o0 + threadIdx.x;
    Acc acc = combine.identity();
    int64_t start[2] = {0, 0};
    if (o < outputs) {
      rows.offsets(o, start);
      const In* base = in + start[1];
      if (extremum && end > begin) {
        const int64_t first = begin + threadIdx.y < end ? begin + threadIdx.y : begin;
        acc = load_as<Acc>(base[row_offset(row, first)]);
      }
      acc = fold_every(base, row, begin + threadIdx.y, end, blockDim.y, acc, combine);
    }
    scratch[slot] = acc;
    __syncthreads();
    for (unsigned half = blockDim.y / 2; half > 0; half /= 2) {
      if (threadIdx.y < half) {
        scratch[slot] = combine(scratch[slot], scratch[slot + half * blockDim.x]);
      }
      __syncthreads();
    }
    if (threadIdx.y == 0 && o < outputs) {
      if (gridDim.y > 1) {
        partial[chunk * outputs + o] = scratch[slot];
      } else {
        out[start[0]] = to_output<Out>(scratch[slot]);
      }
    }
    __syncthreads();
  }
}

template <typename Out, typename In, typename Acc>
const char* queue(ReduceOp op, int64_t outputs, int64_t length, int64_t chunks,
                  int64_t chunk_length, const StridedSpace<2>& rows, const StridedSpace<2>& row,
                  Out* out, Acc* partial, const In* in, gpuStream_t stream) {
  const ReductionLaunch l = plan_reduction(outputs * chunks, chunk_length);
  const dim3 block(l.threads_per_row, l.rows_per_block);
  const uint32_t warps_per_row = l.threads_per_row > 32 ? l.threads_per_row / 32 : 1;
  const size_t shared = sizeof(Acc) * warps_per_row * l.rows_per_block;
  const bool vectorised =
      rows_are_vectorisable(rows, 1, row, chunk_length, in, static_cast<int>(sizeof(In)));
  launch_kernel(reduce_kernel<Out, In, Acc>, l.grid, block, shared, stream, outputs, length, chunks,
                chunk_length, rows, row, vectorised, out, partial, in, Combine<Acc>{op});
  return last_launch_error();
}

// Row r's partial results: `chunks` of them, `chunk_stride` apart from partial + r.
void partial_spaces(const StridedSpace<2>& rows, int64_t chunks, int64_t chunk_stride,
                    int64_t row_stride, StridedSpace<2>* partial_rows,
                    StridedSpace<2>* partial_row) {
  *partial_rows = rows;
  int64_t stride = row_stride;
  for (int d = 0; d < rows.ndim; ++d) {
    partial_rows->strides[1][d] = stride;
    stride *= rows.sizes[d];
  }
  const int64_t chunk_sizes[1] = {chunks}, steps[1] = {chunk_stride};
  const int64_t* strides[2] = {steps, steps};
  make_strided_space<2>(chunk_sizes, 1, strides, partial_row);
}

template <typename Out, typename In, typename Acc>
const char* queue_columns(ReduceOp op, const ColumnReduction& p, int64_t outputs, int64_t length,
                          const StridedSpace<2>& rows, const StridedSpace<2>& row, Out* out,
                          Acc* partial, const In* in, gpuStream_t stream) {
  const dim3 grid(p.grid, static_cast<uint32_t>(p.chunks));
  const dim3 block(p.columns, p.splits);
  const size_t shared = sizeof(Acc) * p.columns * p.splits;
  launch_kernel(reduce_columns_kernel<Out, In, Acc>, grid, block, shared, stream, outputs, length,
                p.chunk_length, rows, row, out, partial, in, Combine<Acc>{op});
  return last_launch_error();
}

template <typename Out, typename In, typename Acc>
const char* run_columns(ReduceOp op, const StridedSpace<2>& rows, const StridedSpace<2>& row,
                        void* out, const void* in, void* workspace, gpuStream_t stream) {
  const int64_t outputs = rows.numel(), length = row.numel();
  const ColumnReduction p = plan_column_reduction(outputs, length);
  if (p.chunks == 1) {
    return queue_columns<Out, In, Acc>(op, p, outputs, length, rows, row, static_cast<Out*>(out),
                                       nullptr, static_cast<const In*>(in), stream);
  }
  if (workspace == nullptr) return "a split reduction was launched without its workspace";
  auto* partial = static_cast<Acc*>(workspace);
  if (const char* e =
          queue_columns<Out, In, Acc>(op, p, outputs, length, rows, row, static_cast<Out*>(out),
                                      partial, static_cast<const In*>(in), stream)) {
    return e;
  }
  // Second pass: output o's partials are partial[c * outputs + o], a [chunks, outputs]
  // column reduction of its own (one chunk: it fits the plan's block).
  StridedSpace<2> partial_rows, partial_row;
  partial_spaces(rows, p.chunks, outputs, 1, &partial_rows, &partial_row);
  ColumnReduction second = plan_column_reduction(outputs, p.chunks);
  second.chunks = 1;
  second.chunk_length = p.chunks;
  second.workspace_bytes = 0;
  return queue_columns<Out, Acc, Acc>(op, second, outputs, p.chunks, partial_rows, partial_row,
                                      static_cast<Out*>(out), nullptr, partial, stream);
}

template <typename Out, typename In, typename Acc>
const char* run(ReduceOp op, const StridedSpace<2>& rows, const StridedSpace<2>& row, void* out,
                const void* in, void* workspace, gpuStream_t stream) {
  const int64_t outputs = rows.numel();
  if (outputs == 0) return nullptr;
  if (is_column_reduction(rows, row, 1)) {
    return run_columns<Out, In, Acc>(op, rows, row, out, in, workspace, stream);
  }
  const int64_t length = row.numel();
  const ReductionSplit split = plan_reduction_split(outputs, length);
  if (split.chunks == 1) {
    return queue<Out, In, Acc>(op, outputs, length, 1, length, rows, row, static_cast<Out*>(out),
                               nullptr, static_cast<const In*>(in), stream);
  }
  if (workspace == nullptr) return "a split reduction was launched without its workspace";
  auto* partial = static_cast<Acc*>(workspace);
  if (const char* e = queue<Out, In, Acc>(op, outputs, length, split.chunks, split.chunk_length,
                                          rows, row, static_cast<Out*>(out), partial,
                                          static_cast<const In*>(in), stream)) {
    return e;
  }
  // Second pass: row r's partials are the contiguous chunks at r * chunks.
  StridedSpace<2> partial_rows, partial_row;
  partial_spaces(rows, split.chunks, 1, split.chunks, &partial_rows, &partial_row);
  return queue<Out, Acc, Acc>(op, outputs, split.chunks, 1, split.chunks, partial_rows, partial_row,
                              static_cast<Out*>(out), nullptr, partial, stream);
}

// max.dim / min.dim: the extremum of each row and the index of its first occurrence
// (a NaN wins, the first NaN). (value, index) pairs with index -1 for none; `better`
// decides the pair a combination keeps, so the block's fixed tree gives the same index
// as a scan from the row's start.
template <typename A, bool IsMax>
__device__ __forceinline__ bool better(A v, int64_t i, A best, int64_t at) {
  if (i < 0) return false;
  if (at < 0) return true;
  const bool v_nan = v != v, best_nan = best != best;
  if (v_nan || best_nan) return v_nan && best_nan ? i < at : v_nan;
  if (v == best) return i < at;
  return IsMax ? v > best : v < best;
}

// rows: operand 0 the values' offset, 1 the indices', 2 the input's row start.
template <typename T, bool IsMax>
__global__ void arg_reduce_kernel(int64_t outputs, int64_t length, int64_t row_stride,
                                  StridedSpace<3> rows, T* values, int64_t* indices, const T* in) {
  using A = OpMath<T>;
  LOOM_GPU_DYNAMIC_SHARED(unsigned char, shared_bytes);
  const int threads = blockDim.x * blockDim.y;
  int64_t* scratch_at = reinterpret_cast<int64_t*>(shared_bytes);
  A* scratch_best = reinterpret_cast<A*>(scratch_at + threads);
  for (int64_t v0 = static_cast<int64_t>(blockIdx.x) * blockDim.y; v0 < outputs;
       v0 += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const int64_t v = v0 + threadIdx.y;
    A best = A(0);
    int64_t at = -1;
    int64_t o[3] = {0, 0, 0};
    if (v < outputs) {
      rows.offsets(v, o);
      for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
        const A x = convert<A>(in[o[2] + j * row_stride]);
        if (better<A, IsMax>(x, j, best, at)) {
          best = x;
          at = j;
        }
      }
    }
    const int slot = threadIdx.y * blockDim.x + threadIdx.x;
    scratch_best[slot] = best;
    scratch_at[slot] = at;
    __syncthreads();
    for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
      if (threadIdx.x < width &&
          better<A, IsMax>(scratch_best[slot + width], scratch_at[slot + width], scratch_best[slot],
                           scratch_at[slot])) {
        scratch_best[slot] = scratch_best[slot + width];
        scratch_at[slot] = scratch_at[slot + width];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0 && v < outputs) {
      values[o[0]] = convert<T>(scratch_best[slot]);
      indices[o[1]] = scratch_at[slot];
    }
    __syncthreads();
  }
}

}  // namespace

const char* launch_reduce(ReduceOp op, int32_t in_dtype, int32_t out_dtype,
                          const StridedSpace<2>& rows, const StridedSpace<2>& row, void* out,
                          const void* in, void* workspace, gpuStream_t stream) {
  const char* result = "the dtype is not supported by this kernel";
  // Out is In, or bool for any / all, or int64 for sums and products of integers (the
  // host casts other combinations first): few instantiations.
  visit_dtype(in_dtype, [&](auto in_tag) {
    using In = decltype(in_tag);
    if (op == ReduceOp::Any || op == ReduceOp::All) {
      if (out_dtype == LOOM_DTYPE_BOOL)
        result = run<bool, In, bool>(op, rows, row, out, in, workspace, stream);
    } else if (op == ReduceOp::Max || op == ReduceOp::Min) {
      if (out_dtype == in_dtype)
        result = run<In, In, OpMath<In>>(op, rows, row, out, in, workspace, stream);
    } else if constexpr (!is_floating_v<In>) {
      if (out_dtype == LOOM_DTYPE_INT64) {
        result = run<int64_t, In, uint64_t>(op, rows, row, out, in, workspace, stream);
      } else if (out_dtype == in_dtype) {
        result = run<In, In, uint64_t>(op, rows, row, out, in, workspace, stream);
      }
    } else if (out_dtype == in_dtype) {
      using Acc = std::conditional_t<std::is_same_v<In, double>, double, float>;
      result = run<In, In, Acc>(op, rows, row, out, in, workspace, stream);
    }
  });
  return result;
}

const char* launch_arg_reduce(bool is_max, int32_t dtype, int64_t length, int64_t row_stride,
                              const StridedSpace<3>& rows, void* values, int64_t* indices,
                              const void* in, gpuStream_t stream) {
  const int64_t outputs = rows.numel();
  if (outputs == 0) return nullptr;
  if (length == 0) return "cannot reduce over an empty dim: the reduction has no identity";
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const ReductionLaunch l = plan_reduction(outputs, length);
    const dim3 block(l.threads_per_row, l.rows_per_block);
    const size_t shared =
        (sizeof(int64_t) + sizeof(OpMath<T>)) * l.threads_per_row * l.rows_per_block;
    auto kernel = is_max ? arg_reduce_kernel<T, true> : arg_reduce_kernel<T, false>;
    launch_kernel(kernel, l.grid, block, shared, stream, outputs, length, row_stride, rows,
                  static_cast<T*>(values), indices, static_cast<const T*>(in));
    result = last_launch_error();
  });
  return result;
}

}  // namespace loom::gpu
