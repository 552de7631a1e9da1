// Decompositions of the indexing ops: index_add / index_copy (scatter_add / scatter with
// the index broadcast over the source), masked_select (nonzero of the mask, then
// index_select), index_put / masked_scatter (a scatter at flat positions),
// repeat_interleave (an index_select, or an expand for one count).
#include <algorithm>
#include <vector>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// The 1-D int64 index of index_add / index_copy as a tensor shaped like `source`, its
// value index[i] at every position whose `dim` coordinate is i.
Tensor index_along(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                   const Tensor& source) {
  if (index.dim() > 1) fail(op, "expected a 0-D or 1-D index, found ", index.dim(), " dims");
  if (index.dtype() != ScalarType::Int64 && index.dtype() != ScalarType::Int32) {
    fail(op, "expected an int64 or int32 index, found ", scalar_type_name(index.dtype()));
  }
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  const int64_t count = index.numel();
  const int64_t source_rank = std::max<int64_t>(source.dim(), 1);
  if (source_rank != std::max<int64_t>(self.dim(), 1)) {
    fail(op, "expected source with as many dims as self (", self.dim(), "), found ", source.dim());
  }
  const int64_t along = source.dim() == 0 ? 1 : source.sizes()[d];
  if (along != count) {
    fail(op, "expected source to have ", count, " elements in dim ", d, " (one per index), found ",
         along);
  }
  for (int64_t k = 0; k < self.dim(); ++k) {
    if (k != d && source.sizes()[k] != self.sizes()[k]) {
      fail(op, "expected source of shape like self's but in dim ", d, ", found ",
           shape_to_string(source.sizes()), " for self ", shape_to_string(self.sizes()));
    }
  }
  std::vector<int64_t> shape(static_cast<size_t>(source_rank), 1);
  shape[static_cast<size_t>(d)] = count;
  Tensor idx = cast(index, ScalarType::Int64).reshape(shape);
  return source.dim() == 0 ? idx.view({1}) : idx.expand(source.sizes());
}

Tensor index_add_in_place(const Tensor& self, int64_t dim, const Tensor& index,
                          const Tensor& source, const Scalar& alpha) {
  const char* op = "loom::index_add_";
  Tensor idx = index_along(op, self, dim, index, source);
  if (alpha.is_floating_point() && !is_floating_point(self.dtype())) {
    fail(op, "for integral self, argument alpha must not be a floating point number, found ",
         alpha.to_double());
  }
  Tensor src = source;
  if (alpha.is_floating_point()) {
    src = loom::mul(source, wrapped_number(alpha.to_double()));
  } else if (alpha.to_int() != 1) {
    Tensor factor = empty({}, ScalarType::Int64, Device{kCPU, -1});
    *factor.data<int64_t>() = alpha.to_int();
    factor.impl()->set_wrapped_number(true);
    src = loom::mul(source, factor);
  }
  const Tensor target = self.dim() == 0 ? self.view({1}) : self;
  loom::scatter_add_(target, wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op), idx,
                     cast(src.dim() == 0 ? src.view({1}) : src, self.dtype()));
  return self;
}

Tensor index_add_into_clone(const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& source, const Scalar& alpha) {
  return index_add_in_place(loom::clone(self), dim, index, source, alpha);
}

Tensor index_copy_in_place(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& source) {
  const char* op = "loom::index_copy_";
  Tensor idx = index_along(op, self, dim, index, source);
  const Tensor target = self.dim() == 0 ? self.view({1}) : self;
  loom::scatter_(target, wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op), idx,
                 cast(source.dim() == 0 ? source.view({1}) : source, self.dtype()));
  return self;
}

Tensor index_copy_into_clone(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& source) {
  return index_copy_in_place(loom::clone(self), dim, index, source);
}

// The elements of self (broadcast with the mask) where the mask is true, in row-major order.
Tensor masked_select_values(const Tensor& self, const Tensor& mask) {
  const char* op = "loom::masked_select";
  if (mask.dtype() != ScalarType::Bool) {
    fail(op, "expected a bool mask, found ", scalar_type_name(mask.dtype()));
  }
  const DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), op);
  Tensor values = loom::reshape(self.expand(shape), {-1});
  Tensor where = loom::nonzero(loom::reshape(mask.expand(shape), {-1})).view({-1});
  return loom::index_select(values, 0, where);
}

// Note [Writes through positions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// index_put_ and masked_scatter_ write values into the elements of self that an index
// names. Both find those elements as flat positions in self (row-major int64), then
// write with one 1-D scatter into a flat view of self: scatter_add when index_put_
// accumulates (repeated positions add up, as in PyTorch), else scatter (the last write
// wins; PyTorch leaves repeated positions undefined there). A self that is not contiguous
// is written through a contiguous copy, copied back (an expanded self is refused there by
// copy_'s overlap check). index_put_ takes its positions from index.Tensor applied to
// arange(numel) in self's shape, so the indexing rules (None, bool masks, broadcast
// indices, where the indexed dims go) and their errors are index's; that costs numel
// int64 positions. masked_scatter_ takes them from nonzero of the broadcast mask.
void write_at_positions(const Tensor& self, const Tensor& positions, const Tensor& values,
                        bool accumulate) {
  const Tensor flat_positions = positions.reshape({-1});
  if (flat_positions.numel() == 0) return;
  const bool direct = self.is_contiguous();
  Tensor target = direct ? self.view({-1}) : loom::clone(self).contiguous().view({-1});
  if (accumulate) {
    loom::scatter_add_(target, 0, flat_positions, values.reshape({-1}));
  } else {
    loom::scatter_(target, 0, flat_positions, values.reshape({-1}));
  }
  if (!direct) loom::copy_(self, target.view(self.sizes()));
}

void check_same_placement(const char* op, const Tensor& self, const Tensor& source,
                          const char* source_name) {
  if (source.device() != self.device()) {
    fail(op, "expected ", source_name, " on self's device ", self.device().to_string(), ", found ",
         source.device().to_string());
  }
}

Tensor index_put_in_place(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                          const Tensor& values, bool accumulate) {
  const char* op = "loom::index_put_";
  if (values.dtype() != self.dtype()) {
    fail(op, "Index put requires the source and destination dtypes match, got ",
         scalar_type_name(self.dtype()), " for the destination and ",
         scalar_type_name(values.dtype()), " for the source.");
  }
  check_same_placement(op, self, values, "values");
  Tensor flat = empty(std::vector<int64_t>{self.numel()}, ScalarType::Int64, self.device());
  loom::arange_out(flat, Scalar(int64_t{0}), Scalar(self.numel()));
  const Tensor positions = loom::index(flat.view(self.sizes()), indices);
  // values must broadcast to the positions' shape (expand's rule: trailing dims match or are 1)
  const auto target = positions.sizes();
  bool fits = values.dim() <= positions.dim();
  for (int64_t k = 1; fits && k <= values.dim(); ++k) {
    const int64_t v = values.sizes()[values.dim() - k], t = target[target.size() - k];
    fits = v == t || v == 1;
  }
  if (!fits) {
    fail(op, "shape mismatch: value tensor of shape ", shape_to_string(values.sizes()),
         " cannot be broadcast to indexing result of shape ", shape_to_string(positions.sizes()));
  }
  write_at_positions(self, positions, values.expand(positions.sizes()), accumulate);
  return self;
}

Tensor index_put_into_clone(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                            const Tensor& values, bool accumulate) {
  return index_put_in_place(loom::clone(self), indices, values, accumulate);
}

Tensor masked_scatter_in_place(const Tensor& self, const Tensor& mask, const Tensor& source) {
  const char* op = "loom::masked_scatter_";
  if (mask.dtype() != ScalarType::Bool) {
    fail(op, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
         scalar_type_name(mask.dtype()));
  }
  if (source.dtype() != self.dtype()) {
    fail(op, "masked_scatter_: expected self and source to have same dtypes but got ",
         scalar_type_name(self.dtype()), " and ", scalar_type_name(source.dtype()));
  }
  check_same_placement(op, self, mask, "mask");
  check_same_placement(op, self, source, "source");
  const DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), op);
  if (!std::equal(shape.begin(), shape.end(), self.sizes().begin(), self.sizes().end())) {
    fail(op, "expected a mask that broadcasts to self's shape ", shape_to_string(self.sizes()),
         ", found ", shape_to_string(mask.sizes()));
  }
  const Tensor positions = loom::nonzero(loom::reshape(mask.expand(self.sizes()), {-1})).view({-1});
  const int64_t count = positions.numel();
  if (source.numel() < count) {
    fail(op, "Number of elements of source < number of ones in mask: ", source.numel(), " < ",
         count);
  }
  write_at_positions(self, positions, loom::reshape(source, {-1}).narrow(0, 0, count), false);
  return self;
}

// Out of place, self and mask broadcast together (PyTorch's masked_scatter).
Tensor masked_scatter_into_copy(const Tensor& self, const Tensor& mask, const Tensor& source) {
  const DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), "loom::masked_scatter");
  return masked_scatter_in_place(loom::clone(self.expand(shape)).contiguous(), mask, source);
}

// The counts of a repeats tensor on the host, checked: 1-D (or one value) and >= 0.
std::vector<int64_t> repeat_counts(const char* op, const Tensor& repeats) {
  if (repeats.dim() > 1) fail(op, "expected a 0-D or 1-D repeats, found ", repeats.dim(), " dims");
  if (is_floating_point(repeats.dtype()) || repeats.dtype() == ScalarType::Bool) {
    fail(op, "expected integer repeats, found ", scalar_type_name(repeats.dtype()));
  }
  if (repeats.device().type == kMeta) {
    fail(op,
         "the output size depends on the repeats' values, which a meta tensor does not "
         "have (expected a tensor with data)");
  }
  Tensor host = loom::contiguous(loom::to(repeats, Device{kCPU, -1}, ScalarType::Int64));
  std::vector<int64_t> counts(host.data<int64_t>(), host.data<int64_t>() + host.numel());
  int64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0) fail(op, "expected non-negative repeats, found ", c);
    if (__builtin_add_overflow(total, c, &total)) {
      fail(op, "expected repeats whose sum fits int64, found a larger sum");
    }
  }
  return counts;
}

Tensor index_for_counts(const std::vector<int64_t>& counts, Device device) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  Tensor index = empty(std::vector<int64_t>{total}, ScalarType::Int64, Device{kCPU, -1});
  int64_t* p = index.data<int64_t>();
  for (size_t i = 0; i < counts.size(); ++i) p = std::fill_n(p, counts[i], static_cast<int64_t>(i));
  return device.type == kCPU ? index : loom::to(index, device);
}

void check_output_size(const char* op, std::optional<int64_t> output_size, int64_t total) {
  if (output_size && *output_size != total) {
    fail(op, "expected output_size ", *output_size, " to equal the sum of the repeats, ", total);
  }
}

// repeat_interleave(repeats): i repeated repeats[i] times.
Tensor repeat_interleave_counts(const Tensor& repeats, std::optional<int64_t> output_size) {
  const char* op = "loom::repeat_interleave.Tensor";
  Tensor index = index_for_counts(repeat_counts(op, repeats), repeats.device());
  check_output_size(op, output_size, index.numel());
  return index;
}

Tensor repeat_interleave_tensor(const Tensor& self, const Tensor& repeats,
                                std::optional<int64_t> dim, std::optional<int64_t> output_size) {
  const char* op = "loom::repeat_interleave.self_Tensor";
  Tensor input = dim ? self : loom::reshape(self, {-1});
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(input.dim(), 1), op) : 0;
  if (input.dim() == 0) input = input.view({1});
  std::vector<int64_t> counts = repeat_counts(op, repeats);
  const int64_t size = input.sizes()[d];
  if (counts.size() == 1) counts.assign(static_cast<size_t>(size), counts[0]);
  if (static_cast<int64_t>(counts.size()) != size) {
    fail(op, "expected one repeat count per element of dim ", d, " (", size, "), found ",
         counts.size());
  }
  Tensor index = index_for_counts(counts, self.device());
  check_output_size(op, output_size, index.numel());
  return loom::index_select(input, d, index);
}

Tensor repeat_interleave_int(const Tensor& self, int64_t repeats, std::optional<int64_t> dim,
                             std::optional<int64_t> output_size) {
  const char* op = "loom::repeat_interleave.self_int";
  if (repeats < 0) fail(op, "expected non-negative repeats, found ", repeats);
  Tensor input = dim ? self : loom::reshape(self, {-1});
  if (input.dim() == 0) input = input.view({1});
  const int64_t d = dim ? wrap_dim(*dim, input.dim(), op) : 0;
  // [.., n, ..] -> [.., n, repeats, ..] (a stride-0 view) -> [.., n * repeats, ..]
  DimVector expanded(input.sizes().begin(), input.sizes().end());
  expanded.insert(expanded.begin() + d + 1, repeats);
  DimVector result(input.sizes().begin(), input.sizes().end());
  result[static_cast<size_t>(d)] *= repeats;
  check_output_size(op, output_size, result[static_cast<size_t>(d)]);
  return loom::reshape(input.unsqueeze(d + 1).expand(expanded), result);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::index_add", decomposition<&index_add_into_clone>()},
    {"loom::index_add_", decomposition<&index_add_in_place>()},
    {"loom::index_copy", decomposition<&index_copy_into_clone>()},
    {"loom::index_copy_", decomposition<&index_copy_in_place>()},
    {"loom::masked_select", decomposition<&masked_select_values>()},
    {"loom::index_put", decomposition<&index_put_into_clone>()},
    {"loom::index_put_", decomposition<&index_put_in_place>()},
    {"loom::masked_scatter", decomposition<&masked_scatter_into_copy>()},
    {"loom::masked_scatter_", decomposition<&masked_scatter_in_place>()},
    {"loom::repeat_interleave.Tensor", decomposition<&repeat_interleave_counts>()},
    {"loom::repeat_interleave.self_Tensor", decomposition<&repeat_interleave_tensor>()},
    {"loom::repeat_interleave.self_int", decomposition<&repeat_interleave_int>()},
};

}  // namespace

std::span<const DecompositionEntry> indexing_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
