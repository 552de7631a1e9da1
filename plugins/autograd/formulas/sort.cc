// Derivatives of the sort family: the values of sort and topk (scattered back through
// the indices); argsort, searchsorted, bucketize and unique are not differentiable.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

// The values' gradient goes back to where each value came from (indices, return 1)
// along the dim given by argument DimArg.
template <size_t DimArg>
void values_back(BackwardContext& c) {
  c.set(0, [&] {
    Tensor zeros = sdk::full(c.input_sizes(0), 0.0, c.grad(0).dtype(), c.grad(0).device());
    return op::scatter(zeros, c.int_arg(DimArg), c.result(1), c.grad(0));
  });
}

}  // namespace

void register_sort_formulas(FormulaTable& t) {
  t.add({"loom::sort", 0, outputs({1}), values_back<1>, true, outputs({0})});
  t.add({"loom::topk", 0, outputs({1}), values_back<2>, true, outputs({0})});
  t.not_differentiable(
      {"loom::argsort", "loom::searchsorted.Tensor", "loom::bucketize.Tensor", "loom::unique"});
}

}  // namespace loom::autograd
