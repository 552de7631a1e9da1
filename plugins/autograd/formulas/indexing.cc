// Derivatives of the indexing family: index_select, gather, scatter, scatter_add,
// scatter_reduce and index.Tensor, each the adjoint of the other (gather <-> scatter_add,
// index <-> index_put with accumulation). index_add, index_copy, masked_select, index_put,
// masked_scatter and repeat_interleave are decompositions; nonzero and one_hot are not
// differentiable.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

Tensor zeros_of(BackwardContext& c, size_t arg) {
  return sdk::full(c.input_sizes(arg), 0.0, c.grad().dtype(), c.grad().device());
}

// A gradient for src computed over index's shape, put in a zero tensor of src's shape:
// src elements beyond index's extent take no part in a scatter.
Tensor to_src_shape(BackwardContext& c, const Tensor& taken) {
  const Tensor index = c.input(2);
  std::span<const int64_t> src = c.input_sizes(3);
  if (std::equal(src.begin(), src.end(), index.sizes().begin(), index.sizes().end())) return taken;
  return embed(taken, src, [&](const Tensor& z) {
    Tensor region = z;
    for (int64_t d = 0; d < index.dim(); ++d) region = op::narrow(region, d, 0, index.size(d));
    return region;
  });
}

// src's gradient in scatter: what lands on self, read back through index.
Tensor src_gradient(BackwardContext& c) {
  return to_src_shape(c, op::gather(c.grad(), c.int_arg(1), c.input(2)));
}

// Note [scatter_reduce's gradients]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With g the gradient of the result r, over src's part that index covers (s):
//  * sum: self gets g, src gets g at its target (gather);
//  * mean: both get g / N, N the count of values averaged at the target;
//  * prod: self gets g * (the product without self), src g * (the product without it):
//    r / x where x is not zero; where x is the only zero of its target, the product with
//    x replaced by 1 (recomputed); where a target has two zeros, every gradient is 0;
//  * amax / amin: the gradient is shared evenly among the values equal to r at each
//    target. self counts only where it took part: unlike PyTorch's formula, which also
//    counts an excluded self equal to r (include_self=False), so src's share is right.
// With include_self=False self gets nothing at the positions src reaches.
void scatter_reduce_gradients(BackwardContext& c) {
  const int64_t dim = c.int_arg(1);
  const Tensor self = c.input(0), index = c.input(2), result = c.result();
  const std::string_view reduce = c.str_arg(4);
  const bool include_self = c.bool_arg(5);
  const Tensor& g = c.grad();
  std::span<const int64_t> src_sizes = c.input_sizes(3);
  Tensor src = c.input(3);
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (index.size(d) != src_sizes[static_cast<size_t>(d)]) {
      src = op::narrow(src, d, 0, index.size(d));
    }
  }
  auto without_excluded_self = [&](Tensor grad_self) {
    return include_self ? grad_self : op::scatter(grad_self, dim, index, sdk::scalar(0.0));
  };
  Tensor grad_self, grad_src;
  if (reduce == "sum") {
    grad_self = g;
    grad_src = op::gather(g, dim, index);
  } else if (reduce == "mean") {
    Tensor n = include_self ? sdk::ones_like(self) : sdk::zeros_like(self);
    n = op::clamp_min(op::scatter_add(n, dim, index, sdk::ones_like(src)), sdk::scalar(1.0));
    grad_self = op::div(g, n);
    grad_src = op::gather(grad_self, dim, index);
  } else if (reduce == "prod") {
    Tensor self_zero = op::eq(self, sdk::scalar(0.0));
    Tensor masked_self = op::masked_fill(self, self_zero, sdk::scalar(1.0));
    Tensor without_self = op::scatter_reduce(masked_self, dim, index, src, "prod", include_self);
    grad_self = op::div(op::mul(g, without_self), masked_self);
    Tensor src_zero = op::eq(src, sdk::scalar(0.0));
    Tensor zeros_at_target = op::gather(
        op::scatter_add(sdk::zeros_like(self), dim, index, op::to(src_zero, self.dtype())), dim,
        index);
    Tensor single_zero = op::logical_and(src_zero, op::eq(zeros_at_target, sdk::scalar(1.0)));
    Tensor without_single_zero =
        op::scatter_reduce(self, dim, index, op::masked_fill(src, single_zero, sdk::scalar(1.0)),
                           "prod", include_self);
    grad_src = op::where(single_zero, op::gather(op::mul(g, without_single_zero), dim, index),
                         op::div(op::gather(op::mul(g, result), dim, index),
                                 op::masked_fill(src, src_zero, sdk::scalar(1.0))));
  } else {  // amax, amin
    Tensor value = op::gather(result, dim, index);
    Tensor self_is_result = op::to(op::eq(self, result), self.dtype());
    if (!include_self) self_is_result = op::scatter(self_is_result, dim, index, sdk::scalar(0.0));
    Tensor src_is_result = op::to(op::eq(src, value), self.dtype());
    Tensor shares = op::scatter_add(self_is_result, dim, index, src_is_result);
    Tensor distributed = op::div(g, op::clamp_min(shares, sdk::scalar(1.0)));
    grad_self = op::mul(self_is_result, distributed);
    grad_src = op::mul(src_is_result, op::gather(distributed, dim, index));
  }
  c.set(0, [&] { return without_excluded_self(grad_self); });
  c.set(3, [&] { return to_src_shape(c, grad_src); });
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
  // Note [scatter_reduce's gradients]
  t.add({"loom::scatter_reduce.two", inputs({0, 2, 3}), outputs({0}), scatter_reduce_gradients});
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
