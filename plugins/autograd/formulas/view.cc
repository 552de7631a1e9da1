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

// unfold(self, dimension, size, step): window w of the output holds self's elements
// w * step .. w * step + size - 1 along `dimension`, in its last dim. The gradient of
// window element k goes back to positions k, k + step, ... (windows may overlap: they add).
Tensor unfold_backward(BackwardContext& c) {
  std::span<const int64_t> sizes = c.input_sizes(0);
  Tensor grad = c.grad();
  const bool scalar = sizes.empty();
  std::vector<int64_t> shape(sizes.begin(), sizes.end());
  if (scalar) shape.push_back(1);
  int64_t dim = c.int_arg(1);
  if (dim < 0) dim += static_cast<int64_t>(shape.size());
  const int64_t size = c.int_arg(2), step = c.int_arg(3);
  const int64_t windows = grad.size(scalar ? 0 : dim);
  if (scalar) grad = op::unsqueeze(grad, 0);
  Tensor out = sdk::full(shape, 0.0, grad.dtype(), grad.device());
  Tensor positions = sdk::empty({windows}, LOOM_DTYPE_INT64);
  for (int64_t k = 0; k < size; ++k) {
    for (int64_t w = 0; w < windows; ++w) positions.data<int64_t>()[w] = w * step + k;
    Tensor index = grad.device().type == LOOM_DEVICE_CPU ? op::clone(positions)
                                                         : op::to(positions, grad.device());
    out = op::index_add(out, dim, index, op::select(grad, -1, k));
  }
  return scalar ? op::reshape(out, sizes) : out;
}

void register_view_formulas(FormulaTable& t) {
  t.add({"loom::unfold", 0, 0,
         [](BackwardContext& c) { c.set(0, [&] { return unfold_backward(c); }); }});
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
  // Note [Complex views]: each is the other's inverse, so each other's gradient.
  t.add({"loom::view_as_real", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] { return op::view_as_complex(op::contiguous(c.grad())); });
         }});
  t.add({"loom::view_as_complex", 0, 0,
         [](BackwardContext& c) { c.set(0, [&] { return op::view_as_real(c.grad()); }); }});
  // Note [resize_]: new sizes have no derivative.
  t.add(refuses_grad("loom::resize_", "cannot resize a tensor that requires grad"));
}

}  // namespace loom::autograd
