// Shape rules of the scans: cumsum, cumprod.
#include "shape_rule.h"

namespace loom::ops {
namespace {

void scan(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  args.wrap_dim(args.integer(1), self.dim());
  out.push_back(output(DimVector(self.sizes().begin(), self.sizes().end()),
                       accumulating_dtype(self, args.optional_dtype(2)), self.device()));
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::cumsum", &scan},
    {"loom::cumprod", &scan},
};

}  // namespace

std::span<const ShapeRuleEntry> scan_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
