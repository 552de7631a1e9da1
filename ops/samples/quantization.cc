// Samples of the quantization family: quantizing float tensors, the readers' refusal of a
// float one and dequantize's pass-through; dequantize of quantized tensors (Note [Quantized
// samples]) for `loom conform --backend quantized`. Quantized results compare by their
// integers and quantizers (testing/sample_runner/comparison.cc); they have no meta kernels.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

constexpr const char* kNoMeta = "quantized tensors have no meta kernels";
constexpr const char* kNotQuantized = "expected a quantized tensor, found float32";

OpSample quantizing(std::string op, std::vector<SampleArg> args) {
  return OpSample{std::move(op), std::move(args)}.no_meta(kNoMeta);
}

std::vector<OpSample> make() {
  return {
      quantizing("loom::quantize_per_tensor", {T({2, 3}), D(0.05), I(3), kQI8}),
      quantizing("loom::quantize_per_tensor", {T({4}, kF64), D(0.02), I(128), kQU8}),
      quantizing("loom::quantize_per_tensor", {T({}), D(0.5), I(0), kQI32}),
      OpSample{"loom::quantize_per_tensor", {T({3}, kI64), D(0.1), I(0), kQI8}}.raises(
          "expected a floating-point tensor to quantize, found int64"),
      OpSample{"loom::quantize_per_tensor", {T({3}), D(0.0), I(0), kQI8}}.raises(
          "scale must be positive and finite, found 0"),
      OpSample{"loom::quantize_per_tensor", {T({3}), D(0.1), I(300), kQU8}}.raises(
          "zero point must be within quint8's range [0, 255], found 300"),
      quantizing("loom::quantize_per_channel", {T({3, 4}), T({3}, kF64, Fill::Positive),
                                                T({3}, kI64, Fill::SmallInt), I(0), kQI8}),
      quantizing("loom::quantize_per_channel",
                 {T({2, 4}), T({4}, kF32, Fill::Positive), T({4}, kI64, Fill::Unit), I(-1), kQU8}),
      OpSample{"loom::quantize_per_channel",
               {T({2, 4}), T({3}, kF64, Fill::Positive), T({3}, kI64, Fill::Unit), I(1), kQU8}}
          .raises("expected 4 scales and zero points (the size of axis 1), found 3"),
      quantizing("loom::dequantize", {T({2, 3})}).with_note("a float tensor dequantizes to itself"),
      OpSample{"loom::int_repr", {T({2})}}.raises(kNotQuantized),
      OpSample{"loom::q_scale", {T({2})}}.raises(kNotQuantized),
      OpSample{"loom::q_zero_point", {T({2})}}.raises(kNotQuantized),
      OpSample{"loom::q_per_channel_scales", {T({2})}}.raises(kNotQuantized),
      OpSample{"loom::q_per_channel_zero_points", {T({2})}}.raises(kNotQuantized),
      OpSample{"loom::q_per_channel_axis", {T({2})}}.raises(kNotQuantized),
      quantizing("loom::fake_quantize_per_tensor_affine",
                 {T({2, 3}), D(0.1), I(0), I(-128), I(127)}),
      quantizing("loom::fake_quantize_per_tensor_affine",
                 {T({5}, kF64), D(0.25), I(2), I(0), I(7)}),
      OpSample{"loom::fake_quantize_per_tensor_affine", {T({3}), D(0.1), I(9), I(0), I(7)}}.raises(
          "zero point must be within [quant_min, quant_max] [0, 7], found 9"),
      quantizing("loom::fake_quantize_per_channel_affine",
                 {T({2, 3}), T({2}, kF32, Fill::Positive), T({2}, kI64, Fill::SmallInt), I(0),
                  I(-128), I(127)}),
      OpSample{
          "loom::fake_quantize_per_channel_affine",
          {T({2, 3}), T({2}, kF32, Fill::Positive), T({2}, kI64, Fill::SmallInt), I(0), I(5), I(1)}}
          .raises("quant_min (5) must not exceed quant_max (1)"),
      // Quantized inputs (Note [Quantized samples]).
      OpSample{"loom::dequantize", {Q({2, 3})}}.against({.float_op = "loom::clone"}),
      OpSample{"loom::dequantize", {QC({3, 4}, 0)}}.against({.float_op = "loom::clone"}),
      OpSample{"loom::quantize_per_tensor", {Q({3}), D(0.1), I(0), kQI8}}.raises(
          "expected a floating-point tensor to quantize, found quint8"),
  };
}

}  // namespace

std::span<const OpSample> quantization_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
