// Shape rules of the indexing ops with kernels: index_select, gather, scatter (src,
// value), scatter_add, scatter_reduce.
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

void require_index_dtype(const ShapeArgs& args, const TensorImpl& index, bool allow_int32) {
  if (index.dtype() == ScalarType::Int64) return;
  if (allow_int32 && index.dtype() == ScalarType::Int32) return;
  args.fail("expected an int64", allow_int32 ? " or int32" : "", " index tensor, found ",
            scalar_type_name(index.dtype()));
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

// scatter with a reduction: the reduce names PyTorch's scatter_reduce takes. Bool has
// none of them (PyTorch refuses it too).
void scatter_reduce(const ShapeArgs& args, OutputMetas& out) {
  scatter_src(args, out);
  const std::string_view reduce = args.str(4);
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" &&
      reduce != "amin") {
    args.fail("expected reduce 'sum', 'prod', 'mean', 'amax' or 'amin', found '", reduce, "'");
  }
  if (args.tensor(0).dtype() == ScalarType::Bool) {
    args.fail("expected a numeric self, found bool");
  }
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::index_select", &index_select}, {"loom::gather", &gather},
    {"loom::scatter.src", &scatter_src},   {"loom::scatter.value", &scatter_value},
    {"loom::scatter_add", &scatter_src},   {"loom::scatter_reduce.two", &scatter_reduce},
};

}  // namespace

std::span<const ShapeRuleEntry> indexing_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
