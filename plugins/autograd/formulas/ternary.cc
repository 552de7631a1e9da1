// Derivatives of the ternary family: div with a rounding mode, where, masked_fill,
// lerp, addcmul, addcdiv.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_ternary_formulas(FormulaTable& t) {
  // True division without a rounding mode; rounded division is piecewise constant (zero
  // gradient), as in PyTorch.
  t.add({"loom::div.Tensor_mode", inputs({0, 1}), 0, [](BackwardContext& c) {
           if (c.is_none(2)) {
             c.set(0, [&] { return c.grad() / c.input(1); });
             c.set(1, [&] {
               Tensor other = c.input(1);
               return -c.grad() * c.input(0) / (other * other);
             });
             return;
           }
           c.set(0, [&] { return sdk::zeros_like(c.grad()); });
           c.set(1, [&] { return sdk::zeros_like(c.grad()); });
         }});
  t.add({"loom::where.self", inputs({0}), 0, [](BackwardContext& c) {
           Tensor condition = c.input(0);
           c.set(1, [&] { return zero_where(c.grad(), op::logical_not(condition)); });
           c.set(2, [&] { return zero_where(c.grad(), condition); });
         }});
  t.add({"loom::masked_fill.Scalar", inputs({1}), 0,
         [](BackwardContext& c) { c.set(0, [&] { return zero_where(c.grad(), c.input(1)); }); }});
  // lerp: self + weight * (end - self).
  t.add({"loom::lerp.Scalar", 0, 0, [](BackwardContext& c) {
           const double w = c.scalar_arg(2).to_double();
           c.set(0, [&] { return c.grad() * (1.0 - w); });
           c.set(1, [&] { return c.grad() * w; });
         }});
  t.add({"loom::lerp.Tensor", inputs({0, 1, 2}), 0, [](BackwardContext& c) {
           Tensor w = c.input(2);
           c.set(0, [&] { return c.grad() * (1.0 - w); });
           c.set(1, [&] { return c.grad() * w; });
           c.set(2, [&] { return c.grad() * (c.input(1) - c.input(0)); });
         }});
  // addcmul: self + value * t1 * t2.
  t.add({"loom::addcmul", inputs({1, 2}), 0, [](BackwardContext& c) {
           const double value = c.scalar_arg(3).to_double();
           c.set(0, [&] { return c.grad(); });
           c.set(1, [&] { return c.grad() * c.input(2) * value; });
           c.set(2, [&] { return c.grad() * c.input(1) * value; });
         }});
  // addcdiv: self + value * t1 / t2.
  t.add({"loom::addcdiv", inputs({1, 2}), 0, [](BackwardContext& c) {
           const double value = c.scalar_arg(3).to_double();
           c.set(0, [&] { return c.grad(); });
           c.set(1, [&] { return c.grad() / c.input(2) * value; });
           c.set(2, [&] {
             Tensor t2 = c.input(2);
             return -c.grad() * c.input(1) / (t2 * t2) * value;
           });
         }});
}

}  // namespace loom::autograd
