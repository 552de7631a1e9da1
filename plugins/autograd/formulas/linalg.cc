// Derivatives of the linear algebra family: mm, bmm, addmm, baddbmm, dot. matmul,
// linear, mv, addmv, einsum, cdist and linalg_vector_norm are decompositions and
// differentiate through their pieces.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

bool is_transposed_matrix(const Tensor& m) {
  return m.dim() == 2 && m.strides()[0] == 1 && m.strides()[1] == m.size(0) && m.size(0) > 1 &&
         m.size(1) > 1;
}

// a @ b, laid out like `like`: an input stored transposed (linear's weight.t()) gets its
// gradient computed as (b^T a^T)^T, whose transpose back to the parameter is contiguous
// (no copy when it is accumulated), as PyTorch's mm backward does.
Tensor mm_like(const Tensor& a, const Tensor& b, const Tensor& like) {
  if (is_transposed_matrix(like)) return op::t(op::mm(op::t(b), op::t(a)));
  return op::mm(a, b);
}

Tensor scaled(Tensor t, double factor) {
  return factor == 1.0 ? t : t * factor;
}

}  // namespace

void register_linalg_formulas(FormulaTable& t) {
  t.add({"loom::mm", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return mm_like(c.grad(), op::t(c.input(1)), c.input(0)); });
           c.set(1, [&] { return mm_like(op::t(c.input(0)), c.grad(), c.input(1)); });
         }});
  t.add({"loom::bmm", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return op::bmm(c.grad(), op::transpose(c.input(1), 1, 2)); });
           c.set(1, [&] { return op::bmm(op::transpose(c.input(0), 1, 2), c.grad()); });
         }});
  // addmm: beta self + alpha mat1 @ mat2.
  t.add(
      {"loom::addmm", inputs({1, 2}), 0, [](BackwardContext& c) {
         const double beta = c.scalar_arg(3).to_double();
         const double alpha = c.scalar_arg(4).to_double();
         c.set(0, [&] { return scaled(c.grad(), beta); });
         c.set(1, [&] { return scaled(mm_like(c.grad(), op::t(c.input(2)), c.input(1)), alpha); });
         c.set(2, [&] { return scaled(mm_like(op::t(c.input(1)), c.grad(), c.input(2)), alpha); });
       }});
  t.add({"loom::baddbmm", inputs({1, 2}), 0, [](BackwardContext& c) {
           const double beta = c.scalar_arg(3).to_double();
           const double alpha = c.scalar_arg(4).to_double();
           c.set(0, [&] { return scaled(c.grad(), beta); });
           c.set(1,
                 [&] { return scaled(op::bmm(c.grad(), op::transpose(c.input(2), 1, 2)), alpha); });
           c.set(2,
                 [&] { return scaled(op::bmm(op::transpose(c.input(1), 1, 2), c.grad()), alpha); });
         }});
  t.add({"loom::dot", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad() * c.input(1); });
           c.set(1, [&] { return c.grad() * c.input(0); });
         }});
}

}  // namespace loom::autograd
