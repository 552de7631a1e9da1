// Iteration for the CPU reductions and scans: splits an input's dims into the kept and
// the reduced ones, walks every output element's reduced elements through strides, and
// converts accumulators to any output dtype.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "loom/sdk/plugin.hpp"
#include "parallel.h"
#include "scalar_types.h"

namespace loom::cpu {

// Which dims of `self` a reduction combines and how to walk them (element strides).
struct ReductionPlan {
  std::vector<int64_t> kept_sizes, kept_strides;
  std::vector<int64_t> reduced_sizes, reduced_strides;
  int64_t out_numel = 1;
  int64_t reduced_numel = 1;
};

// The result sizes of a reduction over `dims` (empty: every dim), for a kernel that
// allocates its outputs; out-of-range and repeated dims raise errors naming `op`.
std::vector<int64_t> reduced_sizes(const sdk::Tensor& self, std::span<const int64_t> dims,
                                   bool keepdim, const char* op);

// `dims` empty means every dim. Dims were checked by the op's shape rule; they are
// wrapped again here because a kernel may be called directly with negative dims.
ReductionPlan plan_reduction(const sdk::Tensor& self, std::span<const int64_t> dims);

// Calls fn(out_index, visit) for the output elements [o_begin, o_end) in row-major
// order of the kept dims; visit(f) calls f(value) for each of that output's reduced
// elements.
template <typename T, typename Fn>
void for_each_reduction(const ReductionPlan& plan, const T* base, int64_t o_begin, int64_t o_end,
                        Fn&& fn) {
  if (o_begin >= o_end) return;
  const size_t kept = plan.kept_sizes.size();
  const size_t reduced = plan.reduced_sizes.size();
  std::vector<int64_t> out_index(kept, 0);
  for (int64_t rest = o_begin, d = static_cast<int64_t>(kept); d-- > 0;) {
    out_index[d] = rest % plan.kept_sizes[d];
    rest /= plan.kept_sizes[d];
  }
  std::vector<int64_t> red_index(reduced, 0);
  const int64_t inner_size = reduced ? plan.reduced_sizes[reduced - 1] : 1;
  const int64_t inner_stride = reduced ? plan.reduced_strides[reduced - 1] : 0;
  const int64_t outer_count = inner_size ? plan.reduced_numel / inner_size : 0;
  for (int64_t o = o_begin; o < o_end; ++o) {
    int64_t offset = 0;
    for (size_t d = 0; d < kept; ++d) offset += out_index[d] * plan.kept_strides[d];
    const T* first = base + offset;
    auto visit = [&](auto&& f) {
      std::fill(red_index.begin(), red_index.end(), 0);
      for (int64_t r = 0; r < outer_count; ++r) {
        int64_t roff = 0;
        for (size_t d = 0; d + 1 < reduced; ++d) roff += red_index[d] * plan.reduced_strides[d];
        const T* p = first + roff;
        for (int64_t i = 0; i < inner_size; ++i) f(p[i * inner_stride]);
        for (size_t d = reduced > 1 ? reduced - 1 : 0; d-- > 0;) {
          if (++red_index[d] < plan.reduced_sizes[d]) break;
          red_index[d] = 0;
        }
      }
    };
    fn(o, visit);
    for (size_t d = kept; d-- > 0;) {
      if (++out_index[d] < plan.kept_sizes[d]) break;
      out_index[d] = 0;
    }
  }
}

// Every output element, in order, on the calling thread.
template <typename T, typename Fn>
void for_each_reduction(const ReductionPlan& plan, const T* base, Fn&& fn) {
  for_each_reduction(plan, base, 0, plan.out_numel, fn);
}

// Every output element, split over the thread pool in runs of whole outputs (each
// output's elements are visited by one thread, in order, so results do not depend on
// the thread count). make_fn() is called once per run, on the thread that runs it, and
// returns the fn(out_index, visit) for it: per-run scratch buffers live in its captures.
template <typename T, typename MakeFn>
void parallel_for_each_reduction(const ReductionPlan& plan, const T* base, MakeFn&& make_fn) {
  parallel_for(0, plan.out_numel, grain_for(plan.reduced_numel), [&](int64_t begin, int64_t end) {
    for_each_reduction(plan, base, begin, end, make_fn());
  });
}

// Calls f_row(p, count, stride) for the runs of the reduced elements [begin, end) of
// output element `o` that lie on one row of the innermost reduced dim, in the order
// for_each_reduction visits them (row-major over the reduced dims): the run's elements
// are p[0], p[stride], ..., p[(count - 1) * stride]. Lets a reduction cut one output's
// elements into chunks (Note [Deterministic sum]) and fold each run in a tight loop.
template <typename T, typename F>
void for_each_reduced_row_in_range(const ReductionPlan& plan, const T* base, int64_t o,
                                   int64_t begin, int64_t end, F&& f_row) {
  if (begin >= end) return;
  const size_t kept = plan.kept_sizes.size();
  const size_t reduced = plan.reduced_sizes.size();
  int64_t offset = 0;
  for (size_t d = kept; d-- > 0;) {
    offset += o % plan.kept_sizes[d] * plan.kept_strides[d];
    o /= plan.kept_sizes[d];
  }
  if (reduced == 0) {  // a single element per output
    f_row(base + offset, int64_t{1}, int64_t{1});
    return;
  }
  const int64_t inner_size = plan.reduced_sizes[reduced - 1];
  const int64_t inner_stride = plan.reduced_strides[reduced - 1];
  std::vector<int64_t> index(reduced - 1, 0);  // the outer reduced dims of `begin`
  int64_t rest = begin / inner_size;
  for (size_t d = reduced - 1; d-- > 0;) {
    index[d] = rest % plan.reduced_sizes[d];
    rest /= plan.reduced_sizes[d];
  }
  int64_t i = begin % inner_size;
  for (int64_t left = end - begin; left > 0;) {
    int64_t row = offset;
    for (size_t d = 0; d + 1 < reduced; ++d) row += index[d] * plan.reduced_strides[d];
    const int64_t stop = std::min(inner_size, i + left);
    left -= stop - i;
    f_row(base + row + i * inner_stride, stop - i, inner_stride);
    i = 0;
    for (size_t d = reduced - 1; d-- > 0;) {
      if (++index[d] < plan.reduced_sizes[d]) break;
      index[d] = 0;
    }
  }
}

// Note [Column reductions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// When the innermost kept dim has stride 1 and the innermost reduced dim does not (a
// sum over dim 0 of a row-major matrix, a channels-last [N, C, H, W] reduced over N, H
// and W), one output's elements lie a row apart and the cache line that holds one holds
// its neighbours' too: folding each output alone reads every line once per output in
// it. Such reductions fold a group of up to kColumnWidth adjacent outputs together:
// for_each_reduced_row_in_range for the group's first output yields runs whose element
// i of column g is p[i * stride + g]. Each output still folds its own elements in
// for_each_reduction's order, so the bits are those of the per-output walk.
inline constexpr int64_t kColumnWidth = 64;

// Whether `plan` folds in column groups (above).
inline bool folds_in_columns(const ReductionPlan& plan) {
  return !plan.kept_sizes.empty() && !plan.reduced_sizes.empty() && plan.kept_strides.back() == 1 &&
         plan.kept_sizes.back() > 1 && plan.reduced_strides.back() != 1;
}

// The column groups of a plan that folds in columns: each row of the innermost kept
// dim is cut into groups of kColumnWidth outputs (the last may be narrower).
struct ColumnGroups {
  int64_t inner = 1;    // the innermost kept size
  int64_t per_row = 1;  // groups per row of it
  int64_t count = 0;    // groups in all

  explicit ColumnGroups(const ReductionPlan& plan)
      : inner(plan.kept_sizes.back()),
        per_row((inner + kColumnWidth - 1) / kColumnWidth),
        count(plan.out_numel / inner * per_row) {}
  // The first output of group g and the number of outputs in it.
  int64_t first(int64_t g) const { return g / per_row * inner + g % per_row * kColumnWidth; }
  int64_t width(int64_t g) const {
    return std::min(kColumnWidth, inner - g % per_row * kColumnWidth);
  }
};

// Calls f(value) for the reduced elements [begin, end) of output element `o`, in the
// order for_each_reduction visits them.
template <typename T, typename F>
void for_each_reduced_in_range(const ReductionPlan& plan, const T* base, int64_t o, int64_t begin,
                               int64_t end, F&& f) {
  for_each_reduced_row_in_range(plan, base, o, begin, end,
                                [&](const T* p, int64_t count, int64_t stride) {
                                  for (int64_t i = 0; i < count; ++i) f(p[i * stride]);
                                });
}

// Writes accumulators to a contiguous output of any dtype (with C++ conversion rules).
template <typename Acc>
void store_values(const sdk::Tensor& out, const std::vector<Acc>& values, const char* op) {
  dispatch_all_types(out.dtype(), op, [&](auto tag) {
    using Out = decltype(tag);
    Out* dst = out.data<Out>();
    const int64_t n = static_cast<int64_t>(values.size());
    parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if constexpr (std::is_same_v<Out, bool>) {
          dst[i] = values[i] != Acc(0);
        } else if constexpr (is_reduced_float_v<Out>) {
          dst[i] = Out(static_cast<float>(values[i]));
        } else {
          dst[i] = static_cast<Out>(values[i]);
        }
      }
    });
  });
}

// Wrapped dims of an `int[]` argument of a kernel.
std::vector<int64_t> wrap_dims(std::span<const int64_t> dims, int64_t ndim, const char* op);

}  // namespace loom::cpu
