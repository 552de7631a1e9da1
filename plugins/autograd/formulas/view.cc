// Derivatives of the view family. A view's gradient is the gradient of its elements put
// back at their places in the base's shape: reshaped, permuted back, or embedded in
// zeros for the views that select part of the base.
#include <numeric>

#include "../inplace_view.h"
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

void reshape_back(BackwardContext& c) {
  c.set(0, [&] { return op::reshape(c.grad(), c.input_sizes(0)); });
}

}  // namespace

void register_view_formulas(FormulaTable& t) {
  t.add({"loom::view", 0, 0, reshape_back});
  t.add({"loom::squeeze", 0, 0, reshape_back});
  t.add({"loom::squeeze.dim", 0, 0, reshape_back});
  t.add({"loom::unsqueeze", 0, 0, reshape_back});
  t.add({"loom::unflatten.int", 0, 0, reshape_back});
  // as_strided of a dense tensor: the gradient lands at the storage places the view
  // read, in a zero tensor laid out like the input.
  Formula as_strided{"loom::as_strided", 0, 0, [](BackwardContext& c) {
                       c.set(0, [&] {
                         Tensor self = c.layout(0);
                         ViewGeometry g = ViewGeometry::of(self, self);
                         g.sizes.assign(c.ints(1));
                         g.strides.assign(c.ints(2));
                         g.offset = (c.is_none(3) ? self.storage_offset() : c.int_arg(3)) -
                                    self.storage_offset();
                         return view_gradient_to_base(g, c.grad());
                       });
                     }};
  as_strided.saved_layouts = inputs({0});
  t.add(as_strided);
  t.add({"loom::alias", 0, 0, [](BackwardContext& c) { c.set(0, [&] { return c.grad(); }); }});
  t.add({"loom::permute", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::span<const int64_t> dims = c.ints(1);
             const int64_t n = static_cast<int64_t>(dims.size());
             std::vector<int64_t> inverse(dims.size());
             for (int64_t i = 0; i < n; ++i) inverse[dims[i] < 0 ? dims[i] + n : dims[i]] = i;
             return op::permute(c.grad(), inverse);
           });
         }});
  t.add({"loom::transpose.int", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] { return op::transpose(c.grad(), c.int_arg(1), c.int_arg(2)); });
         }});
  t.add({"loom::t", 0, 0, [](BackwardContext& c) { c.set(0, [&] { return op::t(c.grad()); }); }});
  t.add({"loom::expand", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] { return sdk::sum_to(c.grad(), c.input_sizes(0)); });
         }});
  t.add({"loom::slice.Tensor", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::optional<int64_t> start, end;
             if (!c.is_none(2)) start = c.int_arg(2);
             if (!c.is_none(3)) end = c.int_arg(3);
             return embed(c.grad(), c.input_sizes(0), [&](const Tensor& z) {
               return op::slice(z, c.int_arg(1), start, end, c.int_arg(4));
             });
           });
         }});
  t.add({"loom::narrow", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             return embed(c.grad(), c.input_sizes(0), [&](const Tensor& z) {
               return op::narrow(z, c.int_arg(1), c.int_arg(2), c.int_arg(3));
             });
           });
         }});
  t.add({"loom::select.int", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             return embed(c.grad(), c.input_sizes(0), [&](const Tensor& z) {
               return op::select(z, c.int_arg(1), c.int_arg(2));
             });
           });
         }});
  t.add({"loom::diagonal", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             return embed(c.grad(), c.input_sizes(0), [&](const Tensor& z) {
               return op::diagonal(z, c.int_arg(1), c.int_arg(2), c.int_arg(3));
             });
           });
         }});
}

}  // namespace loom::autograd
