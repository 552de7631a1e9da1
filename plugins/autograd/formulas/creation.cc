// The creation family's factories take no tensor that could require grad: arange,
// linspace and eye (declared in out= form) are marked not differentiable.
#include "helpers.h"

namespace loom::autograd {

void register_creation_formulas(FormulaTable& t) {
  t.not_differentiable({"loom::arange.start_out", "loom::linspace.out", "loom::eye.m_out"});
}

}  // namespace loom::autograd
