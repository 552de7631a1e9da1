// The distributed family's collectives move and reduce values between processes in place;
// like PyTorch's c10d ops they record no gradient (DDP reduces gradients, not through
// them), so they are marked not differentiable.
#include "helpers.h"

namespace loom::autograd {

void register_distributed_formulas(FormulaTable& t) {
  t.not_differentiable({"loom::all_reduce_", "loom::broadcast_", "loom::reduce_",
                        "loom::all_gather_", "loom::all_gather_into_tensor_",
                        "loom::reduce_scatter_", "loom::reduce_scatter_tensor_",
                        "loom::all_to_all_", "loom::all_to_all_single_", "loom::barrier",
                        "loom::send", "loom::recv_"});
}

}  // namespace loom::autograd
