// Shape rules of the shape and indexing ops with kernels: cat, index_select, gather,
// scatter (src, value), scatter_add, topk, sort, flip, roll, repeat, tril, triu.
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

DimVector sizes_of(const TensorImpl& t) {
  return DimVector(t.sizes().begin(), t.sizes().end());
}

// A tensor's size along `dim`, treating a 0-dim tensor as one element.
int64_t size_at(const TensorImpl& t, int64_t dim) {
  return t.dim() == 0 ? 1 : t.sizes()[dim];
}

void require_index_dtype(const ShapeArgs& args, const TensorImpl& index, bool allow_int32) {
  if (index.dtype() == ScalarType::Int64) return;
  if (allow_int32 && index.dtype() == ScalarType::Int32) return;
  args.fail("expected an int64", allow_int32 ? " or int32" : "", " index tensor, found ",
            scalar_type_name(index.dtype()));
}

// Note [Legacy empty tensors in cat]
// As in PyTorch, a 1-D tensor of size 0 is skipped by cat whatever the other tensors'
// shapes are (it was once the only way to write an empty tensor); it still takes part in
// the type promotion of the result.
bool skipped_by_cat(const TensorImpl& t) {
  return t.dim() == 1 && t.sizes()[0] == 0;
}

void cat(const ShapeArgs& args, OutputMetas& out) {
  std::vector<const TensorImpl*> tensors = args.tensors(0);
  if (tensors.empty()) args.fail("expected a non-empty list of tensors");
  std::vector<PromotionOperand> operands;
  for (const TensorImpl* t : tensors) {
    operands.push_back({t->dtype(), PromotionOperand::Tier::Dimensioned});
  }
  ScalarType dtype = result_type(operands, args.op());
  size_t ref = 0;
  while (ref < tensors.size() && skipped_by_cat(*tensors[ref])) ++ref;
  std::optional<Device> device;
  for (const TensorImpl* t : tensors) {
    if (!device) {
      device = t->device();
    } else if (!(t->device() == *device)) {
      args.fail("expected all tensors on one device, found ", device->to_string(), " and ",
                t->device().to_string());
    }
  }
  if (ref == tensors.size()) {  // only legacy empty tensors
    args.wrap_dim(args.integer(1), 1);
    out.push_back(output(DimVector{0}, dtype, *device));
    return;
  }
  const TensorImpl& first = *tensors[ref];
  if (first.dim() == 0) {
    args.fail("expected tensors with at least one dim, found tensor ", ref, " with 0 dims");
  }
  const int64_t ndim = first.dim();
  const int64_t dim = args.wrap_dim(args.integer(1), ndim);
  DimVector shape = sizes_of(first);
  shape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorImpl& t = *tensors[i];
    if (skipped_by_cat(t)) continue;
    if (t.dim() != ndim) {
      args.fail("expected tensors with ", ndim, " dims like tensor ", ref, ", found tensor ", i,
                " with ", t.dim(), " dims");
    }
    for (int64_t d = 0; d < ndim; ++d) {
      if (d != dim && t.sizes()[d] != first.sizes()[d]) {
        args.fail("expected size ", first.sizes()[d], " in dim ", d, " like tensor ", ref,
                  ", found size ", t.sizes()[d], " in tensor ", i);
      }
    }
    shape[dim] += t.sizes()[dim];
  }
  out.push_back(output(std::move(shape), dtype, *device));
}

void index_select(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& index = args.tensor(2);
  const int64_t dim = args.wrap_dim(args.integer(1), self.dim());
  require_index_dtype(args, index, /*allow_int32=*/true);
  if (index.dim() > 1) {
    args.fail("expected a 0-dim or 1-dim index tensor, found ", index.dim(), " dims");
  }
  Device device = args.common_device({&self, &index});
  DimVector shape = sizes_of(self);
  if (self.dim() == 0) {
    if (index.numel() != 1) {
      args.fail("expected one index for a 0-dim tensor, found ", index.numel());
    }
  } else {
    shape[dim] = index.numel();
  }
  out.push_back(output(std::move(shape), self.dtype(), device));
}

// gather and scatter: `index` has self's number of dims; along every dim but `dim` it
// is no larger than self (and, for scatter, no larger than src along every dim).
void check_gather_scatter(const ShapeArgs& args, const TensorImpl& self, int64_t dim,
                          const TensorImpl& index, const TensorImpl* src) {
  require_index_dtype(args, index, /*allow_int32=*/false);
  if (index.numel() == 0) return;  // as in PyTorch: an empty index addresses nothing
  const int64_t ndim = std::max<int64_t>(self.dim(), 1);
  const int64_t index_ndim = std::max<int64_t>(index.dim(), 1);
  if (index_ndim != ndim) {
    args.fail("expected an index with ", self.dim(), " dims like self, found ", index.dim(),
              " dims");
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (d != dim && size_at(index, d) > size_at(self, d)) {
      args.fail("expected index size ", size_at(index, d), " in dim ", d,
                " to be at most self's size ", size_at(self, d));
    }
  }
  if (src == nullptr) return;
  if (std::max<int64_t>(src->dim(), 1) != ndim) {
    args.fail("expected src with ", self.dim(), " dims like self, found ", src->dim(), " dims");
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (size_at(index, d) > size_at(*src, d)) {
      args.fail("expected index size ", size_at(index, d), " in dim ", d,
                " to be at most src's size ", size_at(*src, d));
    }
  }
  if (src->dtype() != self.dtype()) {
    args.fail("expected src of self's dtype ", scalar_type_name(self.dtype()), ", found ",
              scalar_type_name(src->dtype()));
  }
}

void gather(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& index = args.tensor(2);
  const int64_t dim = args.wrap_dim(args.integer(1), self.dim());
  check_gather_scatter(args, self, dim, index, nullptr);
  out.push_back(output(sizes_of(index), self.dtype(), args.common_device({&self, &index})));
}

void scatter_src(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& index = args.tensor(2);
  const TensorImpl& src = args.tensor(3);
  const int64_t dim = args.wrap_dim(args.integer(1), self.dim());
  check_gather_scatter(args, self, dim, index, &src);
  out.push_back(output(sizes_of(self), self.dtype(), args.common_device({&self, &index, &src})));
}

void scatter_value(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& index = args.tensor(2);
  const int64_t dim = args.wrap_dim(args.integer(1), self.dim());
  check_gather_scatter(args, self, dim, index, nullptr);
  out.push_back(output(sizes_of(self), self.dtype(), args.common_device({&self, &index})));
}

// topk and sort: values of self's dtype and int64 indices.
void sorted_outputs(const TensorImpl& self, DimVector shape, OutputMetas& out) {
  out.push_back(output(shape, self.dtype(), self.device()));
  out.push_back(output(std::move(shape), ScalarType::Int64, self.device()));
}

void topk(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const int64_t k = args.integer(1);
  const int64_t dim = args.wrap_dim(args.integer(2), self.dim());
  const int64_t size = size_at(self, dim);
  if (k < 0 || k > size) {
    args.fail("expected k in [0, ", size, "] (the size of dim ", dim, "), found k = ", k);
  }
  DimVector shape = sizes_of(self);
  if (self.dim() > 0) shape[dim] = k;
  sorted_outputs(self, std::move(shape), out);
}

void sort(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  args.wrap_dim(args.integer(1), self.dim());
  sorted_outputs(self, sizes_of(self), out);
}

// Same shape and dtype as self.
OutputMeta like_self(const TensorImpl& self) {
  return output(sizes_of(self), self.dtype(), self.device());
}

void flip(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  reduced_dim_mask(args, args.ints(1), self.dim());  // dims in range, no repeats
  out.push_back(like_self(self));
}

void roll(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  std::span<const int64_t> shifts = args.ints(1);
  std::span<const int64_t> dims = args.ints(2);
  if (dims.empty()) {
    if (shifts.size() != 1) {
      args.fail(
          "expected one shift when no dims are given (the flattened tensor is rolled), "
          "found ",
          shifts.size());
    }
  } else if (shifts.size() != dims.size()) {
    args.fail("expected as many shifts as dims, found ", shifts.size(), " shifts and ", dims.size(),
              " dims");
  }
  for (int64_t d : dims) args.wrap_dim(d, self.dim());
  out.push_back(like_self(self));
}

void repeat(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  std::span<const int64_t> repeats = args.ints(1);
  const int64_t n = static_cast<int64_t>(repeats.size());
  if (n < self.dim()) {
    args.fail("expected at least ", self.dim(), " repeats (one per dim of self), found ", n);
  }
  DimVector shape(repeats.size());
  const int64_t lead = n - self.dim();
  for (int64_t i = 0; i < n; ++i) {
    if (repeats[i] < 0) args.fail("expected non-negative repeats, found ", repeats[i]);
    if (__builtin_mul_overflow(repeats[i], i < lead ? 1 : self.sizes()[i - lead], &shape[i])) {
      args.fail("repeats ", repeats[i], " times dim ", i - lead, " of size ",
                self.sizes()[i - lead], " overflow int64");
    }
  }
  out.push_back(output(std::move(shape), self.dtype(), self.device()));
}

void triangle(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  if (self.dim() < 2) args.fail("expected a tensor with at least 2 dims, found ", self.dim());
  out.push_back(like_self(self));
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::cat", &cat},
    {"loom::index_select", &index_select},
    {"loom::gather", &gather},
    {"loom::scatter.src", &scatter_src},
    {"loom::scatter.value", &scatter_value},
    {"loom::scatter_add", &scatter_src},
    {"loom::topk", &topk},
    {"loom::sort", &sort},
    {"loom::flip", &flip},
    {"loom::roll", &roll},
    {"loom::repeat", &repeat},
    {"loom::tril", &triangle},
    {"loom::triu", &triangle},
};

}  // namespace

std::span<const ShapeRuleEntry> shape_indexing_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
