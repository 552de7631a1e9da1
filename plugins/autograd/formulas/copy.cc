// Derivatives of the copy family: copy_ and fill_ (in place). clone, contiguous and the
// to variants are decompositions over copy_.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_copy_formulas(FormulaTable& t) {
  // copy_(self, src): self's old values are gone; src gets the gradient, cast to its
  // dtype and moved to its device by the engine.
  t.add({"loom::copy_", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] { return sdk::zeros_like(c.grad()); });
           c.set(1, [&] { return c.grad(); });
         }});
  t.add({"loom::fill_.Scalar", 0, 0,
         [](BackwardContext& c) { c.set(0, [&] { return sdk::zeros_like(c.grad()); }); }});
}

}  // namespace loom::autograd
