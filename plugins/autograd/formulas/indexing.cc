// Derivatives of the indexing family: index_select, gather, scatter, scatter_add and
// index.Tensor, each the adjoint of the other (gather <-> scatter_add, index <->
// index_put with accumulation). index_add, index_copy, masked_select, index_put,
// masked_scatter and repeat_interleave are decompositions; nonzero and one_hot are not
// differentiable.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

Tensor zeros_of(BackwardContext& c, size_t arg) {
  return sdk::full(c.input_sizes(arg), 0.0, c.grad().dtype(), c.grad().device());
}

// src's gradient in scatter: what lands on self, read back through index; src
// elements beyond index's extent get none.
Tensor src_gradient(BackwardContext& c) {
  Tensor index = c.input(2);
  Tensor taken = op::gather(c.grad(), c.int_arg(1), index);
  std::span<const int64_t> src = c.input_sizes(3);
  if (std::equal(src.begin(), src.end(), index.sizes().begin(), index.sizes().end())) return taken;
  return embed(taken, src, [&](const Tensor& z) {
    Tensor region = z;
    for (int64_t d = 0; d < index.dim(); ++d) region = op::narrow(region, d, 0, index.size(d));
    return region;
  });
}

}  // namespace

void register_indexing_formulas(FormulaTable& t) {
  t.add({"loom::index_select", inputs({2}), 0, [](BackwardContext& c) {
           c.set(0,
                 [&] { return op::index_add(zeros_of(c, 0), c.int_arg(1), c.input(2), c.grad()); });
         }});
  t.add({"loom::gather", inputs({2}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             return op::scatter_add(zeros_of(c, 0), c.int_arg(1), c.input(2), c.grad());
           });
         }});
  // scatter: the overwritten places of self get nothing; src gets what lands on it.
  t.add({"loom::scatter.src", inputs({2}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return op::scatter(c.grad(), c.int_arg(1), c.input(2), sdk::Scalar{}); });
           c.set(3, [&] { return src_gradient(c); });
         }});
  t.add({"loom::scatter.value", inputs({2}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return op::scatter(c.grad(), c.int_arg(1), c.input(2), sdk::Scalar{}); });
         }});
  t.add({"loom::scatter_add", inputs({2}), 0, [](BackwardContext& c) {
           c.set(0, [&] { return c.grad(); });
           c.set(3, [&] { return src_gradient(c); });
         }});
  t.add({"loom::index.Tensor", inputs({1}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::vector<std::optional<Tensor>> indices;
             for (size_t i = 0; i < c.list_length(1); ++i) {
               indices.push_back(c.has_input(1, i) ? std::optional<Tensor>(c.input(1, i))
                                                   : std::nullopt);
             }
             return op::index_put(zeros_of(c, 0), indices, c.grad(), true);
           });
         }});
  t.not_differentiable({"loom::nonzero"});
}

}  // namespace loom::autograd
