// The indexing ops on GPU tensors: index_select, gather, scatter (src, value),
// scatter_add and scatter_reduce. Each describes its operands as one StridedSpace whose indexed dim
// has stride 0 for the indexed tensor (the kernel adds index * stride) and queues one kernel, which
// flags an index out of range in the launch's check slot: the op's error, as on the CPU, at the
// next wait for the device (Note [Input errors found by kernels]). Also nonzero (two passes over
// chunks) and index.Tensor (advanced indexing: one gather).
#include <string>
#include <utility>
#include <vector>

#include "../kernels/launch.h"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/reference/advanced_index.hpp"
#include "loom/sdk/reference/scatter_reduce.hpp"
#include "loom/sdk/shape.hpp"
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
InputCheck index_check(const DispatchContext& ctx, const char* op, const Tensor& out, int64_t dim,
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
  const InputCheck check = index_check(ctx, op, out, d, s.sizes[d]);
  check_launch(launch_gather(out.dtype(), index.dtype(),
                             space3(op, sizes, o.strides, index_strides, self_strides), s.sizes[d],
                             s.strides[d], out.data(), index.data(), self.data(), check.slot(),
                             stream_of(ctx)),
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
  const InputCheck check = index_check(ctx, op, out, d, s.sizes[d]);
  check_launch(launch_gather(out.dtype(), index.dtype(),
                             space3(op, i.sizes, o.strides, i.strides, self_strides), s.sizes[d],
                             s.strides[d], out.data(), index.data(), self.data(), check.slot(),
                             stream_of(ctx)),
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
  const InputCheck check = index_check(ctx, op, out, d, o.sizes[d]);
  check_launch(launch_scatter(mode, out.dtype(),
                              space3(op, i.sizes, out_strides, i.strides, src_strides), o.sizes[d],
                              o.strides[d], out.data(), index.data(), src ? src->data() : nullptr,
                              {value.is_floating_point(), value.to_double(), value.to_int()},
                              check.slot(), stream_of(ctx)),
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

// The value a reduction starts from where self is left out (include_self=False): what
// the first src value combined with it gives back.
Scalar reduction_identity(sdk::ScatterReduce kind, int32_t dtype) {
  const bool floating = sdk::dtypes::floating.contains(static_cast<LoomDType>(dtype));
  if (kind == sdk::ScatterReduce::Prod) return Scalar(int64_t{1});
  if (kind != sdk::ScatterReduce::Max && kind != sdk::ScatterReduce::Min) return Scalar(int64_t{0});
  const bool max = kind == sdk::ScatterReduce::Max;
  if (floating) return Scalar(max ? -HUGE_VAL : HUGE_VAL);
  int64_t lowest = 0, highest = 0;
  switch (dtype) {
    case LOOM_DTYPE_UINT8:
      highest = 255;
      break;
    case LOOM_DTYPE_INT8:
      lowest = -128, highest = 127;
      break;
    case LOOM_DTYPE_INT16:
      lowest = INT16_MIN, highest = INT16_MAX;
      break;
    case LOOM_DTYPE_INT32:
      lowest = INT32_MIN, highest = INT32_MAX;
      break;
    default:
      lowest = INT64_MIN, highest = INT64_MAX;
      break;
  }
  return Scalar(max ? lowest : highest);
}

// Note [scatter_reduce] in loom/sdk/reference/scatter_reduce.hpp. Atomic updates combine
// the src values; self's values at the positions reached start from the reduction's
// identity when include_self is false; a mean is the sum divided by each position's count
// (a scatter_add of ones), as PyTorch's CUDA kernel does it.
Tensor scatter_reduce_out(const DispatchContext& ctx, const Tensor& self, int64_t dim,
                          const Tensor& index, const Tensor& src, std::string_view reduce,
                          bool include_self, const Tensor& out) {
  const char* op = "scatter_reduce";
  const sdk::ScatterReduce kind = sdk::scatter_reduce_of(op, reduce);
  const ScatterMode mode = kind == sdk::ScatterReduce::Prod  ? ScatterMode::Multiply
                           : kind == sdk::ScatterReduce::Max ? ScatterMode::Maximum
                           : kind == sdk::ScatterReduce::Min ? ScatterMode::Minimum
                                                             : ScatterMode::Add;
  const Tensor* start = &self;
  if (!include_self) {
    scatter(ctx, op, ScatterMode::Value, self, dim, index, nullptr,
            reduction_identity(kind, out.dtype()), out);
    start = &out;
  }
  scatter(ctx, op, mode, *start, dim, index, &src, Scalar(), out);
  if (kind != sdk::ScatterReduce::Mean) return out;
  Tensor count = include_self ? sdk::ones_like(out) : sdk::zeros_like(out);
  sdk::op::scatter_add_(count, dim, index, sdk::ones_like(src));
  count = sdk::op::clamp_min(count, Scalar(int64_t{1}));  // unreached positions keep self
  std::optional<std::string_view> rounding;
  if (!sdk::dtypes::floating.contains(out.dtype())) rounding = "floor";
  sdk::op::div_out(out, out, count, rounding);
  return out;
}

// The coordinates of self's nonzero elements, [count, ndim] in row-major order: the
// chunks' counts read back (a wait, as in PyTorch: the count is the result's size), their
// exclusive sums sent back, then each chunk writes its rows.
Tensor nonzero_of(const DispatchContext& ctx, const char* op, const Tensor& self) {
  use_device(self.device().index);
  const int64_t ndim = self.dim(), n = self.numel(), blocks = nonzero_blocks(n);
  if (ndim > kMaxDims) {
    throw sdk::Error("[" + std::string(op) +
                     "] the " LOOM_GPU_PLATFORM_NAME " kernel takes at most " +
                     std::to_string(kMaxDims) + " dims, found " + std::to_string(ndim));
  }
  if (n == 0) return sdk::empty({0, ndim}, LOOM_DTYPE_INT64, self.device());
  const Tensor* operands[1] = {&self};
  const StridedSpace<1> space = space_of(op, self, operands);
  const gpuStream_t stream = stream_of(ctx);
  Tensor counts = sdk::empty({blocks}, LOOM_DTYPE_INT64, self.device());
  check_launch(launch_nonzero_count(self.dtype(), space, self.data(),
                                    static_cast<int64_t*>(counts.data()), stream),
               op);
  std::vector<int64_t> offsets(static_cast<size_t>(blocks));
  check(gpuMemcpyAsync(offsets.data(), counts.data(), offsets.size() * sizeof(int64_t),
                       gpuMemcpyDeviceToHost, stream),
        "nonzero: reading the counts");
  check(gpuStreamSynchronize(stream), "nonzero: waiting for the counts");
  int64_t total = 0;
  for (int64_t& c : offsets) total += std::exchange(c, total);
  // pageable memory: staged before the call returns, so `offsets` may go
  check(gpuMemcpyAsync(counts.data(), offsets.data(), offsets.size() * sizeof(int64_t),
                       gpuMemcpyHostToDevice, stream),
        "nonzero: sending the offsets");
  Tensor out = sdk::empty({total, ndim}, LOOM_DTYPE_INT64, self.device());
  if (total == 0 || ndim == 0) return out;
  NonzeroShape shape;
  shape.ndim = static_cast<int32_t>(ndim);
  for (int64_t d = 0; d < ndim; ++d) shape.sizes[d] = self.sizes()[d];
  check_launch(launch_nonzero_write(self.dtype(), space, shape, self.data(),
                                    static_cast<const int64_t*>(counts.data()),
                                    static_cast<int64_t*>(out.data()), stream),
               op);
  return out;
}

Tensor nonzero(const DispatchContext& ctx, const Tensor& self) {
  return nonzero_of(ctx, "nonzero", self);
}

// index.Tensor (Note [Advanced indexing] in loom/sdk/reference/advanced_index.hpp, the layout the
// CPU plugin computes too): bool masks become their nonzero coordinates, each index is
// copied out to the broadcast shape B, then one gather.
Tensor index_tensor(const DispatchContext& ctx, const Tensor& self,
                    const std::vector<Tensor>& raw) {
  const char* op = "index.Tensor";
  use_device(self.device().index);
  struct Entry {
    bool defined = false;
    std::vector<int64_t> shape, strides;
    const int64_t* data = nullptr;
  };
  std::vector<Entry> entries;
  std::vector<Tensor> keep;  // the masks' coordinates and the broadcast indices
  for (size_t i = 0; i < raw.size(); ++i) {
    const Tensor& t = raw[i];
    if (!t.defined()) {
      entries.emplace_back();
      continue;
    }
    if (t.device().type != self.device().type || t.device().index != self.device().index) {
      throw sdk::Error(std::string("[") + op + "] expected index " + std::to_string(i) +
                       " on self's device, found it on another");
    }
    if (t.dtype() == LOOM_DTYPE_BOOL || t.dtype() == LOOM_DTYPE_UINT8) {
      const int64_t first = static_cast<int64_t>(entries.size());
      sdk::check_index_mask(op, i, first, t.sizes(), self.sizes());
      keep.push_back(nonzero_of(ctx, op, t));
      const Tensor& found = keep.back();
      for (int64_t d = 0; d < t.dim(); ++d) {
        entries.push_back(Entry{
            true, {found.sizes()[0]}, {t.dim()}, static_cast<const int64_t*>(found.data()) + d});
      }
      continue;
    }
    // An int64 index tensor: the op library checked the dtypes (Note [Argument checks]).
    entries.push_back(Entry{true, std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
                            std::vector<int64_t>(t.strides().begin(), t.strides().end()),
                            static_cast<const int64_t*>(t.data())});
  }
  std::vector<const std::vector<int64_t>*> index_shapes;
  for (const Entry& e : entries) index_shapes.push_back(e.defined ? &e.shape : nullptr);
  const sdk::AdvancedIndexLayout layout =
      sdk::advanced_index_layout(self.sizes(), index_shapes, op);
  if (layout.indexed.empty()) return contiguous(ctx, op, self);  // only None entries: a copy
  const std::vector<int64_t>& indexed = layout.indexed;
  const std::vector<int64_t>& bshape = layout.broadcast_shape;
  const std::vector<int64_t>& out_shape = layout.out_shape;
  const std::vector<int64_t>& source_dim = layout.source_dim;
  // B's row-major strides; each index copied out to B's shape (broadcast dims stride 0).
  std::vector<int64_t> b_strides(bshape.size(), 0);
  for (int64_t k = static_cast<int64_t>(bshape.size()) - 1, s = 1; k >= 0; --k) {
    b_strides[k] = s;
    s *= bshape[k];
  }
  if (indexed.size() > static_cast<size_t>(kMaxDims)) {
    throw sdk::Error(
        std::string("[") + op + "] the " LOOM_GPU_PLATFORM_NAME " kernel takes at most " +
        std::to_string(kMaxDims) + " index tensors, found " + std::to_string(indexed.size()));
  }
  AdvancedIndices a;
  a.count = static_cast<int32_t>(indexed.size());
  std::vector<InputCheck> checks;  // marked launched when they go, after the launch
  checks.reserve(indexed.size());
  for (size_t k = 0; k < indexed.size(); ++k) {
    const int64_t d = indexed[k];
    const Entry& e = entries[d];
    std::vector<int64_t> from(bshape.size(), 0);
    for (size_t j = 0; j < e.shape.size(); ++j) {
      if (e.shape[j] != 1) from[bshape.size() - e.shape.size() + j] = e.strides[j];
    }
    keep.push_back(sdk::empty(bshape, LOOM_DTYPE_INT64, self.device()));
    const int64_t* copy_strides[2] = {b_strides.data(), from.data()};
    StridedSpace<2> copy_space;
    if (!make_strided_space<2>(bshape.data(), static_cast<int>(bshape.size()), copy_strides,
                               &copy_space)) {
      throw sdk::Error(std::string("[") + op +
                       "] too many index dims for the " LOOM_GPU_PLATFORM_NAME " kernels");
    }
    check_launch(launch_copy(LOOM_DTYPE_INT64, LOOM_DTYPE_INT64, copy_space, keep.back().data(),
                             e.data, stream_of(ctx)),
                 op);
    a.index[k] = static_cast<const int64_t*>(keep.back().data());
    a.size[k] = self.sizes()[d];
    a.stride[k] = self.strides()[d];
    checks.push_back(input_check(ctx, self, [d, size = self.sizes()[d]](int64_t v) {
      return "[loom::index.Tensor] index " + std::to_string(v) + " is out of range for dim " +
             std::to_string(d) + " of size " + std::to_string(size);
    }));
    a.check[k] = checks.back().slot();
  }
  Tensor out = sdk::empty(out_shape, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  std::vector<int64_t> self_part(out_shape.size(), 0), b_part(out_shape.size(), 0);
  for (size_t o = 0, b = 0; o < out_shape.size(); ++o) {
    if (source_dim[o] >= 0) {
      self_part[o] = self.strides()[source_dim[o]];
    } else {
      b_part[o] = b_strides[b++];
    }
  }
  check_launch(
      launch_advanced_index(
          self.dtype(),
          space3(op, out_shape, std::vector<int64_t>(out.strides().begin(), out.strides().end()),
                 self_part, b_part),
          a, out.data(), self.data(), stream_of(ctx)),
      op);
  return out;
}

}  // namespace

void register_indexing_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&index_select_out>("loom::index_select.out", key, all);
  r.impl<&gather_out>("loom::gather.out", key, all);
  r.impl<&scatter_src_out>("loom::scatter.src_out", key, all);
  r.impl<&scatter_value_out>("loom::scatter.value_out", key, all);
  r.impl<&nonzero>("loom::nonzero", key, all);
  r.impl<&index_tensor>("loom::index.Tensor", key, all);
  // Atomic adds where the hardware has them, compare-and-swap loops otherwise (the 8- and
  // 16-bit integers); float atomics make the sum's order, and so its last bits, depend on
  // timing, as in PyTorch's CUDA scatter_add. scatter_reduce's mean counts with a
  // scatter_add of its own dtype.
  r.impl<&scatter_add_out>("loom::scatter_add.out", key, numeric);
  r.impl<&scatter_reduce_out>("loom::scatter_reduce.two_out", key, numeric);
}

}  // namespace loom::gpu
