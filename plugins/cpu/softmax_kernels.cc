// softmax and log_softmax on CPU tensors along one dim (the out= kernels of the Shaped
// ops; outputs arrive allocated and contiguous, in the result dtype).
#include <cmath>
#include <limits>

#include "kernels.h"
#include "reduction_loop.h"

namespace loom::cpu {
namespace {

// Note [Stable softmax]
// ~~~~~~~~~~~~~~~~~~~~~
// Each line along `dim` is gathered into a buffer in the compute type (float, double for
// a float64 result), its max m subtracted before exp: softmax = exp(x - m) / sum, and
// log_softmax = (x - m) - log(sum), so no exp overflows. As in PyTorch, a line whose max is
// infinite (all -inf, or a +inf) gives NaN, and a NaN anywhere in a line makes it NaN.
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
  int64_t inner = 1;  // the contiguous output's stride of dim d
  for (int64_t k = d + 1; k < ndim; ++k) inner *= self.sizes()[k];
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
          Acc max = -std::numeric_limits<Acc>::infinity();
          for (Acc v : line) max = v > max ? v : max;
          Acc sum = 0;
          Out* row = dst + (o / inner) * inner * length + (o % inner);
          if constexpr (IsLog) {
            for (Acc v : line) sum += std::exp(v - max);
            const Acc log_sum = std::log(sum);
            for (int64_t i = 0; i < length; ++i) row[i * inner] = Out((line[i] - max) - log_sum);
          } else {
            for (Acc& v : line) {  // one exp per element, kept for the scaling pass
              v = std::exp(v - max);
              sum += v;
            }
            const Acc scale = Acc(1) / sum;
            for (int64_t i = 0; i < length; ++i) row[i * inner] = Out(line[i] * scale);
          }
        };
      });
    });
  });
  return out;
}

}  // namespace

void register_softmax_kernels(sdk::Registrar& r) {
  register_kernel<&softmax_out<false>>(r, "loom::softmax.int_out", DTypeSet::All);
  register_kernel<&softmax_out<true>>(r, "loom::log_softmax.int_out", DTypeSet::All);
}

}  // namespace loom::cpu
