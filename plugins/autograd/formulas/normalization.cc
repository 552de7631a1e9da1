// Derivatives of the normalization family: native_layer_norm. layer_norm, batch_norm,
// group_norm and instance_norm are decompositions.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_normalization_formulas(FormulaTable& t) {
  // y = x_hat * w + b with x_hat = (x - mean) * rstd over the normalized (last) dims:
  //   dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)),  g = dy * w
  //   dw = sum over the leading dims of dy * x_hat,  db = sum of dy
  t.add({"loom::native_layer_norm", inputs({0, 2}), outputs({1, 2}),
         [](BackwardContext& c) {
           Tensor x = c.input(0);
           const int64_t normalized = static_cast<int64_t>(c.ints(1).size());
           std::vector<int64_t> inner, outer;
           for (int64_t d = 0; d < x.dim(); ++d) {
             (d < x.dim() - normalized ? outer : inner).push_back(d);
           }
           // Building a graph (create_graph), mean and rstd are recomputed from x, so the
           // second derivative flows through them too (they are not differentiable
           // outputs of the op).
           Tensor mean = c.result(1), rstd = c.result(2);
           if (c.create_graph()) {
             std::optional<sdk::IntList> dims(inner);
             mean = op::mean(x, dims, true);
             Tensor var = op::var(x, dims, sdk::Scalar(0), true);
             rstd = op::rsqrt(var + c.double_arg(4));
           }
           Tensor x_hat = (x - mean) * rstd;
           Tensor dy = c.grad(0);
           c.set(0, [&] {
             Tensor g = c.is_none(2) ? dy : dy * c.input(2);
             Tensor mean_g = op::mean(g, std::optional<sdk::IntList>(inner), true);
             Tensor mean_gx = op::mean(g * x_hat, std::optional<sdk::IntList>(inner), true);
             return (g - mean_g - x_hat * mean_gx) * rstd;
           });
           c.set(2, [&] {
             Tensor w = dy * x_hat;
             return outer.empty() ? w : op::sum(w, std::optional<sdk::IntList>(outer));
           });
           c.set(3, [&] {
             return outer.empty() ? dy : op::sum(dy, std::optional<sdk::IntList>(outer));
           });
         },
         true, outputs({0})});
}

}  // namespace loom::autograd
