// Derivatives of the convolution family: conv2d, through the op library's
// conv2d_backward_input and conv2d_backward_weight. conv1d, conv3d, the transposed
// convolutions and im2col/col2im are decompositions.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_conv_formulas(FormulaTable& t) {
  t.add({"loom::conv2d", inputs({0, 1}), 0, [](BackwardContext& c) {
           Tensor input = c.input(0);
           Tensor weight = c.input(1);
           const bool unbatched = input.dim() == 3;
           Tensor grad = unbatched ? op::unsqueeze(c.grad(), 0) : c.grad();
           Tensor batched = unbatched ? op::unsqueeze(input, 0) : input;
           c.set(0, [&] {
             Tensor g = op::conv2d_backward_input(grad, weight, batched.sizes(), c.ints(3),
                                                  c.ints(4), c.ints(5), c.int_arg(6));
             return unbatched ? op::squeeze(g, 0) : g;
           });
           c.set(1, [&] {
             return op::conv2d_backward_weight(grad, batched, weight.sizes(), c.ints(3),
                                               c.ints(4), c.ints(5), c.int_arg(6));
           });
           c.set(2, [&] { return op::sum(grad, std::optional<sdk::IntList>({0, 2, 3})); });
         }});
}

}  // namespace loom::autograd
