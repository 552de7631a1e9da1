// Shape rules of the sorting ops: topk, sort.
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

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

constexpr ShapeRuleEntry kRules[] = {
    {"loom::topk", &topk},
    {"loom::sort", &sort},
};

}  // namespace

std::span<const ShapeRuleEntry> sort_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
