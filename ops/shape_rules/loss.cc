// Shape rule of nll_loss (the other losses are decompositions: ops/decompositions/loss.cc).
#include <algorithm>

#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

// Reduction arguments of the losses (PyTorch's enum).
void check_reduction(const ShapeArgs& args, int64_t reduction) {
  if (reduction < 0 || reduction > 2) {
    args.fail("reduction ", reduction, " is not one of 0 (none), 1 (mean), 2 (sum)");
  }
}

// nll_loss: input [C], [N, C] or [N, C, d1, ...]; target the input's shape without C.
void nll_loss(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& target = args.tensor(1);
  const TensorImpl* weight = args.optional_tensor(2);
  const int64_t reduction = args.integer(3);
  check_reduction(args, reduction);
  if (!is_floating_point(self.dtype())) {
    args.fail("expected a floating point input, found ", scalar_type_name(self.dtype()));
  }
  if (self.dim() < 1) args.fail("expected an input of at least 1 dim, found 0 dims");
  if (target.dtype() != ScalarType::Int64 && target.dtype() != ScalarType::Int32) {
    args.fail("expected an int64 or int32 target, found ", scalar_type_name(target.dtype()));
  }
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const int64_t classes = self.sizes()[class_dim];
  DimVector target_shape = sizes_of(self);
  target_shape.erase(target_shape.begin() + class_dim);
  if (!std::ranges::equal(target.sizes(), target_shape)) {
    args.fail("expected a target of shape ", shape_to_string(target_shape),
              " for an input of shape ", shape_to_string(self.sizes()), ", found ",
              shape_to_string(target.sizes()));
  }
  if (weight != nullptr && (weight->dim() != 1 || weight->sizes()[0] != classes)) {
    args.fail("expected a weight of shape [", classes, "] (one per class), found ",
              shape_to_string(weight->sizes()));
  }
  Device device = args.common_device({&self, &target, weight});
  if (reduction == 0) {
    out.push_back(output(target_shape, self.dtype(), device));
  } else {
    out.push_back(output({}, self.dtype(), device));
  }
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::nll_loss", &nll_loss},
};

}  // namespace

std::span<const ShapeRuleEntry> loss_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
