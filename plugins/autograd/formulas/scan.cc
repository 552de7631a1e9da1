// Derivatives of the scan family: cumsum, cumprod, cummax, cummin.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

// cummax/cummin: each output position took its value from indices[i]; many positions
// may share one source, so their gradients add.
void cumulative_extremum(BackwardContext& c) {
  c.set(0, [&] {
    std::span<const int64_t> sizes = c.input_sizes(0);
    Tensor zeros = sdk::full(sizes, 0.0, c.grad(0).dtype(), c.grad(0).device());
    return op::scatter_add(zeros, c.int_arg(1), c.result(1), c.grad(0));
  });
}

Tensor reverse_cumsum(const Tensor& t, int64_t dim) {
  return op::flip(op::cumsum(op::flip(t, {dim}), dim), {dim});
}

}  // namespace

void register_scan_formulas(FormulaTable& t) {
  t.add({"loom::cumsum", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] { return reverse_cumsum(c.grad(), c.int_arg(1)); });
         }});
  // cumprod: d out_j / d x_i = out_j / x_i for j >= i (inputs without zeros).
  t.add({"loom::cumprod", inputs({0}), outputs({0}), [](BackwardContext& c) {
           c.set(0,
                 [&] { return reverse_cumsum(c.grad() * c.result(), c.int_arg(1)) / c.input(0); });
         }});
  t.add({"loom::cummax", 0, outputs({1}), cumulative_extremum, true, outputs({0})});
  t.add({"loom::cummin", 0, outputs({1}), cumulative_extremum, true, outputs({0})});
}

}  // namespace loom::autograd
