// The kernels of the quantization op family (ops/schemas/quantization.def): quantizing
// float tensors per tensor and per channel (CPU key), reading quantized tensors back
// (dequantize, int_repr and the q_* accessors, Quantized key) and fake quantization in
// float (CPU key). The arithmetic is PyTorch's: q = clamp(zero_point +
// nearbyint(x * (1 / scale)), qmin, qmax) in float32 with round-half-to-even, and
// x = (q - zero_point) * scale.
#include <cmath>
#include <string>
#include <vector>

#include "../quantized_math.h"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {
namespace {

using sdk::Tensor;

// --- quantizing ---

Tensor quantize_per_tensor(const Tensor& self, double scale, int64_t zero_point, LoomDType dtype) {
  constexpr const char* op = "loom::quantize_per_tensor";
  check_quantizable(op, self);
  check_quantized_dtype(op, dtype);
  check_scale(op, scale, "");
  check_zero_point(op, zero_point, quant_min(dtype), quant_max(dtype), dtype_label(dtype), "");
  const Tensor x = float32_contiguous(self);
  LoomQuantizer q{LOOM_QSCHEME_PER_TENSOR_AFFINE, 0, scale, zero_point, nullptr, nullptr};
  Tensor out = sdk::empty_quantized(self.sizes(), dtype, q, self.device());
  quantize_into(x.data<float>(), out, ChannelParams::per_tensor(scale, zero_point));
  return out;
}

Tensor quantize_per_channel(const Tensor& self, const Tensor& scales, const Tensor& zero_points,
                            int64_t axis, LoomDType dtype) {
  constexpr const char* op = "loom::quantize_per_channel";
  check_quantizable(op, self);
  check_quantized_dtype(op, dtype);
  const int64_t dim = normalize_axis(op, axis, self.dim());
  ChannelParams params =
      ChannelParams::per_channel(op, scales, zero_points, self.size(dim), dim, quant_min(dtype),
                                 quant_max(dtype), dtype_label(dtype));
  const Tensor x = float32_contiguous(self);
  LoomQuantizer q{LOOM_QSCHEME_PER_CHANNEL_AFFINE, static_cast<int32_t>(dim),      0, 0,
                  params.scales_tensor.get(),      params.zero_points_tensor.get()};
  Tensor out = sdk::empty_quantized(self.sizes(), dtype, q, self.device());
  quantize_into(x.data<float>(), out, params);
  return out;
}

// --- reading quantized tensors ---

Tensor dequantize(const Tensor& self) {
  constexpr const char* op = "loom::dequantize";
  // A float tensor is already dequantized: a float32 copy, as PyTorch's CPU kernel.
  if (self.quantizer() == nullptr && is_float_dtype(self.dtype())) {
    return sdk::op::to(self, LOOM_DTYPE_FLOAT32, false, true);
  }
  const LoomQuantizer& q = quantizer_of(op, self);
  const Tensor in = dense_quantized(self);
  Tensor out = sdk::empty(self.sizes(), LOOM_DTYPE_FLOAT32, self.device());
  dequantize_into(in, out.data<float>(), ChannelParams::of(q, in));
  return out;
}

Tensor int_repr(const Tensor& self) {
  constexpr const char* op = "loom::int_repr";
  quantizer_of(op, self);
  const Tensor in = dense_quantized(self);
  Tensor out = sdk::empty(self.sizes(), integer_dtype(self.dtype()), self.device());
  copy_raw(in, out);
  return out;
}

const LoomQuantizer& per_tensor_quantizer(const char* op, const Tensor& self) {
  const LoomQuantizer& q = quantizer_of(op, self);
  if (q.scheme != LOOM_QSCHEME_PER_TENSOR_AFFINE) {
    throw sdk::Error(std::string("[") + op +
                         "] expected a tensor quantized per tensor, found one quantized per "
                         "channel (use q_per_channel_scales / q_per_channel_zero_points)",
                     LOOM_STATUS_INVALID_ARGUMENT);
  }
  return q;
}

const LoomQuantizer& per_channel_quantizer(const char* op, const Tensor& self) {
  const LoomQuantizer& q = quantizer_of(op, self);
  if (q.scheme != LOOM_QSCHEME_PER_CHANNEL_AFFINE) {
    throw sdk::Error(std::string("[") + op +
                         "] expected a tensor quantized per channel, found one quantized per "
                         "tensor (use q_scale / q_zero_point)",
                     LOOM_STATUS_INVALID_ARGUMENT);
  }
  return q;
}

double q_scale(const Tensor& self) {
  return per_tensor_quantizer("loom::q_scale", self).scale;
}

int64_t q_zero_point(const Tensor& self) {
  return per_tensor_quantizer("loom::q_zero_point", self).zero_point;
}

Tensor q_per_channel_scales(const Tensor& self) {
  // A copy: the quantizer's own parameters never change.
  return sdk::op::clone(
      Tensor::borrow(per_channel_quantizer("loom::q_per_channel_scales", self).scales));
}

Tensor q_per_channel_zero_points(const Tensor& self) {
  return sdk::op::clone(
      Tensor::borrow(per_channel_quantizer("loom::q_per_channel_zero_points", self).zero_points));
}

int64_t q_per_channel_axis(const Tensor& self) {
  return per_channel_quantizer("loom::q_per_channel_axis", self).axis;
}

// --- fake quantization (float in, float out) ---

Tensor fake_quantize_per_tensor_affine(const Tensor& self, double scale, int64_t zero_point,
                                       int64_t qmin, int64_t qmax) {
  constexpr const char* op = "loom::fake_quantize_per_tensor_affine";
  check_quantizable(op, self);
  check_range(op, qmin, qmax);
  check_scale(op, scale, "");
  check_zero_point(op, zero_point, qmin, qmax, "[quant_min, quant_max]", "");
  const Tensor x = float32_contiguous(self);
  Tensor out = sdk::empty(self.sizes(), LOOM_DTYPE_FLOAT32, self.device());
  fake_quantize_into(x.data<float>(), out.data<float>(), x.numel(),
                     ChannelParams::per_tensor(scale, zero_point), qmin, qmax);
  return self.dtype() == LOOM_DTYPE_FLOAT32 ? out : sdk::op::to(out, self.dtype());
}

Tensor fake_quantize_per_channel_affine(const Tensor& self, const Tensor& scale,
                                        const Tensor& zero_point, int64_t axis, int64_t qmin,
                                        int64_t qmax) {
  constexpr const char* op = "loom::fake_quantize_per_channel_affine";
  check_quantizable(op, self);
  check_range(op, qmin, qmax);
  const int64_t dim = normalize_axis(op, axis, self.dim());
  ChannelParams params = ChannelParams::per_channel(op, scale, zero_point, self.size(dim), dim,
                                                    qmin, qmax, "[quant_min, quant_max]");
  params.set_layout(self.sizes());
  const Tensor x = float32_contiguous(self);
  Tensor out = sdk::empty(self.sizes(), LOOM_DTYPE_FLOAT32, self.device());
  fake_quantize_into(x.data<float>(), out.data<float>(), x.numel(), params, qmin, qmax);
  return self.dtype() == LOOM_DTYPE_FLOAT32 ? out : sdk::op::to(out, self.dtype());
}

}  // namespace

void register_quantization_kernels(sdk::Registrar& r) {
  const uint32_t cpu = LOOM_KEY_CPU, quantized = LOOM_KEY_QUANTIZED;
  r.impl<&quantize_per_tensor>("loom::quantize_per_tensor", cpu);
  r.impl<&quantize_per_channel>("loom::quantize_per_channel", cpu);
  r.impl<&fake_quantize_per_tensor_affine>("loom::fake_quantize_per_tensor_affine", cpu);
  r.impl<&fake_quantize_per_channel_affine>("loom::fake_quantize_per_channel_affine", cpu);
  // The readers of quantized tensors also sit at the CPU key, where a float tensor gets
  // dequantize's copy or a clear refusal rather than "no kernel".
  for (const uint32_t key : {quantized, cpu}) {
    r.impl<&dequantize>("loom::dequantize", key);
    r.impl<&int_repr>("loom::int_repr", key);
    r.impl<&q_scale>("loom::q_scale", key);
    r.impl<&q_zero_point>("loom::q_zero_point", key);
    r.impl<&q_per_channel_scales>("loom::q_per_channel_scales", key);
    r.impl<&q_per_channel_zero_points>("loom::q_per_channel_zero_points", key);
    r.impl<&q_per_channel_axis>("loom::q_per_channel_axis", key);
  }
}

}  // namespace loom::quantization
