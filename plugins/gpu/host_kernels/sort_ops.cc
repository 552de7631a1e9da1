// sort and topk on GPU tensors (kernels/sort.cu, Note [Bitonic sort]): stable, NaN as the
// largest value, ties by position, so both equal the CPU plugin's results; topk is the
// first k of the sorted line (sorted=False allows any order, so sorted order is valid
// too). Outputs arrive allocated; any strides.
#include <string>
#include <tuple>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

}  // namespace

void sort_along(const DispatchContext& ctx, const char* op, const Tensor& self, int64_t d,
                int64_t count, bool descending, const Tensor& values, const Tensor& indices) {
  if (indices.dtype() != LOOM_DTYPE_INT64 || values.dtype() != self.dtype()) {
    throw sdk::Error("[" + std::string(op) + "] expected values of self's dtype and int64 " +
                     "indices, found dtypes " + std::to_string(values.dtype()) + " and " +
                     std::to_string(indices.dtype()));
  }
  if (values.numel() == 0) return;
  const int64_t length = size_along(self, d);
  const Tensor* operands[3] = {&values, &indices, &self};
  const std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  const StridedSpace<3> lines = lines_along<3>(op, sizes, d, operands);
  const int64_t width = sort_width(length);
  if (lines.numel() > (int64_t{1} << 40) / width ||
      lines.numel() * (width / sort_chunk(width)) > int64_t{0x7FFFFFFF}) {
    throw sdk::Error("[" + std::string(op) + "] " + std::to_string(lines.numel()) + " lines of " +
                     std::to_string(length) +
                     " elements are more than the " LOOM_GPU_PLATFORM_NAME " sort takes at once");
  }
  Tensor scratch =
      sdk::empty({lines.numel() * width * kSortItemBytes}, LOOM_DTYPE_UINT8, self.device());
  const LineStrides strides{stride_along(values, d), stride_along(indices, d),
                            stride_along(self, d)};
  check_launch(launch_sort(self.dtype(), lines, length, count, descending, strides, values.data(),
                           static_cast<int64_t*>(indices.data()), self.data(), scratch.data(),
                           stream_of(ctx)),
               op);
}

namespace {

std::tuple<Tensor, Tensor> sort_out(const DispatchContext& ctx, const Tensor& self, int64_t dim,
                                    bool descending, const Tensor& values, const Tensor& indices) {
  prepare("sort", values, {&self, &indices});
  const int64_t d = wrapped_dim("sort", dim, self.dim());
  sort_along(ctx, "sort", self, d, size_along(self, d), descending, values, indices);
  return {values, indices};
}

std::tuple<Tensor, Tensor> topk_out(const DispatchContext& ctx, const Tensor& self, int64_t k,
                                    int64_t dim, bool largest, bool, const Tensor& values,
                                    const Tensor& indices) {
  prepare("topk", values, {&self, &indices});
  const int64_t d = wrapped_dim("topk", dim, self.dim());
  const int64_t size = size_along(self, d);
  if (k < 0 || k > size) {
    throw sdk::Error("[topk] expected k in [0, " + std::to_string(size) +
                     "], found k = " + std::to_string(k));
  }
  sort_along(ctx, "topk", self, d, k, largest, values, indices);
  return {values, indices};
}

}  // namespace

void register_sort_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&sort_out>("loom::sort.out", key, sdk::dtypes::all);
  r.impl<&topk_out>("loom::topk.out", key, sdk::dtypes::all);
}

}  // namespace loom::gpu
