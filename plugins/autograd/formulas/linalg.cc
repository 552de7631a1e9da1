// Derivatives of the linear algebra family: mm, bmm, addmm, baddbmm, dot. matmul,
// linear, mv, addmv, einsum, cdist and linalg_vector_norm are decompositions and
// differentiate through their pieces.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_linalg_formulas(FormulaTable& t) {
  t.add({"loom::mm", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return op::mm(c.grad(), op::t(c.input(1))); });
           c.set(1, [&] { return op::mm(op::t(c.input(0)), c.grad()); });
         }});
  t.add({"loom::bmm", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return op::bmm(c.grad(), op::transpose(c.input(1), 1, 2)); });
           c.set(1, [&] { return op::bmm(op::transpose(c.input(0), 1, 2), c.grad()); });
         }});
  // addmm: beta self + alpha mat1 @ mat2.
  t.add({"loom::addmm", inputs({1, 2}), 0, [](BackwardContext& c) {
           const double beta = c.scalar_arg(3).to_double();
           const double alpha = c.scalar_arg(4).to_double();
           c.set(0, [&] { return beta == 1.0 ? c.grad() : c.grad() * beta; });
           c.set(1, [&] { return op::mm(c.grad(), op::t(c.input(2))) * alpha; });
           c.set(2, [&] { return op::mm(op::t(c.input(1)), c.grad()) * alpha; });
         }});
  t.add({"loom::baddbmm", inputs({1, 2}), 0, [](BackwardContext& c) {
           const double beta = c.scalar_arg(3).to_double();
           const double alpha = c.scalar_arg(4).to_double();
           c.set(0, [&] { return beta == 1.0 ? c.grad() : c.grad() * beta; });
           c.set(1, [&] { return op::bmm(c.grad(), op::transpose(c.input(2), 1, 2)) * alpha; });
           c.set(2, [&] { return op::bmm(op::transpose(c.input(1), 1, 2), c.grad()) * alpha; });
         }});
  t.add({"loom::dot", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad() * c.input(1); });
           c.set(1, [&] { return c.grad() * c.input(0); });
         }});
}

}  // namespace loom::autograd
