// Reductions over any set of dims (Note [Reduction layout]): sum and prod (floating
// inputs accumulate in float, or double for float64; integers in wrapping 64-bit), max
// and min (NaN propagates), any and all. Deterministic: a fixed split of each row between
// a block's threads and a fixed combining tree.
#include <cstdint>
#include <type_traits>

#include "device_types.h"
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
        return a * b;
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

template <typename Out, typename In, typename Acc>
__global__ void reduce_kernel(int64_t outputs, int64_t row_length, StridedSpace<2> rows,
                              StridedSpace<2> row, Out* out, const In* in, Combine<Acc> combine) {
  extern __shared__ unsigned char shared_bytes[];
  Acc* partial = reinterpret_cast<Acc*>(shared_bytes);
  const bool extremum = combine.op == ReduceOp::Max || combine.op == ReduceOp::Min;
  for (int64_t r0 = static_cast<int64_t>(blockIdx.x) * blockDim.y; r0 < outputs;
       r0 += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const int64_t r = r0 + threadIdx.y;
    Acc acc = combine.identity();
    int64_t start[2] = {0, 0};
    if (r < outputs) {
      rows.offsets(r, start);
      const int64_t first = threadIdx.x < row_length ? threadIdx.x : 0;
      if (extremum && row_length > 0) {
        int64_t o[2];
        row.offsets(first, o);
        acc = load_as<Acc>(in[start[1] + o[1]]);
      }
      for (int64_t j = threadIdx.x; j < row_length; j += blockDim.x) {
        int64_t o[2];
        row.offsets(j, o);
        acc = combine(acc, load_as<Acc>(in[start[1] + o[1]]));
      }
    }
    const int slot = threadIdx.y * blockDim.x + threadIdx.x;
    partial[slot] = acc;
    __syncthreads();
    for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) partial[slot] = combine(partial[slot], partial[slot + width]);
      __syncthreads();
    }
    if (threadIdx.x == 0 && r < outputs) {
      if constexpr (std::is_same_v<Acc, uint64_t>) {
        out[start[0]] = convert<Out>(static_cast<int64_t>(partial[slot]));
      } else {
        out[start[0]] = convert<Out>(partial[slot]);
      }
    }
    __syncthreads();
  }
}

template <typename Out, typename In, typename Acc>
const char* run(ReduceOp op, const StridedSpace<2>& rows, const StridedSpace<2>& row, void* out,
                const void* in, gpuStream_t stream) {
  const int64_t outputs = rows.numel();
  if (outputs == 0) return nullptr;
  const int64_t length = row.numel();
  const ReductionLaunch l = plan_reduction(outputs, length);
  const dim3 block(l.threads_per_row, l.rows_per_block);
  const size_t shared = sizeof(Acc) * l.threads_per_row * l.rows_per_block;
  reduce_kernel<Out, In, Acc>
      <<<l.grid, block, shared, stream>>>(outputs, length, rows, row, static_cast<Out*>(out),
                                          static_cast<const In*>(in), Combine<Acc>{op});
  const gpuError_t err = gpuGetLastError();
  return err == gpuSuccess ? nullptr : gpuGetErrorString(err);
}

}  // namespace

const char* launch_reduce(ReduceOp op, int32_t in_dtype, int32_t out_dtype,
                          const StridedSpace<2>& rows, const StridedSpace<2>& row, void* out,
                          const void* in, gpuStream_t stream) {
  const char* result = "the dtype is not supported by this kernel";
  // Out is In, or bool for any / all, or int64 for sums and products of integers (the
  // host casts other combinations first): few instantiations.
  visit_dtype(in_dtype, [&](auto in_tag) {
    using In = decltype(in_tag);
    if (op == ReduceOp::Any || op == ReduceOp::All) {
      if (out_dtype == LOOM_DTYPE_BOOL)
        result = run<bool, In, bool>(op, rows, row, out, in, stream);
    } else if (op == ReduceOp::Max || op == ReduceOp::Min) {
      if (out_dtype == in_dtype) result = run<In, In, OpMath<In>>(op, rows, row, out, in, stream);
    } else if constexpr (!is_floating_v<In>) {
      if (out_dtype == LOOM_DTYPE_INT64) {
        result = run<int64_t, In, uint64_t>(op, rows, row, out, in, stream);
      } else if (out_dtype == in_dtype) {
        result = run<In, In, uint64_t>(op, rows, row, out, in, stream);
      }
    } else if (out_dtype == in_dtype) {
      using Acc = std::conditional_t<std::is_same_v<In, double>, double, float>;
      result = run<In, In, Acc>(op, rows, row, out, in, stream);
    }
  });
  return result;
}

}  // namespace loom::gpu
