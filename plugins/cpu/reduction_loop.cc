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

std::vector<int64_t> reduced_sizes(const sdk::Tensor& self, std::span<const int64_t> dims,
                                   bool keepdim, const char* op) {
  const int64_t ndim = self.dim();
  std::vector<bool> reduce(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : wrap_dims(dims, ndim, op)) {
    if (ndim == 0) continue;
    if (reduce[d]) {
      throw sdk::Error(std::string("[") + op + "] dim " + std::to_string(d) +
                       " appears more than once in the list of dims");
    }
    reduce[d] = true;
  }
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduce[d]) {
      sizes.push_back(self.sizes()[d]);
    } else if (keepdim) {
      sizes.push_back(1);
    }
  }
  return sizes;
}

ReductionPlan plan_reduction(const sdk::Tensor& self, std::span<const int64_t> dims) {
  const int64_t ndim = self.dim();
  std::vector<bool> reduce(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : wrap_dims(dims, ndim, "reduction")) {
    if (ndim > 0) reduce[d] = true;
  }
  // Dims of size 1 add nothing to either walk, and a dim that continues the previous dim
  // of its kind (that dim's stride is this dim's size times its stride, as in a
  // contiguous tensor) walks as one dim with it: the same elements in the same order, in
  // longer rows (the bias gradient's sum over [N, C, H, W] minus C reads rows of H * W).
  ReductionPlan plan;
  bool last_reduced = false, any = false;
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t size = self.sizes()[d], stride = self.strides()[d];
    if (size == 1) continue;
    std::vector<int64_t>& sizes = reduce[d] ? plan.reduced_sizes : plan.kept_sizes;
    std::vector<int64_t>& strides = reduce[d] ? plan.reduced_strides : plan.kept_strides;
    (reduce[d] ? plan.reduced_numel : plan.out_numel) *= size;
    if (any && last_reduced == reduce[d] && !sizes.empty() && strides.back() == size * stride) {
      sizes.back() *= size;
      strides.back() = stride;
    } else {
      sizes.push_back(size);
      strides.push_back(stride);
    }
    last_reduced = reduce[d];
    any = true;
  }
  return plan;
}

}  // namespace loom::cpu
