// Shape rule of native_layer_norm (layer_norm, batch_norm and group_norm are
// decompositions: ops/decompositions/normalization.cc).
#include <algorithm>

#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

// native_layer_norm: output like input; mean and rstd keep the leading dims, with the
// normalized dims as 1.
void native_layer_norm(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& input = args.tensor(0);
  std::span<const int64_t> normalized = args.ints(1);
  const TensorImpl* weight = args.optional_tensor(2);
  const TensorImpl* bias = args.optional_tensor(3);
  if (!is_floating_point(input.dtype())) {
    args.fail("expected a floating point input, found ", scalar_type_name(input.dtype()));
  }
  if (normalized.empty()) args.fail("expected a non-empty normalized_shape, found []");
  const int64_t ndim = input.dim();
  const int64_t k = static_cast<int64_t>(normalized.size());
  IntArrayRef sizes = input.sizes();
  bool fits = ndim >= k;
  for (int64_t i = 0; fits && i < k; ++i) fits = sizes[ndim - k + i] == normalized[i];
  if (!fits) {
    args.fail("normalized_shape ", shape_to_string(normalized),
              " does not match the trailing dims of ", "an input of shape ",
              shape_to_string(sizes));
  }
  for (auto [t, name] : {std::pair{weight, "weight"}, std::pair{bias, "bias"}}) {
    if (t != nullptr && !std::ranges::equal(t->sizes(), normalized)) {
      args.fail("expected ", name, " of shape ", shape_to_string(normalized), ", found ",
                shape_to_string(t->sizes()));
    }
  }
  Device device = args.common_device({&input, weight, bias});
  DimVector stat_shape(sizes.begin(), sizes.end());
  for (int64_t i = ndim - k; i < ndim; ++i) stat_shape[i] = 1;
  out.push_back(output(sizes_of(input), input.dtype(), device));
  out.push_back(output(stat_shape, input.dtype(), device));
  out.push_back(output(stat_shape, input.dtype(), device));
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::native_layer_norm", &native_layer_norm},
};

}  // namespace

std::span<const ShapeRuleEntry> normalization_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
