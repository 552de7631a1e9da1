// Derivatives of the random family: dropout (the gradient passes where the output kept
// the input, scaled like it). The random fills, bernoulli, randperm and multinomial are
// not differentiable.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_random_formulas(FormulaTable& t) {
  // dropout(input, p, train) returns input * mask / (1 - p), so the kept places are where
  // the output is non-zero (an input that is exactly 0 gets no gradient either way only
  // in value; its gradient is taken as 0).
  t.add({"loom::dropout", 0, outputs({0}), [](BackwardContext& c) {
           c.set(0, [&] {
             if (!c.bool_arg(2)) return c.grad();
             const double p = c.double_arg(1);
             if (p >= 1.0) return sdk::zeros_like(c.grad());
             Tensor y = c.result();
             Tensor dropped = op::eq(y, scalar_like(y, 0.0));
             return zero_where(c.grad(), dropped) * (1.0 / (1.0 - p));
           });
         }});
  t.not_differentiable({"loom::uniform_", "loom::normal_", "loom::bernoulli_.float",
                        "loom::bernoulli", "loom::random_.from", "loom::randperm.out",
                        "loom::multinomial"});
}

}  // namespace loom::autograd
