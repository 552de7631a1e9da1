// softmax and log_softmax on CPU tensors along one dim (the out= kernels of the Shaped
// ops; outputs arrive allocated and contiguous, in the result dtype).
#include <cmath>
#include <limits>

#include "../isa.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../reduction_loop.h"
#include "../vector_math.h"

namespace loom::cpu {
namespace {

// One line of the softmax family in float (Note [Vectorised exp]), run in the active ISA
// clone: the line's max (NaN ignored, as the serial loop did) and the sum of
// exp(x - max) in kLanes fixed lanes; with KeepExp, exps[i] = exp(x[i] - max) (exps may
// be the line itself).
template <bool KeepExp>
struct SoftmaxLine {
  [[gnu::always_inline]] static inline void run(int, const float* line, float* exps, int64_t n,
                                                float* max_out, float* sum_out) {
    float lanes[kLanes];
    for (float& m : lanes) m = -std::numeric_limits<float>::infinity();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      // kept a loop: fully unrolled first, it would not vectorise (Note [ISA dispatch])
#pragma GCC unroll 1
      for (int l = 0; l < kLanes; ++l) lanes[l] = line[i + l] > lanes[l] ? line[i + l] : lanes[l];
    }
    for (; i < n; ++i)
      lanes[i % kLanes] = line[i] > lanes[i % kLanes] ? line[i] : lanes[i % kLanes];
    float max = lanes[0];
    for (int l = 1; l < kLanes; ++l) max = lanes[l] > max ? lanes[l] : max;
    for (float& s : lanes) s = 0;
    for (i = 0; i + kLanes <= n; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float e = exp_nonpositive(line[i + l] - max);
        if constexpr (KeepExp) exps[i + l] = e;
        lanes[l] += e;
      }
    }
    for (; i < n; ++i) {
      const float e = exp_nonpositive(line[i] - max);
      if constexpr (KeepExp) exps[i] = e;
      lanes[i % kLanes] += e;
    }
    *max_out = max;
    *sum_out = fold_lanes(lanes);
  }
};

// The whole softmax (or log_softmax) of one contiguous float32 line into a contiguous
// float32 output, in the active ISA clone: SoftmaxLine, then the scaling softmax_out does
// for other layouts (so the bits equal the general path's), without gathering the line
// into a buffer first or scaling in the baseline loop.
template <bool IsLog>
struct SoftmaxRow {
  [[gnu::always_inline]] static inline void run(int, const float* in, float* out, int64_t n) {
    float max = 0, sum = 0;
    SoftmaxLine<!IsLog>::run(0, in, out, n, &max, &sum);
    if constexpr (IsLog) {
      const float log_sum = std::log(sum);
      for (int64_t i = 0; i < n; ++i) out[i] = (in[i] - max) - log_sum;
    } else {
      const float scale = 1.0f / sum;
      for (int64_t i = 0; i < n; ++i) out[i] = out[i] * scale;
    }
  }
};

// Note [Stable softmax]
// ~~~~~~~~~~~~~~~~~~~~~
// Each line along `dim` is gathered into a buffer in the compute type (float, double for
// a float64 result), its max m subtracted before exp: softmax = exp(x - m) / sum, and
// log_softmax = (x - m) - log(sum), so no exp overflows. In float, exp and the sum are
// vectorised and give the same bits at every ISA level (Note [Vectorised exp]). As in
// PyTorch, a line whose max is infinite (all -inf, or a +inf) gives NaN, and a NaN
// anywhere in a line makes it NaN.
template <bool IsLog>
sdk::Tensor softmax_out(const sdk::Tensor& self, int64_t dim, std::optional<LoomDType>,
                        const sdk::Tensor& out) {
  const char* op = IsLog ? "loom::log_softmax" : "loom::softmax";
  if (self.numel() == 0) return out;
  const int64_t ndim = self.dim();
  const int64_t d = wrap_dims({&dim, 1}, ndim, op)[0];
  ReductionPlan plan = plan_reduction(
      self, ndim == 0 ? std::span<const int64_t>{} : std::span<const int64_t>(&d, 1));
  const int64_t length = plan.reduced_numel;
  // Line o (row-major over the dims but d, the order of the plan's outputs) starts at
  // out_line(o) in `out`, its elements `step` apart: any layout of out (channels last
  // for a channels-last input, or an out= argument's own).
  std::vector<int64_t> line_sizes, line_strides;
  for (int64_t k = 0; k < ndim; ++k) {
    if (k == d) continue;
    line_sizes.push_back(self.sizes()[k]);
    line_strides.push_back(out.strides()[k]);
  }
  auto out_line = [&](int64_t o) {
    int64_t offset = 0;
    for (size_t k = line_sizes.size(); k-- > 0;) {
      offset += o % line_sizes[k] * line_strides[k];
      o /= line_sizes[k];
    }
    return offset;
  };
  const int64_t step = ndim == 0 ? 1 : out.strides()[d];
  int64_t inner = 1;  // the elements after dim d
  for (int64_t k = d + 1; k < ndim; ++k) inner *= self.sizes()[k];
  if (self.dtype() == LOOM_DTYPE_FLOAT32 && out.dtype() == LOOM_DTYPE_FLOAT32 && inner == 1 &&
      self.is_contiguous() && out.is_contiguous()) {  // rows: one pass per row in the clone
    const float* src = self.data<float>();
    float* dst = out.data<float>();
    parallel_for(0, self.numel() / length, grain_for(8 * length), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        run_with_isa<SoftmaxRow<IsLog>, true>(0, src + r * length, dst + r * length, length);
      }
    });
    return out;
  }
  dispatch_floating_types(out.dtype(), op, [&](auto out_tag) {
    using Out = decltype(out_tag);
    using Acc = std::conditional_t<std::is_same_v<Out, double>, double, float>;
    Out* dst = out.data<Out>();
    dispatch_all_types(self.dtype(), op, [&](auto in_tag) {
      using T = decltype(in_tag);
      parallel_for_each_reduction(plan, self.data<T>(), [&] {
        return [&, line = std::vector<Acc>(static_cast<size_t>(length))](int64_t o,
                                                                         auto&& visit) mutable {
          size_t k = 0;
          visit([&](T v) { line[k++] = static_cast<Acc>(static_cast<acc_type<T>>(v)); });
          Out* row = dst + out_line(o);
          if constexpr (std::is_same_v<Acc, float>) {
            float max = 0, sum = 0;
            run_with_isa<SoftmaxLine<!IsLog>, true>(0, line.data(), line.data(), length, &max,
                                                    &sum);
            if constexpr (IsLog) {
              const float log_sum = std::log(sum);
              for (int64_t i = 0; i < length; ++i) row[i * step] = Out((line[i] - max) - log_sum);
            } else {
              const float scale = 1.0f / sum;
              for (int64_t i = 0; i < length; ++i) row[i * step] = Out(line[i] * scale);
            }
            return;
          }
          Acc max = -std::numeric_limits<Acc>::infinity();
          for (Acc v : line) max = v > max ? v : max;
          Acc sum = 0;
          if constexpr (IsLog) {
            for (Acc v : line) sum += std::exp(v - max);
            const Acc log_sum = std::log(sum);
            for (int64_t i = 0; i < length; ++i) row[i * step] = Out((line[i] - max) - log_sum);
          } else {
            for (Acc& v : line) {  // one exp per element, kept for the scaling pass
              v = std::exp(v - max);
              sum += v;
            }
            const Acc scale = Acc(1) / sum;
            for (int64_t i = 0; i < length; ++i) row[i * step] = Out(line[i] * scale);
          }
        };
      });
    });
  });
  return out;
}

}  // namespace

void register_softmax_kernels(sdk::Registrar& r) {
  r.impl<&softmax_out<false>>("loom::softmax.int_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&softmax_out<true>>("loom::log_softmax.int_out", LOOM_KEY_CPU, sdk::dtypes::all);
}

}  // namespace loom::cpu
