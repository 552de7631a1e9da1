// The foreach family's formulas: the fused optimizer updates write parameters and their
// state under no-grad, as PyTorch's do; they are not differentiable. (The _foreach_ ops
// themselves refuse tensors that require grad: Note [Foreach ops].)
#include "helpers.h"

namespace loom::autograd {

void register_foreach_formulas(FormulaTable& t) {
  t.not_differentiable({"loom::_fused_adam_", "loom::_fused_adamw_"});
}

}  // namespace loom::autograd
