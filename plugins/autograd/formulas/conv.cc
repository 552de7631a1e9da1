// Derivatives of the convolution family: conv2d (and _conv2d_activation, its activation's
// gradient first), through the op library's conv2d_backward_input and
// conv2d_backward_weight, and those two (linear in both
// arguments: each one's derivatives are conv2d and the other). conv1d, conv3d, the
// transposed convolutions and im2col/col2im are decompositions.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

// conv2d's gradients (input, weight, bias) from the gradient of its output, `grad`; the
// arguments are conv2d's (input, weight, bias, stride, padding, dilation, groups).
void conv2d_gradients(BackwardContext& c, const Tensor& output_grad) {
  Tensor input = c.input(0);
  Tensor weight = c.input(1);
  const bool unbatched = input.dim() == 3;
  Tensor grad = unbatched ? op::unsqueeze(output_grad, 0) : output_grad;
  Tensor batched = unbatched ? op::unsqueeze(input, 0) : input;
  c.set(0, [&] {
    Tensor g = op::conv2d_backward_input(grad, weight, batched.sizes(), c.ints(3), c.ints(4),
                                         c.ints(5), c.int_arg(6));
    return unbatched ? op::squeeze(g, 0) : g;
  });
  c.set(1, [&] {
    return op::conv2d_backward_weight(grad, batched, weight.sizes(), c.ints(3), c.ints(4),
                                      c.ints(5), c.int_arg(6));
  });
  c.set(2, [&] { return op::sum(grad, std::optional<sdk::IntList>({0, 2, 3})); });
}

}  // namespace

void register_conv_formulas(FormulaTable& t) {
  t.add({"loom::conv2d", inputs({0, 1}), 0,
         [](BackwardContext& c) { conv2d_gradients(c, c.grad()); }});
  // The activation's gradient from the result (relu: threshold_backward, as relu's own
  // formula; sigmoid: y (1 - y); tanh: 1 - y^2), then conv2d's.
  t.add({"loom::_conv2d_activation", inputs({0, 1}), outputs({0}), [](BackwardContext& c) {
           const std::string_view activation = c.str_arg(7);
           Tensor y = c.result();
           Tensor grad = activation == "relu"      ? op::threshold_backward(c.grad(), y, 0.0)
                         : activation == "sigmoid" ? c.grad() * (y * (1.0 - y))
                                                   : c.grad() * (1.0 - y * y);
           conv2d_gradients(c, grad);
         }});
  // input = conv2d_backward_input(go, w): <g, input> = <conv2d(g, w), go>.
  t.add({"loom::conv2d_backward_input", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             return op::conv2d(c.grad(), c.input(1), std::nullopt, c.ints(3), c.ints(4), c.ints(5),
                               c.int_arg(6));
           });
           c.set(1, [&] {
             return op::conv2d_backward_weight(c.input(0), c.grad(), c.input(1).sizes(), c.ints(3),
                                               c.ints(4), c.ints(5), c.int_arg(6));
           });
         }});
  // weight = conv2d_backward_weight(go, x): <g, weight> = <conv2d(x, g), go>.
  t.add({"loom::conv2d_backward_weight", inputs({0, 1}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             return op::conv2d(c.input(1), c.grad(), std::nullopt, c.ints(3), c.ints(4), c.ints(5),
                               c.int_arg(6));
           });
           c.set(1, [&] {
             return op::conv2d_backward_input(c.input(0), c.grad(), c.input(1).sizes(), c.ints(3),
                                              c.ints(4), c.ints(5), c.int_arg(6));
           });
         }});
}

}  // namespace loom::autograd
