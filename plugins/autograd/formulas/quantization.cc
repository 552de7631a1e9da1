// The quantization family's formulas. Quantized tensors carry no gradient (PyTorch's do
// not either): quantize, dequantize and the accessors are not differentiable. Fake
// quantization is quantization-aware training's op: its gradient passes straight
// through where the value was inside [quant_min, quant_max] after rounding and is zero
// where it was clamped (PyTorch's straight-through estimator, Bengio et al. 2013).
#include "helpers.h"

namespace loom::autograd {
namespace {

using formulas::Tensor;
namespace op = formulas::op;

// Whether zero_point + round(x / scale) lies in [quant_min, quant_max], with `scale` and
// `zero_point` numbers or tensors broadcast along x.
Tensor inside(const Tensor& x, const Tensor& inv_scale, const Tensor& zero_point, int64_t qmin,
              int64_t qmax) {
  Tensor q = op::add(op::round(op::mul(x, inv_scale)), zero_point);
  return op::logical_and(op::ge(q, sdk::scalar(static_cast<double>(qmin))),
                         op::le(q, sdk::scalar(static_cast<double>(qmax))));
}

}  // namespace

void register_quantization_formulas(FormulaTable& t) {
  t.not_differentiable({"loom::quantize_per_tensor", "loom::quantize_per_channel",
                        "loom::dequantize", "loom::int_repr", "loom::q_scale", "loom::q_zero_point",
                        "loom::q_per_channel_scales", "loom::q_per_channel_zero_points",
                        "loom::q_per_channel_axis"});
  t.add({"loom::fake_quantize_per_tensor_affine", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             const Tensor x = c.input(0);
             const float inv_scale = 1.0f / static_cast<float>(c.double_arg(1));
             const Tensor mask = inside(x, formulas::scalar_like(x, inv_scale),
                                        formulas::scalar_like(x, static_cast<double>(c.int_arg(2))),
                                        c.int_arg(3), c.int_arg(4));
             return op::mul(c.grad(), mask);
           });
         }});
  t.add({"loom::fake_quantize_per_channel_affine", inputs({0, 1, 2}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             const Tensor x = c.input(0);
             int64_t axis = c.int_arg(3);
             if (axis < 0) axis += x.dim();
             // The per-channel parameters as [1, .., C, .., 1], broadcasting along x.
             std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
             shape[static_cast<size_t>(axis)] = x.size(axis);
             const Tensor scale = op::reshape(op::to(c.input(1), x.dtype()), shape);
             const Tensor zero_point = op::reshape(op::to(c.input(2), x.dtype()), shape);
             const Tensor mask =
                 inside(x, op::reciprocal(scale), zero_point, c.int_arg(4), c.int_arg(5));
             return op::mul(c.grad(), mask);
           });
         }});
}

}  // namespace loom::autograd
