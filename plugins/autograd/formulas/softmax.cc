// Derivatives of the softmax family, from the saved result y:
//   softmax:      y * (grad - sum(grad * y, dim))
//   log_softmax:  grad - exp(y) * sum(grad, dim)
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_softmax_formulas(FormulaTable& t) {
  t.add({"loom::softmax.int", 0, outputs({0}), [](BackwardContext& c) {
           c.set(0, [&] {
             Tensor y = c.result();
             const int64_t dim = c.int_arg(1);
             Tensor inner = op::sum(c.grad() * y, std::optional<sdk::IntList>({dim}), true);
             return y * (c.grad() - inner);
           });
         }});
  t.add({"loom::log_softmax.int", 0, outputs({0}), [](BackwardContext& c) {
           c.set(0, [&] {
             const int64_t dim = c.int_arg(1);
             Tensor total = op::sum(c.grad(), std::optional<sdk::IntList>({dim}), true);
             return c.grad() - op::exp(c.result()) * total;
           });
         }});
}

}  // namespace loom::autograd
