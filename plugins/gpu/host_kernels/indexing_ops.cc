// The indexing ops on GPU tensors: index_select, gather, scatter (src, value) and
// scatter_add. Each describes its operands as one StridedSpace whose indexed dim has
// stride 0 for the indexed tensor (the kernel adds index * stride), queues one kernel, and
// reads the status word back so an index out of range is the op's error, as on the CPU
// (a synchronisation per call, as PyTorch's device-side checks cost one on failure).
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Scalar;
using sdk::Tensor;

// A tensor's sizes and strides, one dim of size 1 for a 0-dim tensor.
struct Layout {
  std::vector<int64_t> sizes, strides;
};
Layout layout_of(const Tensor& t) {
  if (t.dim() == 0) return {{1}, {1}};
  return {std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
          std::vector<int64_t>(t.strides().begin(), t.strides().end())};
}

StridedSpace<3> space3(const char* op, const std::vector<int64_t>& sizes,
                       const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                       const std::vector<int64_t>& c) {
  const int64_t* strides[3] = {a.data(), b.data(), c.data()};
  StridedSpace<3> space;
  if (!make_strided_space<3>(sizes.data(), static_cast<int>(sizes.size()), strides, &space)) {
    throw sdk::Error("[" + std::string(op) +
                     "] too many dims for the " LOOM_GPU_PLATFORM_NAME " indexing kernel");
  }
  return space;
}

// The launch's input check: an index outside [0, size) of dim `dim` is the op's error.
int64_t* index_check(const DispatchContext& ctx, const char* op, const Tensor& out, int64_t dim,
                     int64_t size) {
  return input_check(ctx, out, [op = std::string(op), dim, size](int64_t index) {
    return "[loom::" + op + "] index " + std::to_string(index) + " is out of range for dim " +
           std::to_string(dim) + " of size " + std::to_string(size);
  });
}

Tensor index_select_out(const DispatchContext& ctx, const Tensor& self, int64_t dim,
                        const Tensor& index, const Tensor& out) {
  const char* op = "index_select";
  prepare(op, out, {&self, &index});
  const int64_t d = wrapped_dim(op, dim, self.dim());
  if (index.dim() > 1) {
    throw sdk::Error("[index_select] expected a 0-dim or 1-dim index, found " +
                     std::to_string(index.dim()) + " dims");
  }
  const Layout s = layout_of(self), o = layout_of(out);
  std::vector<int64_t> sizes = s.sizes;
  sizes[d] = index.numel();
  if (out.numel() == 0) return out;
  std::vector<int64_t> index_strides(sizes.size(), 0), self_strides = s.strides;
  index_strides[d] = index.dim() == 0 ? 0 : index.strides()[0];
  self_strides[d] = 0;
  check_launch(launch_gather(out.dtype(), index.dtype(),
                             space3(op, sizes, o.strides, index_strides, self_strides), s.sizes[d],
                             s.strides[d], out.data(), index.data(), self.data(),
                             index_check(ctx, op, out, d, s.sizes[d]), stream_of(ctx)),
               op);
  return out;
}

Tensor gather_out(const DispatchContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                  bool, const Tensor& out) {
  const char* op = "gather";
  prepare(op, out, {&self, &index});
  const int64_t d = wrapped_dim(op, dim, self.dim());
  if (index.numel() == 0) return out;
  const Layout s = layout_of(self), i = layout_of(index), o = layout_of(out);
  if (i.sizes.size() != s.sizes.size()) {
    throw sdk::Error("[gather] expected index with as many dims as self (" +
                     std::to_string(self.dim()) + "), found " + std::to_string(index.dim()));
  }
  std::vector<int64_t> self_strides = s.strides;
  self_strides[d] = 0;
  check_launch(launch_gather(out.dtype(), index.dtype(),
                             space3(op, i.sizes, o.strides, i.strides, self_strides), s.sizes[d],
                             s.strides[d], out.data(), index.data(), self.data(),
                             index_check(ctx, op, out, d, s.sizes[d]), stream_of(ctx)),
               op);
  return out;
}

// out = self (unless out is self), then the scatter into out.
Tensor scatter(const DispatchContext& ctx, const char* op, ScatterMode mode, const Tensor& self,
               int64_t dim, const Tensor& index, const Tensor* src, const Scalar& value,
               const Tensor& out) {
  prepare(op, out, {&self, &index});
  if (src) prepare(op, out, {src});
  if (index.dtype() != LOOM_DTYPE_INT64) {
    throw sdk::Error("[" + std::string(op) + "] expected an int64 index, found dtype " +
                     std::to_string(index.dtype()));
  }
  const int64_t d = wrapped_dim(op, dim, self.dim());
  if (out.data() != self.data()) {
    const Tensor* operands[2] = {&out, &self};
    check_launch(launch_copy(out.dtype(), self.dtype(), space_of(op, out, operands), out.data(),
                             self.data(), stream_of(ctx)),
                 op);
  }
  if (index.numel() == 0) return out;
  const Layout o = layout_of(out), i = layout_of(index);
  if (i.sizes.size() != o.sizes.size()) {
    throw sdk::Error("[" + std::string(op) + "] expected index with as many dims as self (" +
                     std::to_string(self.dim()) + "), found " + std::to_string(index.dim()));
  }
  std::vector<int64_t> out_strides = o.strides;
  out_strides[d] = 0;
  const std::vector<int64_t> src_strides = src ? layout_of(*src).strides : i.strides;
  check_launch(launch_scatter(mode, out.dtype(),
                              space3(op, i.sizes, out_strides, i.strides, src_strides), o.sizes[d],
                              o.strides[d], out.data(), index.data(), src ? src->data() : nullptr,
                              {value.is_floating_point(), value.to_double(), value.to_int()},
                              index_check(ctx, op, out, d, o.sizes[d]), stream_of(ctx)),
               op);
  return out;
}

Tensor scatter_src_out(const DispatchContext& ctx, const Tensor& self, int64_t dim,
                       const Tensor& index, const Tensor& src, const Tensor& out) {
  return scatter(ctx, "scatter", ScatterMode::Source, self, dim, index, &src, Scalar(), out);
}

Tensor scatter_value_out(const DispatchContext& ctx, const Tensor& self, int64_t dim,
                         const Tensor& index, Scalar value, const Tensor& out) {
  return scatter(ctx, "scatter", ScatterMode::Value, self, dim, index, nullptr, value, out);
}

Tensor scatter_add_out(const DispatchContext& ctx, const Tensor& self, int64_t dim,
                       const Tensor& index, const Tensor& src, const Tensor& out) {
  return scatter(ctx, "scatter_add", ScatterMode::Add, self, dim, index, &src, Scalar(), out);
}

}  // namespace

void register_indexing_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&index_select_out>("loom::index_select.out", key, all);
  r.impl<&gather_out>("loom::gather.out", key, all);
  r.impl<&scatter_src_out>("loom::scatter.src_out", key, all);
  r.impl<&scatter_value_out>("loom::scatter.value_out", key, all);
  // Atomic adds: the floating dtypes and int32/64 (float atomics make the sum's order, and
  // so its last bits, depend on timing, as in PyTorch's CUDA scatter_add).
  r.impl<&scatter_add_out>("loom::scatter_add.out", key,
                           floating | sdk::DTypeSet{LOOM_DTYPE_INT32, LOOM_DTYPE_INT64});
}

}  // namespace loom::gpu
