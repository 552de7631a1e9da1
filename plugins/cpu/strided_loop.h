// Element-wise iteration over strided, broadcast tensors for the CPU kernels: the
// coalesced N-d iteration plan of a loop (StridedLoop) and for_each_run, which walks
// any range of the plan's linear indices as runs of its innermost dim, so parallel
// chunks can start and end anywhere; for_each_element, a serial walk in row-major
// order. Plus shape and dtype helpers.
//
// Nothing here is a template over element types or loop bodies: the plan and the
// odometer are compiled once (strided_loop.cc), and a kernel only instantiates the
// inner run for its types (elementwise_loop.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "function_ref.h"
#include "loom/sdk/plugin.hpp"

namespace loom::cpu {

// The most operands a StridedLoop takes (out plus inputs).
inline constexpr size_t kMaxLoopOperands = 8;

// How to visit every element of a shape for several operands: dims of size 1 dropped,
// the rest ordered by operand 0's strides (largest outermost), adjacent dims merged
// where every operand allows. The plan's linear index i is the i-th element visited.
struct StridedLoop {
  size_t num_operands = 0;
  std::vector<int64_t> sizes;    // outermost first; at least one dim
  std::vector<int64_t> strides;  // element strides, strides[d * num_operands + k]
  int64_t item_size[kMaxLoopOperands] = {};
  int64_t numel = 0;

  int64_t inner_size() const { return sizes.back(); }
  // The element strides of the innermost dim, one per operand.
  const int64_t* inner_strides() const {
    return strides.data() + (sizes.size() - 1) * num_operands;
  }
  // Whether operand 0 visits an element more than once (a stride 0 on a dim of size >
  // 1): then writes through it must not run in parallel.
  bool first_operand_repeats() const;
  // Whether the plan is rows of at most `max_period` elements that every operand reads
  // contiguously (stride 1, or 0: one value), each operand either stepping a whole row
  // from one row to the next (contiguous across rows; operand 0 always) or repeating
  // the same row (stride 0 across rows): Note [Periodic runs] in elementwise_loop.h.
  bool periodic_rows(int64_t max_period) const;
};

// The plan over `shape` for operands whose element strides (aligned with shape, 0 on
// broadcast dims) are element_strides[k] and element sizes item_sizes[k].
StridedLoop plan_strided_loop(std::span<const int64_t> shape,
                              std::span<const int64_t* const> element_strides,
                              std::span<const int64_t> item_sizes);

// Calls run(ptrs, n) for each run of the innermost dim within the linear indices
// [begin, end) of `loop`, in order; ptrs[k] points at operand k's first element of the
// run (base[k] is operand k's element at index 0 of every dim) and the run's elements
// are loop.inner_strides()[k] elements apart.
using RunFn = FunctionRef<void(char* const* ptrs, int64_t n)>;
void for_each_run(const StridedLoop& loop, char* const* base, int64_t begin, int64_t end,
                  RunFn run);

// Calls body(ptrs) for every element of `shape` in row-major order, on the calling thread,
// where ptrs[i] points at operand i's element. Operands are broadcast to `shape` (stride
// 0 on stretched dims). For loops that need that order (gathers into a buffer); loops
// that do not should use map_elements / map_strided (elementwise_loop.h), which run in
// parallel.
template <size_t N, typename Body>
void for_each_element(std::span<const int64_t> shape, const sdk::Tensor* const (&operands)[N],
                      Body&& body) {
  const size_t ndim = shape.size();
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel == 0) return;
  // byte strides per operand, aligned to the trailing dims of `shape`
  std::vector<int64_t> strides(N * ndim, 0);
  char* base[N];
  for (size_t i = 0; i < N; ++i) {
    const sdk::Tensor& t = *operands[i];
    int64_t item = t.view().dl.dtype.bits / 8;
    size_t lead = ndim - static_cast<size_t>(t.dim());
    for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d) {
      strides[i * ndim + lead + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d] * item;
    }
    base[i] = t.template data<char>();
  }
  std::vector<int64_t> index(ndim, 0);
  char* ptrs[N];
  for (int64_t n = 0; n < numel; ++n) {
    for (size_t i = 0; i < N; ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < ndim; ++d) off += index[d] * strides[i * ndim + d];
      ptrs[i] = base[i] + off;
    }
    body(ptrs);
    for (size_t d = ndim; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// t's element strides broadcast to `shape` (t's dims aligned with the trailing dims of
// shape; 0 on size-1 and missing dims).
std::vector<int64_t> broadcast_strides(const sdk::Tensor& t, size_t ndim);

// Broadcast shape of several shapes; throws "[op] shapes [..] and [..] cannot be broadcast".
std::vector<int64_t> broadcast_shape(std::span<const std::span<const int64_t>> shapes,
                                     const char* op);

// "[2, 3]"
std::string shape_string(std::span<const int64_t> shape);
const char* dtype_name(LoomDType t);

}  // namespace loom::cpu
