// Shape rules of the scans: cumsum, cumprod, cummax, cummin.
#include "shape_rule.h"

namespace loom::ops {
namespace {

void scan(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  args.wrap_dim(args.integer(1), self.dim());
  out.push_back(output(DimVector(self.sizes().begin(), self.sizes().end()),
                       accumulating_dtype(self, args.optional_dtype(2)), self.device()));
}

// cummax / cummin: running extremes of self's dtype and int64 positions, self's shape.
void running_extreme(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  args.wrap_dim(args.integer(1), self.dim());
  DimVector shape(self.sizes().begin(), self.sizes().end());
  out.push_back(output(shape, self.dtype(), self.device()));
  out.push_back(output(std::move(shape), ScalarType::Int64, self.device()));
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::cumsum", &scan},
    {"loom::cumprod", &scan},
    {"loom::cummax", &running_extreme},
    {"loom::cummin", &running_extreme},
};

}  // namespace

std::span<const ShapeRuleEntry> scan_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
