// Scans on GPU tensors (kernels/scan.cu): cumsum and cumprod (self converted to out's
// dtype first when they differ: widening, or the integers' int64), cummax and cummin.
// Outputs arrive allocated in self's shape; any strides.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

template <bool IsProd>
Tensor scan_out(const DispatchContext& ctx, const Tensor& self, int64_t dim,
                std::optional<LoomDType>, const Tensor& out) {
  const char* op = IsProd ? "cumprod" : "cumsum";
  prepare(op, out, {&self});
  const int64_t d = wrapped_dim(op, dim, self.dim());
  if (out.numel() == 0) return out;
  const Tensor in = self.dtype() == out.dtype() ? self : contiguous(ctx, op, self, out.dtype());
  const Tensor* operands[2] = {&out, &in};
  const std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  check_launch(
      launch_scan(IsProd, out.dtype(), lines_along<2>(op, sizes, d, operands), size_along(self, d),
                  stride_along(out, d), stride_along(in, d), out.data(), in.data(), stream_of(ctx)),
      op);
  return out;
}

template <bool IsMax>
std::tuple<Tensor, Tensor> running_extreme_out(const DispatchContext& ctx, const Tensor& self,
                                               int64_t dim, const Tensor& values,
                                               const Tensor& indices) {
  const char* op = IsMax ? "cummax" : "cummin";
  prepare(op, values, {&self, &indices});
  const int64_t d = wrapped_dim(op, dim, self.dim());
  if (indices.dtype() != LOOM_DTYPE_INT64 || values.dtype() != self.dtype()) {
    throw sdk::Error("[" + std::string(op) + "] expected values of self's dtype and int64 " +
                     "indices, found dtypes " + std::to_string(values.dtype()) + " and " +
                     std::to_string(indices.dtype()));
  }
  if (values.numel() == 0) return {values, indices};
  const Tensor* operands[3] = {&values, &indices, &self};
  const std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  const LineStrides strides{stride_along(values, d), stride_along(indices, d),
                            stride_along(self, d)};
  check_launch(
      launch_running_extreme(IsMax, self.dtype(), lines_along<3>(op, sizes, d, operands),
                             size_along(self, d), strides, values.data(),
                             static_cast<int64_t*>(indices.data()), self.data(), stream_of(ctx)),
      op);
  return {values, indices};
}

}  // namespace

void register_scan_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&scan_out<false>>("loom::cumsum.out", key, all);
  r.impl<&scan_out<true>>("loom::cumprod.out", key, all);
  r.impl<&running_extreme_out<true>>("loom::cummax.out", key, all);
  r.impl<&running_extreme_out<false>>("loom::cummin.out", key, all);
}

}  // namespace loom::gpu
