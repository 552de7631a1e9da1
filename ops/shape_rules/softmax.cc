// Shape rules of softmax and log_softmax.
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

// softmax / log_softmax: a floating result (the input's dtype or `dtype`), same shape.
void softmax(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  args.wrap_dim(args.integer(1), self.dim());
  std::optional<ScalarType> dtype = args.optional_dtype(2);
  ScalarType result = dtype.value_or(self.dtype());
  if (!is_floating_point(result)) {
    args.fail("expected a floating point input or dtype, found ", scalar_type_name(result));
  }
  out.push_back(output(sizes_of(self), result, self.device()));
  follow_channels_last(self, out);
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::softmax.int", &softmax},
    {"loom::log_softmax.int", &softmax},
};

}  // namespace

std::span<const ShapeRuleEntry> softmax_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
