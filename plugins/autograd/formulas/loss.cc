// Derivatives of the loss family: nll_loss. cross_entropy_loss and the regression and
// divergence losses are decompositions.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_loss_formulas(FormulaTable& t) {
  // nll_loss(self [N, C, ...] or [C], target, weight?, reduction, ignore_index): the
  // gradient is -w[target] * grad at the target class, 0 elsewhere; mean reduction
  // divides by the total weight of the targets not ignored.
  t.add({"loom::nll_loss", inputs({1, 2}), 0, [](BackwardContext& c) {
           if (c.needs(2)) {
             throw sdk::Error(
                 std::string("[") + c.op_name() + "] has no derivative for input 'weight'",
                 LOOM_STATUS_UNIMPLEMENTED);
           }
           c.set(0, [&] {
             std::span<const int64_t> sizes = c.input_sizes(0);
             Tensor target = c.input(1);
             const int64_t reduction = c.int_arg(3);
             const int64_t ignore_index = c.int_arg(4);
             const int64_t class_dim = sizes.size() >= 2 ? 1 : 0;
             const LoomDType dtype = c.grad().dtype();
             Tensor ignored = op::eq(
                 target, sdk::full(std::span<const int64_t>(), static_cast<double>(ignore_index),
                                   target.dtype(), target.device()));
             Tensor safe_target = op::masked_fill(target, ignored, sdk::Scalar{});
             Tensor weight = c.is_none(2)
                                 ? sdk::full(target.sizes(), 1.0, dtype, target.device())
                                 : op::index_select(c.input(2), 0, op::reshape(safe_target, {-1}));
             weight = zero_where(op::reshape(weight, target.sizes()), ignored);
             Tensor g = c.grad();  // [] for mean and sum, target's shape for none
             if (reduction == 1) g = g / op::sum(weight);
             Tensor per_target = -(weight * g);
             Tensor zeros = sdk::full(sizes, 0.0, dtype, c.grad().device());
             return op::scatter(zeros, class_dim, op::unsqueeze(safe_target, class_dim),
                                op::unsqueeze(per_target, class_dim));
           });
         }});
}

}  // namespace loom::autograd
