// oneDNN's int8 primitives for the quantization plugin: the engine and stream, a cache of
// primitives by shape, and the int8 products and convolutions the quantized kernels
// requantize (Note [Integer products on oneDNN]).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "loom/sdk/tensor.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace loom::quantization {

// Note [Integer products on oneDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// oneDNN computes the integer part: u8 or s8 activations (with their zero point, which
// oneDNN also applies to a convolution's padding) times s8 weights, accumulated in s32.
// Products then requantize each accumulator in the plugin: y = acc * (s_x * s_w[c]) +
// bias[c], ReLU, q = clamp(nearbyint(y / s_y) + zp_y), PyTorch's arithmetic. Convolutions,
// whose outputs are large, let oneDNN requantize as it writes (output scales, the bias,
// ReLU as a post-op and the destination zero point): a separate pass over their s32
// accumulators cost more than the convolution itself. The two agree within one step
// (rounding of the float bias), which the tests check against the float reference. Weights must be
// symmetric (zero point 0), as PyTorch's x86 and oneDNN backends require; they are reordered once
// into the layout the primitive wants and cached on the weight tensor itself (an extension slot,
// invalidated by the tensor's version), with their per-channel scales. On this AVX2 machine without
// VNNI, oneDNN runs u8 x s8 (the activations unsigned) through its AVX2 kernels; s8 activations are
// shifted to u8 by 128 with the zero point moved along.

dnnl::engine& int8_engine();
dnnl::stream& int8_stream();

// Whether oneDNN's int8 kernels here multiply u8 x s8 without saturating: with VNNI
// (AVX-512 or AVX) they accumulate in s32; without it they sum pairs of u8 x s8
// products in s16 (vpmaddubsw), which saturates once activations exceed 127 (Note
// [Integer products on oneDNN]). Follows ONEDNN_MAX_CPU_ISA.
bool int8_products_are_exact_for_full_range();

// s32 accumulators of a product: src [m, k] (u8 with zero point src_zp) times the
// weights [n, k] (s8, row-major) into acc [m, n].
void int8_matmul(const uint8_t* src, int64_t m, int64_t k, int32_t src_zp,
                 const sdk::Tensor& weight, int32_t* acc, int64_t n);

struct ConvShape {
  int64_t batch, in_channels, height, width;
  int64_t out_channels, kernel_h, kernel_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
  int64_t out_h, out_w;
};

// What a convolution writes: dst = saturate(nearbyint(relu?((acc + bias[c]) * scale[c])) + zp)
// in u8 or s8, where the caller passes scale[c] = s_x * s_w[c] / s_y and bias[c] =
// bias / (s_x * s_w[c]) (oneDNN adds the bias to the accumulator before scaling).
struct ConvOutput {
  std::vector<float> scales;  // one per output channel
  std::vector<float> bias;    // empty: none
  bool relu = false;
  int32_t zero_point = 0;
  bool is_signed = false;  // s8 (qint8), else u8 (quint8)
};

// A convolution requantized by oneDNN: src in NHWC (u8, zero point src_zp) into dst in
// NHWC [batch, out_h, out_w, out_channels].
void int8_conv2d(const uint8_t* src, const ConvShape& shape, int32_t src_zp,
                 const sdk::Tensor& weight, const ConvOutput& output, void* dst);

}  // namespace loom::quantization
