// The view family's kernels: one metadata-only kernel per view op (ops/schemas/view.def),
// registered for every backend, that makes a tensor sharing self's storage; and resize_,
// which changes self's own sizes (Note [resize_]).
//
// Note [View ops]
// ~~~~~~~~~~~~~~~
// Views are dispatcher ops, so every functionality key sees them: autograd records
// `transpose` to differentiate through it, the profiler and the tracer list it, and boxed
// callers and plugins create views through the ABI (`call_op` on `loom::transpose.int`
// returns a tensor aliasing its argument). Their kernels compute sizes, strides and a
// storage offset only, which is the same on every device, so the op library registers
// them as CompositeExplicit kernels: the kernel of every backend key, the meta device and
// vendor backends included, and never a decomposition that a functionality key would
// look through. A backend registers nothing for a view.
//
// The kernels call TensorBase's view methods, which the core keeps for itself (the
// structured-op preparation broadcasts its inputs with TensorBase::expand below the
// functionality keys, where an op call would re-enter the dispatcher). loom::Tensor's
// methods of the same names are the generated op calls, so app code always dispatches.
#include <algorithm>
#include <vector>

#include "../decompositions/decomposition.h"
#include "loom/core/error.h"
#include "loom/core/int_list.h"
#include "loom/core/memory_format.h"
#include "loom/core/type_promotion.h"
#include "view_kernel.h"

namespace loom::ops {
namespace {

Tensor view_shape(const Tensor& self, IntList size) {
  return self.TensorBase::view(size);
}

Tensor as_strided_view(const Tensor& self, IntList size, IntList stride,
                       std::optional<int64_t> storage_offset) {
  return self.TensorBase::as_strided(size, stride, storage_offset);
}

// The one view without a base (Note [View bases] in core/src/tensor_base.cc): detach()
// and the outputs autograd saves are aliases.
Tensor alias_view(const Tensor& self) {
  return self.TensorBase::detached_alias();
}

Tensor permute_view(const Tensor& self, IntList dims) {
  return self.TensorBase::permute(dims);
}

Tensor transpose_view(const Tensor& self, int64_t dim0, int64_t dim1) {
  return self.TensorBase::transpose(dim0, dim1);
}

Tensor t_view(const Tensor& self) {
  return self.TensorBase::t();
}

// `implicit` only tells autograd the expansion came from broadcasting; the view is the same.
Tensor expand_view(const Tensor& self, IntList size, bool /*implicit*/) {
  return self.TensorBase::expand(size);
}

Tensor slice_view(const Tensor& self, int64_t dim, std::optional<int64_t> start,
                  std::optional<int64_t> end, int64_t step) {
  return self.TensorBase::slice(dim, start, end, step);
}

Tensor narrow_view(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  return self.TensorBase::narrow(dim, start, length);
}

Tensor select_view(const Tensor& self, int64_t dim, int64_t index) {
  return self.TensorBase::select(dim, index);
}

Tensor squeeze_all(const Tensor& self) {
  return self.TensorBase::squeeze();
}

Tensor squeeze_dim(const Tensor& self, int64_t dim) {
  return self.TensorBase::squeeze(dim);
}

Tensor unsqueeze_view(const Tensor& self, int64_t dim) {
  return self.TensorBase::unsqueeze(dim);
}

Tensor view_as_real_view(const Tensor& self) {
  return self.TensorBase::view_as_real();
}

Tensor view_as_complex_view(const Tensor& self) {
  return self.TensorBase::view_as_complex();
}

Tensor diagonal_view(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  return self.TensorBase::diagonal(offset, dim1, dim2);
}

// Splits dim `dim` into `sizes` (one may be -1): always a view, the new dims' strides
// being the old stride times the sizes after them.
Tensor unflatten_view(const Tensor& self, int64_t dim, IntList sizes_list) {
  constexpr const char* op = "loom::unflatten.int";
  if (self.dim() == 0) fail(op, "cannot unflatten a 0-dim tensor");
  const int64_t d = wrap_dim(dim, self.dim(), op);
  std::span<const int64_t> sizes = sizes_list.span();
  if (sizes.empty()) fail(op, "expected a non-empty list of sizes for dim ", d);
  const int64_t length = self.sizes()[d];
  std::vector<int64_t> resolved(sizes.begin(), sizes.end());
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (infer >= 0) fail(op, "only one size can be -1, found ", shape_to_string(sizes));
      infer = static_cast<int64_t>(i);
    } else if (sizes[i] < 0) {
      fail(op, "invalid size ", sizes[i], " in ", shape_to_string(sizes));
    } else {
      known *= sizes[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || length % known != 0) {
      fail(op, "sizes ", shape_to_string(sizes), " cannot split dim ", d, " of size ", length);
    }
    resolved[static_cast<size_t>(infer)] = length / known;
  } else if (known != length) {
    fail(op, "sizes ", shape_to_string(sizes), " multiply to ", known, ", not to the size ", length,
         " of dim ", d);
  }
  DimVector new_sizes(self.sizes().begin(), self.sizes().begin() + d);
  DimVector new_strides(self.strides().begin(), self.strides().begin() + d);
  DimVector split_strides(resolved.size());
  int64_t stride = self.strides()[d];
  for (size_t i = resolved.size(); i-- > 0;) {
    split_strides[i] = stride;
    stride *= std::max<int64_t>(resolved[i], 1);
  }
  new_sizes.insert(new_sizes.end(), resolved.begin(), resolved.end());
  new_strides.insert(new_strides.end(), split_strides.begin(), split_strides.end());
  new_sizes.insert(new_sizes.end(), self.sizes().begin() + d + 1, self.sizes().end());
  new_strides.insert(new_strides.end(), self.strides().begin() + d + 1, self.strides().end());
  return self.TensorBase::as_strided(new_sizes, new_strides, self.storage_offset());
}

// Note [resize_]
// ~~~~~~~~~~~~~~
// resize_ gives self new sizes in place, as PyTorch's does: the storage offset stays, the
// strides become dense (row-major, or channels last for 4 dims), and the storage grows
// when it is too small (every tensor sharing it sees the new block; the old bytes come
// first, so a row-major tensor keeps its leading elements) and never shrinks. New
// elements are uninitialized. The kernel changes metadata only, the same on every
// device, so it is registered for every backend as the views are ("metadata" tag).
// Autograd has no formula for it: a tensor that requires grad is refused there, as
// PyTorch refuses to resize one.
Tensor resize(const Tensor& self, IntList size, std::optional<int64_t> memory_format) {
  constexpr const char* op = "loom::resize_";
  namespace code = memory_format_code;
  for (int64_t s : size.span()) {
    if (s < 0) fail(op, "expected non-negative sizes, found ", shape_to_string(size.span()));
  }
  const int64_t format = memory_format.value_or(code::kContiguous);
  if (format == code::kContiguous) {
    self.impl()->resize_contiguous(size.span());
  } else if (format == code::kChannelsLast) {
    if (size.size() != 4) fail(op, "expected 4 sizes for torch.channels_last, found ", size.size());
    self.impl()->resize_dense(size.span(), strides_for(size.span(), MemoryFormat::ChannelsLast));
  } else {
    fail(op,
         "expected memory_format None, torch.contiguous_format (1) or torch.channels_last (2), "
         "found ",
         format);
  }
  return self;
}

// Windows of `size` elements every `step` along `dimension`, as a new last dim.
Tensor unfold_view(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  constexpr const char* op = "loom::unfold";
  const int64_t ndim = std::max<int64_t>(self.dim(), 1);
  const int64_t d = wrap_dim(dimension, ndim, op);
  const int64_t length = self.dim() == 0 ? 1 : self.sizes()[d];
  const int64_t stride = self.dim() == 0 ? 1 : self.strides()[d];
  if (size < 0) fail(op, "expected a window size >= 0, found ", size);
  if (size > length) {
    fail(op, "window size ", size, " exceeds the size ", length, " of dim ", d);
  }
  if (step <= 0) fail(op, "expected a positive step, found ", step);
  DimVector new_sizes(self.sizes().begin(), self.sizes().end());
  DimVector new_strides(self.strides().begin(), self.strides().end());
  if (self.dim() > 0) {
    new_sizes[d] = (length - size) / step + 1;
    new_strides[d] = stride * step;
  }
  new_sizes.push_back(size);
  new_strides.push_back(stride);
  return self.TensorBase::as_strided(new_sizes, new_strides, self.storage_offset());
}

const DecompositionEntry kViewKernels[] = {
    {"loom::view", decomposition<&view_shape>()},
    {"loom::as_strided", decomposition<&as_strided_view>()},
    {"loom::alias", decomposition<&alias_view>()},
    {"loom::permute", decomposition<&permute_view>()},
    {"loom::transpose.int", decomposition<&transpose_view>()},
    {"loom::t", decomposition<&t_view>()},
    {"loom::expand", decomposition<&expand_view>()},
    {"loom::slice.Tensor", decomposition<&slice_view>()},
    {"loom::narrow", decomposition<&narrow_view>()},
    {"loom::select.int", decomposition<&select_view>()},
    {"loom::squeeze", decomposition<&squeeze_all>()},
    {"loom::squeeze.dim", decomposition<&squeeze_dim>()},
    {"loom::unsqueeze", decomposition<&unsqueeze_view>()},
    {"loom::diagonal", decomposition<&diagonal_view>()},
    {"loom::unflatten.int", decomposition<&unflatten_view>()},
    {"loom::unfold", decomposition<&unfold_view>()},
    {"loom::view_as_real", decomposition<&view_as_real_view>()},
    {"loom::view_as_complex", decomposition<&view_as_complex_view>()},
    {"loom::resize_", decomposition<&resize>()},
};

}  // namespace

LoomKernelFn find_view_kernel(std::string_view op) {
  for (const DecompositionEntry& e : kViewKernels) {
    if (e.op == op) return e.kernel;
  }
  return nullptr;
}

}  // namespace loom::ops
