// Samples of the quantized family. Sample tensors are float (the model has no quantized
// TensorSpec): the ops on quantized operands show their refusal of float ones, and the
// float-in ops (weight packing, the weight-only layer) run on values; the products and
// convolutions are checked against their float references on quantized tensors in
// tests/quantization/.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

constexpr const char* kNotQuantized = "expected a quantized tensor, found float32";
constexpr const char* kNoMeta = "quantized kernels have no meta kernels";

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
  };
}

}  // namespace

std::span<const OpSample> quantized_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
