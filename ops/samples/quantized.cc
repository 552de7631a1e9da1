// Samples of the quantized family: on float tensors, the refusals of the ops that need
// quantized operands and the float-in ops (weight packing, the weight-only layer); on
// quantized tensors (Note [Quantized samples]), the products, convolutions, add and mul
// against their float references, which `loom conform --backend quantized` checks.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

constexpr const char* kNotQuantized = "expected a quantized tensor, found float32";
constexpr const char* kNoMeta = "quantized kernels have no meta kernels";
// The float references (Note [Quantized samples]): the op's leading arguments, then its
// output scale and zero point, then its relu flag.
const QuantizedReference kLinear{"loom::linear", 3, 3, 4, 5};
const QuantizedReference kConv2d{"loom::conv2d", 7, 7, 8, 9};
const QuantizedReference kAdd{"loom::add.Tensor", 2, 2, 3, 4};
const QuantizedReference kMul{"loom::mul.Tensor", 2, 2, 3, 4};

std::vector<OpSample> make() {
  const TensorSpec packed_int8 = T({3, 64}, ScalarType::Int8, Fill::SmallInt);
  const TensorSpec packed_int4 = Idx({3, 32}, 256, kU8);
  return {
      OpSample{"loom::quantized_linear", {T({2, 4}), T({3, 4}), none(), D(0.1), I(0)}}.raises(
          kNotQuantized),
      OpSample{"loom::quantized_conv2d", {T({1, 2, 5, 5}), T({3, 2, 3, 3}), none()}}.raises(
          kNotQuantized),
      OpSample{"loom::quantized_add", {T({2, 3}), T({2, 3}), D(0.1), I(0)}}.raises(kNotQuantized),
      OpSample{"loom::quantized_mul", {T({2, 3}), T({2, 3}), D(0.1), I(0)}}.raises(kNotQuantized),
      OpSample{"loom::dynamic_quantized_linear", {T({2, 4}), T({3, 4}), none()}}.raises(
          kNotQuantized),
      OpSample{"loom::pack_weight_only", {T({3, 64}), I(8), I(32)}}.no_meta(kNoMeta),
      OpSample{"loom::pack_weight_only", {T({2, 128}), I(4), I(128)}}.no_meta(kNoMeta),
      OpSample{"loom::pack_weight_only", {T({2, 30}), I(4), I(32)}}.raises(
          "group_size must be a multiple of 32 that divides the 30 input features, found 32"),
      OpSample{"loom::weight_only_linear",
               {T({2, 64}), packed_int8, T({3, 2}, kF32, Fill::Positive), T({3}), I(8), I(32)}}
          .no_meta(kNoMeta),
      OpSample{"loom::weight_only_linear",
               {T({5, 64}), packed_int4, T({3, 1}, kF32, Fill::Positive), none(), I(4), I(64)}}
          .no_meta(kNoMeta),
      OpSample{"loom::weight_only_linear",
               {T({2, 64}), packed_int8, T({3, 2}, kF32, Fill::Positive), none(), I(4), I(32)}}
          .raises("expected uint8 packed weights for 4 bits (loom::pack_weight_only), found int8"),
      // Quantized operands (Note [Quantized samples]): each against the float op on the
      // dequantized inputs, requantized to the output scale and zero point given.
      OpSample{"loom::quantized_linear", {Q({2, 8}), Q({4, 8}, kQI8), T({4}), D(0.05), I(128)}}
          .against(kLinear),
      OpSample{"loom::quantized_linear",
               {Q({3, 16}, kQI8), QC({5, 16}, 0), none(), D(0.1), I(-20), B(true)}}
          .against(kLinear),
      OpSample{"loom::quantized_linear", {Q({2, 8}), Q({4, 8}), none(), D(0.05), I(128)}}.raises(
          "expected qint8 weights, found quint8"),
      OpSample{"loom::quantized_conv2d",
               {Q({1, 4, 6, 6}), QC({6, 2, 3, 3}, 0), T({6}), L({1, 1}), L({1, 1}), L({1, 1}), I(2),
                D(0.1), I(128), B(true)}}
          .against(kConv2d)
          .with_note("per-channel weights, two groups, fused relu"),
      OpSample{"loom::quantized_conv2d",
               {Q({2, 3, 7, 7}), Q({4, 3, 3, 3}, kQI8), none(), L({2, 2}), L({0, 0}), L({1, 1}),
                I(1), D(0.05), I(128)}}
          .against(kConv2d),
      OpSample{"loom::quantized_add", {Q({2, 3}), Q({2, 3}), D(0.05), I(128)}}.against(kAdd),
      OpSample{"loom::quantized_add", {Q({2, 3}, kQI8), Q({3}, kQI8), D(0.04), I(0), B(true)}}
          .against(kAdd)
          .with_note("broadcast, fused relu"),
      OpSample{"loom::quantized_add", {Q({2, 3}), T({2, 3}), D(0.05), I(128)}}.raises(
          kNotQuantized),
      OpSample{"loom::quantized_mul", {Q({2, 3}), Q({2, 3}), D(0.1), I(128)}}.against(kMul),
      OpSample{"loom::quantized_mul", {Q({4, 1}, kQI8), Q({3}, kQI8), D(0.05), I(0)}}.against(kMul),
      OpSample{"loom::quantized_mul", {Q({2, 3}), Q({2, 3}, kQI8), D(0.1), I(0)}}.raises(
          "expected operands of one quantized dtype, found quint8 and qint8"),
      OpSample{"loom::dynamic_quantized_linear", {T({2, 8}), Q({4, 8}, kQI8), T({4})}}
          .against({.float_op = "loom::linear", .arity = 3})
          .tol(0.1)
          .with_note("float activations quantized per call to 8 bits (7 without VNNI): within "
                     "their quantization error"),
  };
}

}  // namespace

std::span<const OpSample> quantized_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
