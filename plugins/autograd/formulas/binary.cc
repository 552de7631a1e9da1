// Derivatives of the binary family: add, sub, mul, div, remainder, fmod, pow, maximum,
// minimum, atan2; comparisons and bitwise ops are not differentiable. The engine sums
// a broadcast gradient down to each input's shape (Note [Gradient validation]).
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

// d(max(a, b)): the gradient goes to the larger input, split evenly on ties.
Tensor share_of_larger(const Tensor& grad, const Tensor& self, const Tensor& other) {
  Tensor larger = op::to(op::gt(self, other), grad.dtype());
  Tensor tie = op::to(op::eq(self, other), grad.dtype());
  return grad * (larger + tie * 0.5);
}

}  // namespace

void register_binary_formulas(FormulaTable& t) {
  t.add({"loom::add.Tensor", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad(); });
           c.set(1, [&] {
             const double alpha = c.scalar_arg(2).to_double();
             return alpha == 1.0 ? c.grad() : c.grad() * alpha;
           });
         }});
  t.add({"loom::sub.Tensor", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad(); });
           c.set(1, [&] {
             const double alpha = c.scalar_arg(2).to_double();
             return alpha == 1.0 ? -c.grad() : c.grad() * -alpha;
           });
         }});
  t.add({"loom::mul.Tensor", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad() * c.input(1); });
           c.set(1, [&] { return c.grad() * c.input(0); });
         }});
  t.add({"loom::div.Tensor", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad() / c.input(1); });
           c.set(1, [&] {
             Tensor other = c.input(1);
             return -c.grad() * c.input(0) / (other * other);
           });
         }});
  t.add({"loom::remainder.Tensor", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad(); });
           c.set(1, [&] {
             return -c.grad() * op::div(c.input(0), c.input(1), std::string_view("floor"));
           });
         }});
  t.add({"loom::fmod.Tensor", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad(); });
           c.set(1, [&] {
             return -c.grad() * op::div(c.input(0), c.input(1), std::string_view("trunc"));
           });
         }});
  // d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log(a), taken as 0 where a = 0 and b >= 0.
  t.add({"loom::pow.Tensor_Tensor", inputs({0, 1}), outputs({0}), [](BackwardContext& c) {
           c.set(0, [&] {
             Tensor exponent = c.input(1);
             return c.grad() * exponent * op::pow(c.input(0), exponent - 1.0);
           });
           c.set(1, [&] {
             Tensor self = c.input(0);
             Tensor zero_base = op::logical_and(op::eq(self, scalar_like(self, 0.0)),
                                                op::ge(c.input(1), scalar_like(self, 0.0)));
             return zero_where(c.grad() * c.result() * op::log(self), zero_base);
           });
         }});
  t.add({"loom::maximum", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return share_of_larger(c.grad(), c.input(0), c.input(1)); });
           c.set(1, [&] { return share_of_larger(c.grad(), c.input(1), c.input(0)); });
         }});
  t.add({"loom::minimum", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return share_of_larger(c.grad(), -c.input(0), -c.input(1)); });
           c.set(1, [&] { return share_of_larger(c.grad(), -c.input(1), -c.input(0)); });
         }});
  t.add({"loom::atan2", inputs({0, 1}), 0, [](BackwardContext& c) {
           Tensor self = c.input(0), other = c.input(1);
           Tensor denominator = self * self + other * other;
           c.set(0, [&] { return c.grad() * other / denominator; });
           c.set(1, [&] { return -c.grad() * self / denominator; });
         }});
  t.not_differentiable({"loom::eq.Tensor", "loom::ne.Tensor", "loom::lt.Tensor", "loom::le.Tensor",
                        "loom::gt.Tensor", "loom::ge.Tensor", "loom::logical_and",
                        "loom::logical_or", "loom::logical_xor", "loom::bitwise_and.Tensor",
                        "loom::bitwise_or.Tensor", "loom::bitwise_xor.Tensor"});
}

}  // namespace loom::autograd
