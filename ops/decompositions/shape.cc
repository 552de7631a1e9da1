// Decompositions of the shape ops: stack (unsqueeze views, then cat), the views split,
// split_with_sizes, chunk, flatten and reshape (a copy only when the strides allow no
// view), pad and constant_pad_nd, select_scatter and slice_scatter (src copied into a
// view of a clone of self), and pixel_shuffle / pixel_unshuffle (a reshape, a permute and
// a reshape); the sym_* size queries and sym_is_contiguous.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "decomposition.h"
#include "loom/core/memory_format.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

Tensor stack_tensors(const std::vector<Tensor>& tensors, int64_t dim) {
  constexpr const char* op = "loom::stack";
  if (tensors.empty()) fail(op, "expected a non-empty list of tensors");
  const Tensor& first = tensors[0];
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (!std::equal(first.sizes().begin(), first.sizes().end(), tensors[i].sizes().begin(),
                    tensors[i].sizes().end())) {
      fail(op, "expected tensors of shape ", shape_to_string(first.sizes()),
           " like tensor 0, found ", shape_to_string(tensors[i].sizes()), " in tensor ", i);
    }
  }
  const int64_t d = wrap_dim(dim, first.dim() + 1, op);
  std::vector<Tensor> pieces;
  pieces.reserve(tensors.size());
  for (const Tensor& t : tensors) pieces.push_back(t.unsqueeze(d));
  return loom::cat(pieces, d);
}

// Views of `self` along `dim` of the given sizes, back to back.
std::vector<Tensor> views_of_sizes(const Tensor& self, int64_t dim,
                                   const std::vector<int64_t>& sizes) {
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(self.narrow(dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split_views(const Tensor& self, int64_t split_size, int64_t dim) {
  constexpr const char* op = "loom::split.Tensor";
  if (self.dim() == 0) fail(op, "expected a tensor with at least one dim, found 0 dims");
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const int64_t size = self.sizes()[d];
  if (split_size < 0 || (split_size == 0 && size != 0)) {
    fail(op, "expected a positive split_size for dim ", d, " of size ", size, ", found ",
         split_size);
  }
  std::vector<int64_t> sizes;
  if (size == 0) {
    sizes.push_back(0);
  } else {
    for (int64_t start = 0; start < size; start += split_size) {
      sizes.push_back(std::min(split_size, size - start));
    }
  }
  return views_of_sizes(self, d, sizes);
}

std::vector<Tensor> chunk_views(const Tensor& self, int64_t chunks, int64_t dim) {
  constexpr const char* op = "loom::chunk";
  if (self.dim() == 0) fail(op, "expected a tensor with at least one dim, found 0 dims");
  if (chunks <= 0) fail(op, "expected a positive number of chunks, found ", chunks);
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const int64_t size = self.sizes()[d];
  if (size == 0) return views_of_sizes(self, d, std::vector<int64_t>(chunks, 0));
  return split_views(self, (size + chunks - 1) / chunks, d);
}

// The view is made by the view op, not by TensorBase, so every functionality key above
// the backend (autograd's among them) sees it.
Tensor reshape_view_or_copy(const Tensor& self, const IntList& shape) {
  if (self.reshape_as_view(shape).has_value()) return self.view(shape);
  return loom::contiguous(self).view(shape);
}

Tensor flatten_dims(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  constexpr const char* op = "loom::flatten.using_ints";
  const int64_t ndim = std::max<int64_t>(self.dim(), 1);
  const int64_t start = wrap_dim(start_dim, ndim, op);
  const int64_t end = wrap_dim(end_dim, ndim, op);
  if (start > end) {
    fail(op, "expected start_dim ", start, " to come no later than end_dim ", end);
  }
  if (self.dim() == 0) return reshape_view_or_copy(self, std::vector<int64_t>{1});
  if (start == end) return self;
  std::vector<int64_t> shape;
  int64_t flat = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d < start || d > end) {
      shape.push_back(self.sizes()[d]);
    } else {
      flat *= self.sizes()[d];
      if (d == end) shape.push_back(flat);
    }
  }
  return reshape_view_or_copy(self, IntList(std::span<const int64_t>(shape)));
}

// Note [pad]
// ~~~~~~~~~~
// `pad` lists (before, after) pairs from the last dim backwards. Constant mode fills a
// new tensor with the value and copies the input's overlap into a narrowed view of it
// (negative pads crop). The other modes pad one dim at a time (so corners come from the
// already padded dims), copying single slices: reflect mirrors without repeating the edge,
// replicate repeats the edge, circular wraps around.
Tensor pad_constant(const Tensor& self, std::span<const int64_t> pad, double value) {
  const int64_t ndim = self.dim();
  DimVector sizes(self.sizes().begin(), self.sizes().end());
  Tensor source = self;
  DimVector out_start(static_cast<size_t>(ndim), 0);
  bool empty_overlap = false;
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    const int64_t d = ndim - 1 - static_cast<int64_t>(p);
    const int64_t before = pad[2 * p], after = pad[2 * p + 1];
    const int64_t size = self.size(d);
    sizes[d] = size + before + after;
    if (sizes[d] < 0) {
      fail("loom::pad", "padding (", before, ", ", after, ") of dim ", d, " of size ", size,
           " gives a negative size ", sizes[d]);
    }
    const int64_t crop_before = std::max<int64_t>(-before, 0);
    const int64_t length = size - crop_before - std::max<int64_t>(-after, 0);
    if (length <= 0) {
      empty_overlap = true;
      continue;
    }
    source = source.narrow(d, crop_before, length);
    out_start[d] = std::max<int64_t>(before, 0);
  }
  Tensor out = empty(sizes, self.dtype(), self.device());
  loom::fill_(out, Scalar(value));
  if (empty_overlap || source.numel() == 0) return out;
  Tensor target = out;
  for (int64_t d = 0; d < ndim; ++d) target = target.narrow(d, out_start[d], source.size(d));
  loom::copy_(target, source);
  return out;
}

Tensor pad_dim(const Tensor& self, int64_t d, int64_t before, int64_t after,
               std::string_view mode) {
  const int64_t size = self.size(d);
  const bool reflect = mode == "reflect", circular = mode == "circular";
  if (before < 0 || after < 0) {
    fail("loom::pad", "expected non-negative padding in mode '", mode, "', found (", before, ", ",
         after, ") for dim ", d);
  }
  const int64_t limit = reflect ? size - 1 : circular ? size : (size > 0 ? INT64_MAX : 0);
  if (before > limit || after > limit) {
    fail("loom::pad", "padding (", before, ", ", after, ") of dim ", d, " of size ", size,
         " is too large for mode '", mode, "' (at most ", limit, ")");
  }
  DimVector sizes(self.sizes().begin(), self.sizes().end());
  sizes[d] = size + before + after;
  Tensor out = empty(sizes, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  loom::copy_(out.narrow(d, before, size), self);
  for (int64_t i = 0; i < before; ++i) {
    int64_t src = reflect ? before - i : circular ? size - before + i : 0;
    loom::copy_(out.narrow(d, i, 1), self.narrow(d, src, 1));
  }
  for (int64_t j = 0; j < after; ++j) {
    int64_t src = reflect ? size - 2 - j : circular ? j : size - 1;
    loom::copy_(out.narrow(d, before + size + j, 1), self.narrow(d, src, 1));
  }
  return out;
}

Tensor pad(const Tensor& self, const IntList& pad_list, std::string_view mode,
           std::optional<double> value) {
  std::span<const int64_t> pad = pad_list.span();
  if (pad.size() % 2 != 0 || static_cast<int64_t>(pad.size()) > 2 * self.dim()) {
    fail("loom::pad", "expected an even number of pads, at most 2 per dim (", 2 * self.dim(),
         "), found ", pad.size());
  }
  if (mode == "constant") return pad_constant(self, pad, value.value_or(0.0));
  if (mode != "reflect" && mode != "replicate" && mode != "circular") {
    fail("loom::pad", "expected mode 'constant', 'reflect', 'replicate' or 'circular', found '",
         mode, "'");
  }
  if (value && *value != 0.0) {
    fail("loom::pad", "expected no value in mode '", mode, "', found ", *value);
  }
  Tensor out = self;
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    out = pad_dim(out, self.dim() - 1 - static_cast<int64_t>(p), pad[2 * p], pad[2 * p + 1], mode);
  }
  return out.is_alias_of(self) ? loom::clone(self) : out;
}

// split_with_sizes: the sizes must cover dim exactly, as in PyTorch.
std::vector<Tensor> split_sizes_views(const Tensor& self, const IntList& split_sizes, int64_t dim) {
  constexpr const char* op = "loom::split_with_sizes";
  if (self.dim() == 0) fail(op, "expected a tensor with at least one dim, found 0 dims");
  const int64_t d = wrap_dim(dim, self.dim(), op);
  std::vector<int64_t> sizes(split_sizes.span().begin(), split_sizes.span().end());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail(op, "expected sizes >= 0, found ", s, " in ", shape_to_string(sizes));
    total += s;
  }
  if (total != self.size(d)) {
    fail(op, "expected split_sizes to sum to ", self.size(d), " (the size of dim ", d, "), found ",
         shape_to_string(sizes), " summing to ", total);
  }
  return views_of_sizes(self, d, sizes);
}

Tensor constant_pad_nd(const Tensor& self, const IntList& pad_list, const Scalar& value) {
  return loom::pad(self, pad_list, "constant", value.to_double());
}

// A copy of self with src written over the view `view_of(copy)`; src must have the view's
// shape (no broadcasting, as in PyTorch) and converts to self's dtype.
template <typename View>
Tensor scatter_into_copy(const char* op, const Tensor& self, const Tensor& src, View view_of) {
  Tensor out = loom::clone(self);
  Tensor target = view_of(out);
  if (!same_shape(src.sizes(), target.sizes())) {
    fail(op, "expected src of the slice's shape ", shape_to_string(target.sizes()), ", found ",
         shape_to_string(src.sizes()));
  }
  loom::copy_(target, src);
  return out;
}

Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index) {
  return scatter_into_copy("loom::select_scatter", self, src,
                           [&](const Tensor& t) { return loom::select(t, dim, index); });
}

Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim,
                     std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  return scatter_into_copy("loom::slice_scatter", self, src,
                           [&](const Tensor& t) { return loom::slice(t, dim, start, end, step); });
}

// [*, C r^2, H, W] <-> [*, C, H r, W r]: `shuffle` moves channel blocks into space.
Tensor pixel_rearrange(const Tensor& self, int64_t factor, bool shuffle) {
  const char* op = shuffle ? "loom::pixel_shuffle" : "loom::pixel_unshuffle";
  if (self.dim() < 3) {
    fail(op, "expected an input of at least 3 dims [*, C, H, W], found ", self.dim());
  }
  if (factor <= 0) fail(op, "expected a positive factor, found ", factor);
  const auto n = static_cast<size_t>(self.dim());
  std::vector<int64_t> batch(self.sizes().begin(), self.sizes().end() - 3);
  const int64_t c = self.sizes()[n - 3], h = self.sizes()[n - 2], w = self.sizes()[n - 1];
  const int64_t r = factor;
  std::vector<int64_t> split = batch, order, result = batch;
  for (size_t i = 0; i < batch.size(); ++i) order.push_back(static_cast<int64_t>(i));
  const auto b = static_cast<int64_t>(batch.size());
  if (shuffle) {
    if (c % (r * r) != 0) {
      fail(op, "expected channels divisible by the factor squared (", r * r, "), found ", c);
    }
    split.insert(split.end(), {c / (r * r), r, r, h, w});        // [*, C, r, r, H, W]
    order.insert(order.end(), {b, b + 3, b + 1, b + 4, b + 2});  // [*, C, H, r, W, r]
    result.insert(result.end(), {c / (r * r), h * r, w * r});
  } else {
    if (h % r != 0 || w % r != 0) {
      fail(op, "expected height and width divisible by the factor ", r, ", found ", h, " and ", w);
    }
    split.insert(split.end(), {c, h / r, r, w / r, r});          // [*, C, H, r, W, r]
    order.insert(order.end(), {b, b + 2, b + 4, b + 1, b + 3});  // [*, C, r, r, H, W]
    result.insert(result.end(), {c * r * r, h / r, w / r});
  }
  return loom::reshape(loom::reshape(self, split).permute(order), result);
}

Tensor pixel_shuffle(const Tensor& self, int64_t upscale_factor) {
  return pixel_rearrange(self, upscale_factor, /*shuffle=*/true);
}

Tensor pixel_unshuffle(const Tensor& self, int64_t downscale_factor) {
  return pixel_rearrange(self, downscale_factor, /*shuffle=*/false);
}

// The reflection and replication pads of Core ATen IR: pad in that mode, for inputs of
// the rank the op names (a batch dim optional: 2-D or 3-D for the 1-D pad).
template <int Spatial, bool Reflect>
Tensor mode_pad(const Tensor& self, const IntList& padding) {
  const char* op = Reflect ? (Spatial == 1   ? "loom::reflection_pad1d"
                              : Spatial == 2 ? "loom::reflection_pad2d"
                                             : "loom::reflection_pad3d")
                           : (Spatial == 2 ? "loom::replication_pad2d" : "loom::replication_pad3d");
  if (self.dim() != Spatial + 1 && self.dim() != Spatial + 2) {
    fail(op, "expected a ", Spatial + 1, "-D or ", Spatial + 2, "-D input, found ",
         shape_to_string(self.sizes()));
  }
  if (padding.size() != 2 * Spatial) {
    fail(op, "expected ", 2 * Spatial, " padding values, found ", padding.size());
  }
  return loom::pad(self, padding, Reflect ? "reflect" : "replicate", std::nullopt);
}

// The sym_* size queries: a graph's sizes as numbers (PyTorch's sym_size.int and kin).
int64_t wrapped_dim(const char* op, const Tensor& self, int64_t dim) {
  int64_t rank = self.dim();
  if (dim < -std::max<int64_t>(rank, 1) || dim >= std::max<int64_t>(rank, 1)) {
    fail(op, "dimension ", dim, " is out of range for a ", rank, "-dim tensor (expected [",
         -std::max<int64_t>(rank, 1), ", ", std::max<int64_t>(rank, 1) - 1, "])");
  }
  return dim < 0 ? dim + rank : dim;
}

int64_t sym_size(const Tensor& self, int64_t dim) {
  if (self.dim() == 0) fail("loom::sym_size.int", "a 0-dim tensor has no sizes");
  return self.sizes()[wrapped_dim("loom::sym_size.int", self, dim)];
}

int64_t sym_stride(const Tensor& self, int64_t dim) {
  if (self.dim() == 0) fail("loom::sym_stride.int", "a 0-dim tensor has no strides");
  return self.strides()[wrapped_dim("loom::sym_stride.int", self, dim)];
}

int64_t sym_numel(const Tensor& self) {
  return self.numel();
}

int64_t sym_storage_offset(const Tensor& self) {
  return self.storage_offset();
}

// Whether self is dense in the memory format `code` (Note [Memory format codes]): row-major
// for contiguous_format, NHWC for channels_last (4 dims), NDHWC for channels_last_3d (5).
bool sym_is_contiguous(const Tensor& self, int64_t code) {
  const char* op = "loom::sym_is_contiguous";
  namespace mf = memory_format_code;
  if (code == mf::kContiguous) return self.is_contiguous();
  if (code == mf::kChannelsLast) {
    return self.dim() == 4 && self.TensorBase::is_contiguous(MemoryFormat::ChannelsLast);
  }
  if (code != mf::kChannelsLast3d) {
    fail(op,
         "expected memory_format torch.contiguous_format (1), torch.channels_last (2) or "
         "torch.channels_last_3d (3), found ",
         code);
  }
  if (self.dim() != 5) return false;
  // Innermost first: C, W, H, D, N; a size-1 dim may have any stride.
  int64_t expected = 1;
  for (int64_t d : {1, 4, 3, 2, 0}) {
    if (self.size(d) != 1 && self.stride(d) != expected) return false;
    expected *= self.size(d);
  }
  return true;
}

void assert_tensor_metadata(const Tensor& a, const OptionalIntList& size,
                            const OptionalIntList& stride, std::optional<ScalarType> dtype,
                            std::optional<Device> device, std::optional<int64_t> layout) {
  const char* op = "loom::_assert_tensor_metadata";
  if (size && !same_shape(a.sizes(), size->span())) {
    fail(op, "expected a tensor of shape ", shape_to_string(size->span()), ", found ",
         shape_to_string(a.sizes()));
  }
  if (dtype && a.dtype() != *dtype) {
    fail(op, "expected a tensor of dtype ", scalar_type_name(*dtype), ", found ",
         scalar_type_name(a.dtype()));
  }
  if (layout && *layout != kStridedLayoutCode)
    fail(op, "expected layout torch.strided (7), found ", *layout);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::stack", decomposition<&stack_tensors>()},
    {"loom::pixel_shuffle", decomposition<&pixel_shuffle>()},
    {"loom::pixel_unshuffle", decomposition<&pixel_unshuffle>()},
    {"loom::split.Tensor", decomposition<&split_views>()},
    {"loom::chunk", decomposition<&chunk_views>()},
    {"loom::flatten.using_ints", decomposition<&flatten_dims>()},
    {"loom::reshape", decomposition<&reshape_view_or_copy>()},
    {"loom::pad", decomposition<&pad>()},
    {"loom::split_with_sizes", decomposition<&split_sizes_views>()},
    {"loom::constant_pad_nd", decomposition<&constant_pad_nd>()},
    {"loom::select_scatter", decomposition<&select_scatter>()},
    {"loom::slice_scatter", decomposition<&slice_scatter>()},
    {"loom::reflection_pad1d", decomposition<&mode_pad<1, true>>()},
    {"loom::reflection_pad2d", decomposition<&mode_pad<2, true>>()},
    {"loom::reflection_pad3d", decomposition<&mode_pad<3, true>>()},
    {"loom::replication_pad2d", decomposition<&mode_pad<2, false>>()},
    {"loom::replication_pad3d", decomposition<&mode_pad<3, false>>()},
    {"loom::_assert_tensor_metadata", decomposition<&assert_tensor_metadata>()},
    {"loom::sym_size.int", decomposition<&sym_size>()},
    {"loom::sym_stride.int", decomposition<&sym_stride>()},
    {"loom::sym_numel", decomposition<&sym_numel>()},
    {"loom::sym_storage_offset", decomposition<&sym_storage_offset>()},
    {"loom::sym_is_contiguous", decomposition<&sym_is_contiguous>()},
};

}  // namespace

std::span<const DecompositionEntry> shape_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
