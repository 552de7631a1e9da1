// Reductions on CPU tensors: sum, prod, amax, amin, max/min with indices, var, any, all
// (the out= kernels of the Shaped reduction ops; outputs arrive allocated and contiguous).
// sum and prod run on the thread pool with results independent of the thread count.
//
// Note [Deterministic sum]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Floating-point addition is not associative, so a sum grouped by thread would change
// with LOOM_NUM_THREADS. Here the grouping depends on the input's shape alone: each
// output's reduced elements, in for_each_reduction's order, are cut into chunks of
// kReduceChunk elements; one thread folds a chunk sequentially, and the chunks' partial
// results are folded in chunk order on the calling thread. The pool only decides who
// computes which chunk (whole outputs when each has a single chunk), so sum and prod
// give the same bits for any thread count; an output of at most kReduceChunk elements
// is folded exactly as the serial loop would. Floats accumulate in double, integers in
// uint64 (wrapping, read back as int64).
#include <cmath>
#include <limits>

#include "kernels.h"
#include "parallel.h"
#include "reduction_loop.h"

namespace loom::cpu {
namespace {

using OptionalDims = std::optional<std::span<const int64_t>>;

// Reduced elements per chunk of one output (Note [Deterministic sum]).
constexpr int64_t kReduceChunk = 16384;

// acc[o] = the fold with `combine` of output o's reduced elements, each converted by
// `load`, starting from `identity`; chunked and parallel as in Note [Deterministic sum].
template <typename T, typename Acc, typename Load, typename Combine>
void fold_in_chunks(const ReductionPlan& plan, const T* base, Acc identity, Load load,
                    Combine combine, std::vector<Acc>& acc) {
  const int64_t outputs = plan.out_numel;
  const int64_t per_output = std::max<int64_t>(
      1, (plan.reduced_numel + kReduceChunk - 1) / kReduceChunk);  // chunks of one output
  auto fold = [&](int64_t o, int64_t chunk) {
    Acc total = identity;
    const int64_t begin = chunk * kReduceChunk;
    const int64_t end = std::min(plan.reduced_numel, begin + kReduceChunk);
    for_each_reduced_in_range(plan, base, o, begin, end,
                              [&](T v) { total = combine(total, load(v)); });
    return total;
  };
  if (per_output == 1) {  // whole outputs per thread, each folded serially
    const int64_t grain =
        std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, plan.reduced_numel));
    parallel_for(0, outputs, grain, [&](int64_t first, int64_t last) {
      for (int64_t o = first; o < last; ++o) acc[o] = fold(o, 0);
    });
    return;
  }
  std::vector<Acc> partial(static_cast<size_t>(outputs * per_output));
  parallel_for(0, outputs * per_output, 1, [&](int64_t first, int64_t last) {
    for (int64_t w = first; w < last; ++w) partial[w] = fold(w / per_output, w % per_output);
  });
  for (int64_t o = 0; o < outputs; ++o) {
    Acc total = partial[o * per_output];
    for (int64_t c = 1; c < per_output; ++c) total = combine(total, partial[o * per_output + c]);
    acc[o] = total;
  }
}

// sum and prod: integers accumulate in int64 (wrapping), everything else in double.
template <bool IsProd>
void sum_or_prod(const sdk::Tensor& self, std::span<const int64_t> dims, const sdk::Tensor& out,
                 const char* op) {
  ReductionPlan plan = plan_reduction(self, dims);
  bool integral_out = out.dtype() <= LOOM_DTYPE_INT64;
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto acc_tag) {
      using Acc = decltype(acc_tag);
      std::vector<Acc> acc(static_cast<size_t>(plan.out_numel));
      auto load = [&](T v) {
        if constexpr (std::is_same_v<Acc, uint64_t>) {
          return static_cast<Acc>(static_cast<int64_t>(v));  // wraps like int64
        } else {
          return static_cast<Acc>(static_cast<acc_type<T>>(v));
        }
      };
      auto combine = [&](Acc a, Acc b) { return IsProd ? a * b : a + b; };
      fold_in_chunks(plan, self.data<T>(), IsProd ? Acc(1) : Acc(0), load, combine, acc);
      if constexpr (std::is_same_v<Acc, uint64_t>) {
        std::vector<int64_t> signed_acc(acc.begin(), acc.end());
        store_values(out, signed_acc, op);
      } else {
        store_values(out, acc, op);
      }
    };
    if (is_integral_v<T> && integral_out) {
      run(uint64_t{});
    } else {
      run(double{});
    }
  });
}

sdk::Tensor sum_out(const sdk::Tensor& self, OptionalDims dim, bool, std::optional<LoomDType>,
                    const sdk::Tensor& out) {
  sum_or_prod<false>(self, dim.value_or(std::span<const int64_t>{}), out, "sum");
  return out;
}

sdk::Tensor prod_out(const sdk::Tensor& self, int64_t dim, bool, std::optional<LoomDType>,
                     const sdk::Tensor& out) {
  sum_or_prod<true>(self, {&dim, 1}, out, "prod");
  return out;
}

// amax / amin: NaN propagates (the first NaN wins), as in PyTorch.
template <bool IsMax>
sdk::Tensor extremum_out(const sdk::Tensor& self, std::span<const int64_t> dims, bool,
                         const sdk::Tensor& out) {
  const char* op = IsMax ? "amax" : "amin";
  ReductionPlan plan = plan_reduction(self, dims);
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    T* dst = out.data<T>();
    for_each_reduction(plan, self.data<T>(), [&](int64_t o, auto&& visit) {
      bool first = true;
      A best{};
      visit([&](T raw) {
        A v = static_cast<A>(raw);
        if (first) {
          best = v;
          first = false;
        } else if constexpr (is_floating_v<T>) {
          if (best != best) return;
          if (v != v || (IsMax ? v > best : v < best)) best = v;
        } else {
          if (IsMax ? v > best : v < best) best = v;
        }
      });
      dst[o] = static_cast<T>(best);
    });
  });
  return out;
}

// max.dim / min.dim: the value and the index of its first occurrence (NaN wins).
template <bool IsMax>
std::tuple<sdk::Tensor, sdk::Tensor> extremum_dim_out(const sdk::Tensor& self, int64_t dim, bool,
                                                      const sdk::Tensor& values,
                                                      const sdk::Tensor& indices) {
  const char* op = IsMax ? "max" : "min";
  ReductionPlan plan = plan_reduction(self, {&dim, 1});
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    T* dst = values.data<T>();
    int64_t* idx = indices.data<int64_t>();
    for_each_reduction(plan, self.data<T>(), [&](int64_t o, auto&& visit) {
      int64_t i = 0, best_index = 0;
      A best{};
      visit([&](T raw) {
        A v = static_cast<A>(raw);
        bool take = i == 0;
        if constexpr (is_floating_v<T>) {
          take = take || (best == best && (v != v || (IsMax ? v > best : v < best)));
        } else {
          take = take || (IsMax ? v > best : v < best);
        }
        if (take) {
          best = v;
          best_index = i;
        }
        ++i;
      });
      dst[o] = static_cast<T>(best);
      idx[o] = best_index;
    });
  });
  return {values, indices};
}

// Two passes in double: the mean, then the squared deviations (no cancellation).
sdk::Tensor var_out(const sdk::Tensor& self, OptionalDims dim,
                    std::optional<sdk::Scalar> correction, bool, const sdk::Tensor& out) {
  ReductionPlan plan = plan_reduction(self, dim.value_or(std::span<const int64_t>{}));
  double c = correction ? correction->to_double() : 1.0;
  std::vector<double> result(static_cast<size_t>(plan.out_numel));
  dispatch_floating_types(self.dtype(), "var", [&](auto tag) {
    using T = decltype(tag);
    for_each_reduction(plan, self.data<T>(), [&](int64_t o, auto&& visit) {
      double sum = 0;
      visit([&](T v) { sum += static_cast<double>(static_cast<acc_type<T>>(v)); });
      double n = static_cast<double>(plan.reduced_numel);
      double mean = sum / n;
      double squares = 0;
      visit([&](T v) {
        double d = static_cast<double>(static_cast<acc_type<T>>(v)) - mean;
        squares += d * d;
      });
      result[o] = squares / std::max(0.0, n - c);
    });
  });
  store_values(out, result, "var");
  return out;
}

template <bool IsAny>
sdk::Tensor any_all_out(const sdk::Tensor& self, OptionalDims dim, bool, const sdk::Tensor& out) {
  const char* op = IsAny ? "any" : "all";
  ReductionPlan plan = plan_reduction(self, dim.value_or(std::span<const int64_t>{}));
  bool* dst = out.data<bool>();
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    for_each_reduction(plan, self.data<T>(), [&](int64_t o, auto&& visit) {
      bool r = !IsAny;
      visit([&](T v) {
        bool truthy = static_cast<acc_type<T>>(v) != acc_type<T>(0);
        r = IsAny ? (r || truthy) : (r && truthy);
      });
      dst[o] = r;
    });
  });
  return out;
}

}  // namespace

void register_reduce_kernels(sdk::Registrar& r) {
  register_kernel<&sum_out>(r, "loom::sum.dim_IntList_out", DTypeSet::All);
  register_kernel<&prod_out>(r, "loom::prod.dim_int_out", DTypeSet::All);
  register_kernel<&extremum_out<true>>(r, "loom::amax.out", DTypeSet::All);
  register_kernel<&extremum_out<false>>(r, "loom::amin.out", DTypeSet::All);
  register_kernel<&extremum_dim_out<true>>(r, "loom::max.dim_out", DTypeSet::All);
  register_kernel<&extremum_dim_out<false>>(r, "loom::min.dim_out", DTypeSet::All);
  register_kernel<&var_out>(r, "loom::var.correction_out", DTypeSet::Floating);
  register_kernel<&any_all_out<true>>(r, "loom::any.dims_out", DTypeSet::All);
  register_kernel<&any_all_out<false>>(r, "loom::all.dims_out", DTypeSet::All);
}

}  // namespace loom::cpu
