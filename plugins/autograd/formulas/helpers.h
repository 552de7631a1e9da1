// Small pieces several formula files share: scalar tensors, masks and the expansion of a
// reduced gradient back to its input's shape.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "../formula.h"

namespace loom::autograd::formulas {

using sdk::Tensor;
namespace op = sdk::op;

// A 0-dim tensor of `value` with t's dtype and device.
inline Tensor scalar_like(const Tensor& t, double value) {
  return sdk::full(std::span<const int64_t>(), value, t.dtype(), t.device());
}

// `grad` with the positions where `mask` is true set to zero.
inline Tensor zero_where(const Tensor& grad, const Tensor& mask) {
  return op::masked_fill(grad, mask, sdk::scalar(0.0));
}

// Dims of a reduction over `dims` of a tensor of `ndim` dims (none or empty: all),
// made non-negative.
std::vector<int64_t> reduced_dims(std::span<const int64_t> dims, int64_t ndim, bool none);

// The gradient of a reduction over `dims` (keepdim or not) expanded to `sizes`.
Tensor expand_reduced(const Tensor& grad, std::span<const int64_t> sizes,
                      const std::vector<int64_t>& dims, bool keepdim);

// Puts `grad` at its place in a zero tensor of `sizes` (the backward of slicing views).
template <typename Slice>
Tensor embed(const Tensor& grad, std::span<const int64_t> sizes, Slice&& slice) {
  Tensor out = sdk::full(sizes, 0.0, grad.dtype(), grad.device());
  Tensor place = slice(out);
  op::copy_(place, grad);
  return out;
}

// A row-major [out, in] matrix built on the host by `fill` (zeroed first), moved to
// `device` as `dtype` (Note [Separable pooling] in pool.cc).
Tensor host_matrix(int64_t out, int64_t in, const std::function<void(double*)>& fill,
                   LoomDType dtype, LoomDevice device);

}  // namespace loom::autograd::formulas
