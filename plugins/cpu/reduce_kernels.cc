// Reductions on CPU tensors: sum, prod, amax, amin, max/min with indices, var, any, all
// (the out= kernels of the Shaped reduction ops; outputs arrive allocated and contiguous).
#include <cmath>
#include <limits>

#include "kernels.h"
#include "reduction_loop.h"

namespace loom::cpu {
namespace {

using OptionalDims = std::optional<std::span<const int64_t>>;

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
      for_each_reduction(plan, self.data<T>(), [&](int64_t o, auto&& visit) {
        Acc total = IsProd ? Acc(1) : Acc(0);
        visit([&](T v) {
          if constexpr (std::is_same_v<Acc, uint64_t>) {
            Acc x = static_cast<Acc>(static_cast<int64_t>(v));
            total = IsProd ? total * x : total + x;  // wraps like int64 two's complement
          } else {
            Acc x = static_cast<Acc>(static_cast<acc_type<T>>(v));
            total = IsProd ? total * x : total + x;
          }
        });
        acc[o] = total;
      });
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
