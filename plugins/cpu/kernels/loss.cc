// nll_loss on CPU tensors (the out= kernel of the Shaped op; the output arrives allocated
// and contiguous in the input's dtype: the target's shape for reduction none, else 0-dim).
#include <optional>
#include <string>
#include <vector>

#include "../kernels.h"
#include "../scalar_types.h"

namespace loom::cpu {
namespace {

constexpr int64_t kReductionNone = 0, kReductionMean = 1;

std::vector<double> class_weights(const std::optional<sdk::Tensor>& weight, const char* op) {
  std::vector<double> values;
  if (!weight) return values;
  const int64_t n = weight->numel(), stride = weight->dim() == 0 ? 0 : weight->strides()[0];
  dispatch_floating_types(weight->dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* p = weight->data<T>();
    for (int64_t i = 0; i < n; ++i) values.push_back(static_cast<double>(p[i * stride]));
  });
  return values;
}

// Note [nll_loss]
// ~~~~~~~~~~~~~~~
// Input [C], [N, C] or [N, C, d1, ...] (log-probabilities; the class dim is 1, or 0 for a
// 1-D input), target the input's shape without the class dim. Each position with target t
// contributes -weight[t] * input[..., t, ...] and weight[t] to the total weight; a target
// equal to ignore_index contributes 0 to both. `mean` divides the sum by the total
// weight (NaN when it is 0, as in PyTorch), `sum` doesn't. Sums accumulate in double.
sdk::Tensor nll_loss_out(const sdk::Tensor& self, const sdk::Tensor& target,
                         const std::optional<sdk::Tensor>& weight, int64_t reduction,
                         int64_t ignore_index, const sdk::Tensor& out) {
  const char* op = "loom::nll_loss";
  const int64_t ndim = self.dim();
  const int64_t class_dim = ndim == 1 ? 0 : 1;
  const int64_t classes = self.sizes()[class_dim];
  const int64_t class_stride = self.strides()[class_dim];
  std::vector<int64_t> sizes, self_strides;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d == class_dim) continue;
    sizes.push_back(self.sizes()[d]);
    self_strides.push_back(self.strides()[d]);
  }
  const std::span<const int64_t> target_strides = target.strides();
  int64_t count = 1;
  for (int64_t s : sizes) count *= s;
  const std::vector<double> w = class_weights(weight, op);
  dispatch_floating_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* x = self.data<T>();
    T* dst = out.data<T>();
    double total = 0, total_weight = 0;
    auto run = [&](auto index_tag) {
      using I = decltype(index_tag);
      const I* t = target.data<I>();
      std::vector<int64_t> index(sizes.size(), 0);
      for (int64_t p = 0; p < count; ++p) {
        int64_t x_off = 0, t_off = 0;
        for (size_t d = 0; d < sizes.size(); ++d) {
          x_off += index[d] * self_strides[d];
          t_off += index[d] * target_strides[d];
        }
        const int64_t cls = static_cast<int64_t>(t[t_off]);
        double loss = 0;
        if (cls != ignore_index) {
          if (cls < 0 || cls >= classes) {
            throw sdk::Error(std::string("[") + op + "] target " + std::to_string(cls) +
                             " is out of bounds for " + std::to_string(classes) + " classes");
          }
          const double wc = w.empty() ? 1.0 : w[cls];
          loss = -wc * static_cast<double>(x[x_off + cls * class_stride]);
          total += loss;
          total_weight += wc;
        }
        if (reduction == kReductionNone) dst[p] = T(loss);
        for (size_t d = sizes.size(); d-- > 0;) {
          if (++index[d] < sizes[d]) break;
          index[d] = 0;
        }
      }
    };
    if (target.dtype() == LOOM_DTYPE_INT32) {
      run(int32_t{});
    } else if (target.dtype() == LOOM_DTYPE_INT64) {
      run(int64_t{});
    } else {
      unsupported_dtype(target.dtype(), op, "an int32 or int64 target");
    }
    if (reduction != kReductionNone) {
      dst[0] = T(reduction == kReductionMean ? total / total_weight : total);
    }
  });
  return out;
}

}  // namespace

void register_loss_kernels(sdk::Registrar& r) {
  r.impl<&nll_loss_out>("loom::nll_loss.out", LOOM_KEY_CPU, sdk::dtypes::floating);
}

}  // namespace loom::cpu
