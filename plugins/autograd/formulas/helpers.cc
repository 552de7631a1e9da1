// Shared formula helpers (helpers.h).
#include "helpers.h"

#include <algorithm>

namespace loom::autograd::formulas {

std::vector<int64_t> reduced_dims(std::span<const int64_t> dims, int64_t ndim, bool none) {
  std::vector<int64_t> out;
  if (none || dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(d < 0 ? d + std::max<int64_t>(ndim, 1) : d);
  std::sort(out.begin(), out.end());
  return out;
}

Tensor expand_reduced(const Tensor& grad, std::span<const int64_t> sizes,
                      const std::vector<int64_t>& dims, bool keepdim) {
  Tensor g = grad;
  if (!keepdim && !sizes.empty()) {
    std::vector<int64_t> kept(sizes.begin(), sizes.end());
    for (int64_t d : dims) {
      if (d < static_cast<int64_t>(kept.size())) kept[d] = 1;
    }
    g = op::reshape(g, kept);
  }
  return op::expand(g, sizes);
}

Tensor host_matrix(int64_t out, int64_t in, const std::function<void(double*)>& fill,
                   LoomDType dtype, LoomDevice device) {
  Tensor m = sdk::empty({out, in}, LOOM_DTYPE_FLOAT64);
  double* data = m.data<double>();
  std::fill(data, data + out * in, 0.0);
  fill(data);
  return op::to(m, device, dtype);
}

}  // namespace loom::autograd::formulas
