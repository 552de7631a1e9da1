// Derivatives of the pool family: max pooling (max_pool2d_with_indices_backward, or scattered
// through the saved indices; the backward's own derivative gathers at them),
// average and adaptive average pooling and bilinear upsampling (as separable matrix
// products), and grid sampling (through grid_sampler_2d_backward). The 1-D pools, max_pool2d and
// nearest upsampling are decompositions.
#include <cmath>
#include <tuple>

#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

// Note [Separable pooling]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Average pooling (any padding, ceil_mode, count_include_pad or divisor_override),
// adaptive average pooling and bilinear upsampling are linear maps that act on rows and
// columns separately: out = A_h x A_w^T for each plane, A_h of shape [out_h, in_h] and
// A_w [out_w, in_w] (a divisor_override is put in A_h alone). So the gradient is
// A_h^T grad A_w, two matrix products, exact for every option, and itself differentiable.
// Average pooling's products are the op library's avg_pool2d_backward
// (ops/decompositions/pool.cc); the others are built here.
Tensor separable_backward(const Tensor& grad, const Tensor& a_h, const Tensor& a_w) {
  return op::matmul(op::matmul(op::t(a_h), grad), a_w);
}

Tensor adaptive_matrix(int64_t out, int64_t in, const Tensor& like) {
  return host_matrix(
      out, in,
      [&](double* m) {
        for (int64_t i = 0; i < out; ++i) {
          const int64_t start = (i * in) / out;
          const int64_t end = ((i + 1) * in + out - 1) / out;
          for (int64_t k = start; k < end; ++k)
            m[i * in + k] = 1.0 / static_cast<double>(end - start);
        }
      },
      like.dtype(), like.device());
}

// Bilinear interpolation weights along one dim (PyTorch's source index rule).
Tensor bilinear_matrix(int64_t out, int64_t in, bool align_corners, std::optional<double> scale,
                       const Tensor& like) {
  return host_matrix(
      out, in,
      [&](double* m) {
        double ratio;
        if (align_corners) {
          ratio = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
        } else {
          ratio = scale && *scale > 0 ? 1.0 / *scale
                                      : static_cast<double>(in) / static_cast<double>(out);
        }
        for (int64_t i = 0; i < out; ++i) {
          double src = align_corners ? ratio * static_cast<double>(i)
                                     : std::max(ratio * (static_cast<double>(i) + 0.5) - 0.5, 0.0);
          int64_t h0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
          int64_t h1 = std::min(h0 + 1, in - 1);
          double lambda = src - static_cast<double>(h0);
          m[i * in + h0] += 1.0 - lambda;
          m[i * in + h1] += lambda;
        }
      },
      like.dtype(), like.device());
}

// The gradient of a max taken at flat per-plane `indices`: added back at those places.
Tensor scatter_planes(const Tensor& grad, const Tensor& indices, std::span<const int64_t> sizes) {
  const int64_t h = sizes[sizes.size() - 2], w = sizes[sizes.size() - 1];
  std::vector<int64_t> planes(sizes.begin(), sizes.end() - 2);
  planes.push_back(h * w);
  std::vector<int64_t> flat(sizes.begin(), sizes.end() - 2);
  flat.push_back(-1);
  Tensor zeros = sdk::full(planes, 0.0, grad.dtype(), grad.device());
  // in place into the fresh zeros: the functional op would copy them once more
  Tensor g = op::scatter_add_(zeros, static_cast<int64_t>(planes.size()) - 1,
                              op::reshape(indices, flat), op::reshape(grad, flat));
  return op::reshape(g, sizes);
}

void max_with_indices(BackwardContext& c) {
  c.set(0, [&] { return scatter_planes(c.grad(0), c.result(1), c.input_sizes(0)); });
}

// max_pool2d_with_indices's gradient in one op (PyTorch's max_pool2d_with_indices_backward).
void max_pool_with_indices(BackwardContext& c) {
  c.set(0, [&] {
    return op::max_pool2d_with_indices_backward(c.grad(0), c.input(0), c.ints(1), c.ints(2),
                                                c.ints(3), c.ints(4), c.bool_arg(5), c.result(1));
  });
}

// The gradient's own gradient: the values of grad_output's gradient at the saved indices,
// plane by plane (it is linear in grad_output; self only gives the shape).
void max_pool_backward_backward(BackwardContext& c) {
  c.set(0, [&] {
    Tensor indices = c.input(7);
    std::span<const int64_t> sizes = indices.sizes();
    std::vector<int64_t> flat(sizes.begin(), sizes.end() - 2), planes = flat;
    flat.push_back(-1);
    const Tensor self = c.layout(1);  // its shape only
    planes.push_back(self.size(-2) * self.size(-1));
    Tensor grad = op::reshape(c.grad(), planes);
    return op::reshape(
        op::gather(grad, static_cast<int64_t>(flat.size()) - 1, op::reshape(indices, flat)), sizes);
  });
}

}  // namespace

void register_pool_formulas(FormulaTable& t) {
  t.add({"loom::max_pool2d_with_indices", inputs({0}), outputs({1}), max_pool_with_indices, true,
         outputs({0})});
  t.add({"loom::max_pool2d_with_indices_backward", inputs({7}), 0, max_pool_backward_backward, true,
         ~0u, inputs({1})});
  t.add({"loom::adaptive_max_pool2d", 0, outputs({1}), max_with_indices, true, outputs({0})});
  // Both gradients come from one call of the op library's grid_sampler_2d_backward (which,
  // as in PyTorch, has no derivative itself: no double backward through grid sampling).
  t.add({"loom::grid_sampler_2d", inputs({0, 1}), 0, [](BackwardContext& c) {
           // Named tensors, not a structured binding: clang 14 cannot capture one.
           Tensor grad_input, grad_grid;
           std::tie(grad_input, grad_grid) = op::grid_sampler_2d_backward(
               c.grad(), c.input(0), c.input(1), c.int_arg(2), c.int_arg(3), c.bool_arg(4));
           c.set(0, [&] { return grad_input; });
           c.set(1, [&] { return grad_grid; });
         }});
  // The op library's avg_pool2d_backward (the same separable products), as PyTorch's
  // formula calls it; self is saved for its shape and the argument checks.
  t.add({"loom::avg_pool2d", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::optional<int64_t> divisor;
             if (!c.is_none(6)) divisor = c.int_arg(6);
             return op::avg_pool2d_backward(c.grad(), c.input(0), c.ints(1), c.ints(2), c.ints(3),
                                            c.bool_arg(4), c.bool_arg(5), divisor);
           });
         }});
  t.add({"loom::adaptive_avg_pool2d", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::span<const int64_t> sizes = c.input_sizes(0);
             std::span<const int64_t> out = c.output_sizes();
             const size_t n = sizes.size();
             return separable_backward(c.grad(),
                                       adaptive_matrix(out[n - 2], sizes[n - 2], c.grad()),
                                       adaptive_matrix(out[n - 1], sizes[n - 1], c.grad()));
           });
         }});
  t.add({"loom::upsample_bilinear2d", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::span<const int64_t> sizes = c.input_sizes(0);
             std::span<const int64_t> out = c.output_sizes();
             const size_t n = sizes.size();
             const bool align = c.bool_arg(2);
             std::optional<double> sh, sw;
             if (!c.is_none(3)) sh = c.double_arg(3);
             if (!c.is_none(4)) sw = c.double_arg(4);
             return separable_backward(
                 c.grad(), bilinear_matrix(out[n - 2], sizes[n - 2], align, sh, c.grad()),
                 bilinear_matrix(out[n - 1], sizes[n - 1], align, sw, c.grad()));
           });
         }});
}

}  // namespace loom::autograd
