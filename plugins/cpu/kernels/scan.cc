// Scans on CPU tensors: cumsum, cumprod along one dim (integers accumulate in int64,
// floating types in double), cummax and cummin (running extremes and their positions);
// outputs arrive allocated and contiguous.
#include <cmath>
#include <cstring>

#include "../index_loop.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../reduction_loop.h"
#include "loom/sdk/reference/scan.hpp"

namespace loom::cpu {
namespace {

template <bool IsProd>
sdk::Tensor scan_out(const sdk::Tensor& self, int64_t dim, std::optional<LoomDType>,
                     const sdk::Tensor& out) {
  const char* op = IsProd ? "cumprod" : "cumsum";
  const int64_t ndim = self.dim();
  if (self.numel() == 0) return out;
  const int64_t d = wrap_dims({&dim, 1}, ndim, op)[0];
  // Each line along `d` is a reduction of size 1 per element: walk the lines through a
  // plan that reduces `d`, and write the running value to the contiguous output.
  ReductionPlan plan = plan_reduction(
      self, ndim == 0 ? std::span<const int64_t>{} : std::span<const int64_t>(&d, 1));
  const int64_t length = plan.reduced_numel;
  const int64_t out_inner = ndim == 0 ? 1 : out.strides()[d];  // contiguous output
  const int64_t out_outer = out_inner * length;
  const bool integral_out = out.dtype() <= LOOM_DTYPE_INT64;
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto acc_tag) {
      using Acc = decltype(acc_tag);
      std::vector<Acc> values(static_cast<size_t>(self.numel()));
      parallel_for_each_reduction(plan, self.data<T>(), [&] {
        return [&](int64_t o, auto&& visit) {
          // output element o of the plan = (outer index, inner index) around dim d
          int64_t base = (o / out_inner) * out_outer + (o % out_inner);
          Acc running = IsProd ? Acc(1) : Acc(0);
          int64_t k = 0;
          visit([&](T v) {
            Acc x;
            if constexpr (std::is_same_v<Acc, uint64_t>) {
              x = static_cast<Acc>(static_cast<int64_t>(v));
            } else {
              x = static_cast<Acc>(static_cast<acc_type<T>>(v));
            }
            running = IsProd ? running * x : running + x;
            values[base + k++ * out_inner] = running;
          });
        };
      });
      if constexpr (std::is_same_v<Acc, uint64_t>) {
        store_values(out, std::vector<int64_t>(values.begin(), values.end()), op);
      } else {
        store_values(out, values, op);
      }
    };
    if (is_integral_v<T> && integral_out) {
      run(uint64_t{});
    } else {
      run(double{});
    }
  });
  return out;
}

// cummax and cummin: Note [cummax and cummin] in loom/sdk/reference/scan.hpp.
template <bool IsMax>
std::tuple<sdk::Tensor, sdk::Tensor> running_extreme_out(const sdk::Tensor& self, int64_t dim,
                                                         const sdk::Tensor& values,
                                                         const sdk::Tensor& indices) {
  const char* op = IsMax ? "cummax" : "cummin";
  if (self.numel() == 0) return {values, indices};
  const int64_t d = wrap_dim(dim, self.dim(), op);
  StridedBytes s(self);
  const int64_t length = s.sizes[d], stride = s.strides[d];
  std::vector<int64_t> lines = s.sizes;
  lines[d] = 1;
  int64_t inner = 1;  // the contiguous outputs' stride of d
  for (size_t j = d + 1; j < lines.size(); ++j) inner *= lines[j];
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using Key = std::conditional_t<std::is_same_v<T, bool>, int, acc_type<T>>;
    T* out_values = values.data<T>();
    int64_t* out_indices = indices.data<int64_t>();
    parallel_for(0, count_of(lines), grain_for(length), [&](int64_t begin, int64_t end) {
      for_each_index_in(lines, begin, end, [&](const int64_t* index, int64_t) {
        const char* line = s.at(index);
        int64_t base = 0;  // row-major position of the line's first output
        for (size_t j = 0; j < lines.size(); ++j) base = base * s.sizes[j] + index[j];
        T best{};
        Key best_key{};
        int64_t best_at = 0;
        for (int64_t i = 0; i < length; ++i) {
          T v;
          std::memcpy(&v, line + i * stride, sizeof(T));
          const Key key = static_cast<Key>(v);
          if (sdk::takes_running_extreme<IsMax>(i == 0, key, best_key)) {
            best = v;
            best_key = key;
            best_at = i;
          }
          out_values[base + i * inner] = best;
          out_indices[base + i * inner] = best_at;
        }
      });
    });
  });
  return {values, indices};
}

}  // namespace

void register_scan_kernels(sdk::Registrar& r) {
  r.impl<&scan_out<false>>("loom::cumsum.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&scan_out<true>>("loom::cumprod.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&running_extreme_out<true>>("loom::cummax.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&running_extreme_out<false>>("loom::cummin.out", LOOM_KEY_CPU, sdk::dtypes::all);
}

}  // namespace loom::cpu
