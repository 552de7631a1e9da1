// Reduction plans: the kept / reduced split of an input's dims (reduction_loop.h).
#include "reduction_loop.h"

#include <string>

#include "strided_loop.h"

namespace loom::cpu {

std::vector<int64_t> wrap_dims(std::span<const int64_t> dims, int64_t ndim, const char* op) {
  std::vector<int64_t> out;
  int64_t n = std::max<int64_t>(ndim, 1);
  for (int64_t d : dims) {
    if (d < -n || d >= n) {
      throw sdk::Error(std::string("[") + op + "] dim " + std::to_string(d) +
                       " is out of range for a tensor of " + std::to_string(ndim) + " dims");
    }
    out.push_back(d < 0 ? d + n : d);
  }
  return out;
}

ReductionPlan plan_reduction(const sdk::Tensor& self, std::span<const int64_t> dims) {
  const int64_t ndim = self.dim();
  std::vector<bool> reduce(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : wrap_dims(dims, ndim, "reduction")) {
    if (ndim > 0) reduce[d] = true;
  }
  ReductionPlan plan;
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t size = self.sizes()[d], stride = self.strides()[d];
    if (reduce[d]) {
      plan.reduced_sizes.push_back(size);
      plan.reduced_strides.push_back(stride);
      plan.reduced_numel *= size;
    } else {
      plan.kept_sizes.push_back(size);
      plan.kept_strides.push_back(stride);
      plan.out_numel *= size;
    }
  }
  return plan;
}

}  // namespace loom::cpu
