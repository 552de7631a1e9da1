// Shape rules of the reductions (sum, prod, amax, amin, max/min with indices, var, any,
// all).
#include "shape_rule.h"

namespace loom::ops {
namespace {

// The rule of `op(self, dims, keepdim)` with a result of `dtype`.
void reduce(const ShapeArgs& args, std::span<const int64_t> dims, bool keepdim, ScalarType dtype,
            OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  std::vector<bool> mask = reduced_dim_mask(args, dims, self.dim());
  out.push_back(output(reduced_shape(self.sizes(), mask, keepdim), dtype, self.device()));
}

// amax, amin, max.dim, min.dim have no identity: an empty reduced dim is an error.
void require_nonempty(const ShapeArgs& args, std::span<const int64_t> dims) {
  const TensorImpl& self = args.tensor(0);
  if (self.numel() != 0) return;
  std::vector<bool> mask = reduced_dim_mask(args, dims, self.dim());
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (mask[d] && self.sizes()[d] == 0) {
      args.fail("expected a non-empty dim ", d, " to reduce (no identity), found size 0");
    }
  }
  if (self.dim() == 0 || dims.empty()) {
    args.fail("expected a non-empty input to reduce (no identity), found ", self.numel(),
              " elements");
  }
}

void sum_dim(const ShapeArgs& args, OutputMetas& out) {
  std::span<const int64_t> dims = args.optional_ints(1).value_or(std::span<const int64_t>{});
  reduce(args, dims, args.boolean(2), accumulating_dtype(args.tensor(0), args.optional_dtype(3)),
         out);
}

void prod_dim(const ShapeArgs& args, OutputMetas& out) {
  int64_t dim = args.integer(1);
  reduce(args, {&dim, 1}, args.boolean(2),
         accumulating_dtype(args.tensor(0), args.optional_dtype(3)), out);
}

void extremum(const ShapeArgs& args, OutputMetas& out) {
  std::span<const int64_t> dims = args.ints(1);
  require_nonempty(args, dims);
  reduce(args, dims, args.boolean(2), args.tensor(0).dtype(), out);
}

void extremum_with_index(const ShapeArgs& args, OutputMetas& out) {
  int64_t dim = args.integer(1);
  require_nonempty(args, {&dim, 1});
  reduce(args, {&dim, 1}, args.boolean(2), args.tensor(0).dtype(), out);
  out.push_back(output(out[0].shape, ScalarType::Int64, out[0].device));
}

void var(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  if (!is_floating_point(self.dtype())) {
    args.fail("expected a floating point input, found ", scalar_type_name(self.dtype()));
  }
  std::span<const int64_t> dims = args.optional_ints(1).value_or(std::span<const int64_t>{});
  reduce(args, dims, args.boolean(3), self.dtype(), out);
}

void any_all(const ShapeArgs& args, OutputMetas& out) {
  std::span<const int64_t> dims = args.optional_ints(1).value_or(std::span<const int64_t>{});
  reduce(args, dims, args.boolean(2), ScalarType::Bool, out);
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::sum.dim_IntList", &sum_dim},
    {"loom::prod.dim_int", &prod_dim},
    {"loom::amax", &extremum},
    {"loom::amin", &extremum},
    {"loom::max.dim", &extremum_with_index},
    {"loom::min.dim", &extremum_with_index},
    {"loom::var.correction", &var},
    {"loom::any.dims", &any_all},
    {"loom::all.dims", &any_all},
};

}  // namespace

std::span<const ShapeRuleEntry> reduction_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
