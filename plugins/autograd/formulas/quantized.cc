// The quantized family computes on quantized tensors, which carry no gradient (as in
// PyTorch), and on float inputs whose layers are inference-only (the dynamic and
// weight-only linear layers): none of its ops is differentiable.
#include "helpers.h"

namespace loom::autograd {

void register_quantized_formulas(FormulaTable& t) {
  t.not_differentiable({"loom::quantized_linear", "loom::quantized_conv2d", "loom::quantized_add",
                        "loom::quantized_mul", "loom::dynamic_quantized_linear",
                        "loom::pack_weight_only", "loom::weight_only_linear"});
}

}  // namespace loom::autograd
