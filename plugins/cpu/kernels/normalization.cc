// native_layer_norm on CPU tensors: output, mean and rstd of each row of the normalized
// (trailing) dims (the out= kernel of the Shaped op; outputs arrive allocated and
// contiguous in the input's dtype).
#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "../isa.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../reduction_loop.h"
#include "../vector_math.h"

namespace loom::cpu {
namespace {

// One float row of layer_norm, run in the active ISA clone: mean and rstd from
// fixed-lane sums (Note [Vectorised exp]: the same bits at every ISA level), then the
// row normalized into `out` (which may be `row` itself), with the affine weight and
// bias when given (else null).
struct LayerNormRow {
  [[gnu::always_inline]] static inline void run(int, const float* row, float* out, int64_t n,
                                                const float* w, const float* b, float eps,
                                                float* mean_out, float* rstd_out) {
    const float mean = lane_sum(row, n) / static_cast<float>(n);
    const float var = lane_sum_of_squares(row, n, mean) / static_cast<float>(n);
    const float rstd = 1.0f / std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) {
      float v = (row[j] - mean) * rstd;
      if (w != nullptr) v *= w[j];
      if (b != nullptr) v += b[j];
      out[j] = v;
    }
    *mean_out = mean;
    *rstd_out = rstd;
  }
};

// The elements of an optional affine parameter in row-major order, as Acc (empty: None).
template <typename Acc>
std::vector<Acc> gather(const std::optional<sdk::Tensor>& t, const char* op) {
  std::vector<Acc> values;
  if (!t) return values;
  values.reserve(static_cast<size_t>(t->numel()));
  ReductionPlan plan = plan_reduction(*t, {});
  dispatch_floating_types(t->dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    for_each_reduction(plan, t->data<T>(), [&](int64_t, auto&& visit) {
      visit([&](T v) { values.push_back(static_cast<Acc>(static_cast<acc_type<T>>(v))); });
    });
  });
  return values;
}

// Note [layer_norm rows]
// ~~~~~~~~~~~~~~~~~~~~~~
// Each row (one index of the leading dims) is gathered into a buffer in the compute type
// (float; double for float64), and normalized with its mean and biased variance from two
// passes (no cancellation): y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var +
// eps). In float the passes are fixed-lane vectorised sums (LayerNormRow, the same bits
// at every ISA level). mean and rstd are stored per row for the backward pass.
std::tuple<sdk::Tensor, sdk::Tensor, sdk::Tensor> native_layer_norm_out(
    const sdk::Tensor& input, std::span<const int64_t> normalized_shape,
    const std::optional<sdk::Tensor>& weight, const std::optional<sdk::Tensor>& bias, double eps,
    const sdk::Tensor& out, const sdk::Tensor& mean_out, const sdk::Tensor& rstd_out) {
  const char* op = "loom::native_layer_norm";
  const int64_t ndim = input.dim();
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0 || k > ndim) {
    throw sdk::Error(std::string("[") + op + "] expected 1 to " + std::to_string(ndim) +
                     " normalized dims, found " + std::to_string(k));
  }
  std::vector<int64_t> dims;
  for (int64_t d = ndim - k; d < ndim; ++d) dims.push_back(d);
  ReductionPlan plan = plan_reduction(input, dims);
  const int64_t width = plan.reduced_numel;
  dispatch_floating_types(input.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<Acc> w = gather<Acc>(weight, op), b = gather<Acc>(bias, op);
    T* dst = out.data<T>();
    T* mean_dst = mean_out.data<T>();
    T* rstd_dst = rstd_out.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (input.is_contiguous()) {  // rows in place: normalized straight into the output
        const float* src = input.data<float>();
        parallel_for(0, input.numel() / std::max<int64_t>(width, 1), grain_for(8 * width),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t r = begin; r < end; ++r) {
                         run_with_isa<LayerNormRow, true>(
                             0, src + r * width, dst + r * width, width,
                             w.empty() ? nullptr : w.data(), b.empty() ? nullptr : b.data(),
                             static_cast<float>(eps), mean_dst + r, rstd_dst + r);
                       }
                     });
        return;
      }
    }
    parallel_for_each_reduction(plan, input.data<T>(), [&] {
      return
          [&, row = std::vector<Acc>(static_cast<size_t>(width))](int64_t o, auto&& visit) mutable {
            size_t i = 0;
            visit([&](T v) { row[i++] = static_cast<Acc>(v); });
            T* y = dst + o * width;
            if constexpr (std::is_same_v<Acc, float>) {
              float mean = 0, rstd = 0;
              run_with_isa<LayerNormRow, true>(
                  0, row.data(), row.data(), width, w.empty() ? nullptr : w.data(),
                  b.empty() ? nullptr : b.data(), static_cast<float>(eps), &mean, &rstd);
              for (int64_t j = 0; j < width; ++j) y[j] = T(row[j]);
              mean_dst[o] = T(mean);
              rstd_dst[o] = T(rstd);
              return;
            }
            Acc sum = 0;
            for (Acc v : row) sum += v;
            const Acc mean = sum / static_cast<Acc>(width);
            Acc squares = 0;
            for (Acc v : row) squares += (v - mean) * (v - mean);
            const Acc rstd =
                Acc(1) / std::sqrt(squares / static_cast<Acc>(width) + static_cast<Acc>(eps));
            for (int64_t j = 0; j < width; ++j) {
              Acc v = (row[j] - mean) * rstd;
              if (!w.empty()) v *= w[j];
              if (!b.empty()) v += b[j];
              y[j] = T(v);
            }
            mean_dst[o] = T(mean);
            rstd_dst[o] = T(rstd);
          };
    });
  });
  return {out, mean_out, rstd_out};
}

}  // namespace

void register_normalization_kernels(sdk::Registrar& r) {
  r.impl<&native_layer_norm_out>("loom::native_layer_norm.out", LOOM_KEY_CPU,
                                 sdk::dtypes::floating);
}

}  // namespace loom::cpu
