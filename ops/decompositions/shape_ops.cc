// Decompositions of the shape ops: stack (unsqueeze views, then cat), the views split,
// chunk, flatten and reshape (a copy only when the strides allow no view), and argsort.
#include "decomposition.h"
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
std::vector<Tensor> split_with_sizes(const Tensor& self, int64_t dim,
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
  return split_with_sizes(self, d, sizes);
}

std::vector<Tensor> chunk_views(const Tensor& self, int64_t chunks, int64_t dim) {
  constexpr const char* op = "loom::chunk";
  if (self.dim() == 0) fail(op, "expected a tensor with at least one dim, found 0 dims");
  if (chunks <= 0) fail(op, "expected a positive number of chunks, found ", chunks);
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const int64_t size = self.sizes()[d];
  if (size == 0) return split_with_sizes(self, d, std::vector<int64_t>(chunks, 0));
  return split_views(self, (size + chunks - 1) / chunks, d);
}

Tensor reshape_view_or_copy(const Tensor& self, const IntList& shape) {
  if (std::optional<Tensor> view = self.reshape_as_view(shape)) return *view;
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

Tensor argsort_indices(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(loom::sort(self, dim, descending));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::stack", decomposition<&stack_tensors>()},
    {"loom::split.Tensor", decomposition<&split_views>()},
    {"loom::chunk", decomposition<&chunk_views>()},
    {"loom::flatten.using_ints", decomposition<&flatten_dims>()},
    {"loom::reshape", decomposition<&reshape_view_or_copy>()},
    {"loom::argsort", decomposition<&argsort_indices>()},
};

}  // namespace

std::span<const DecompositionEntry> shape_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
