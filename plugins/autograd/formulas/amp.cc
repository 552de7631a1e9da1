// The amp family's formulas: loss scaling's ops write gradients and the scaler's state
// under no-grad, as PyTorch's do; they are not differentiable.
#include "helpers.h"

namespace loom::autograd {

void register_amp_formulas(FormulaTable& t) {
  t.not_differentiable(
      {"loom::_amp_foreach_non_finite_check_and_unscale_", "loom::_amp_update_scale_"});
}

}  // namespace loom::autograd
