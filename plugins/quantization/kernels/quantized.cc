// The kernels of the quantized op family (ops/schemas/quantized.def): linear and conv2d on
// oneDNN's int8 primitives, requantized here (Note [Integer products on oneDNN]),
// elementwise add and mul, the dynamic linear and the weight-only linear layers
// (Note [Weight-only linear layers]).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../onednn_int8.h"
#include "../quantized_math.h"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {
namespace {

using sdk::Tensor;

// --- operands ---

// A quantized activation per tensor, as u8 for oneDNN: quint8 as it is, qint8 shifted by
// 128 (the zero point moves along). `nhwc`: a 4-D [N, C, H, W] tensor in channels-last
// order.
struct Activation {
  std::vector<uint8_t> shifted;  // owns the bytes when they had to be copied
  const uint8_t* data = nullptr;
  int32_t zero_point = 0;
  double scale = 1;
  Tensor keep;  // the dense tensor data points into
};

Activation activation(const char* op, const Tensor& input, bool nhwc) {
  const LoomQuantizer& q = quantizer_of(op, input);
  if (q.scheme != LOOM_QSCHEME_PER_TENSOR_AFFINE ||
      (input.dtype() != LOOM_DTYPE_QUINT8 && input.dtype() != LOOM_DTYPE_QINT8)) {
    refuse(op, std::string("expected activations quantized per tensor as quint8 or qint8, found ") +
                   sdk::dtype_name(input.dtype()) +
                   (q.scheme == LOOM_QSCHEME_PER_CHANNEL_AFFINE ? " per channel" : ""));
  }
  Activation a;
  a.scale = q.scale;
  a.zero_point = static_cast<int32_t>(q.zero_point);
  Tensor dense = input;
  if (nhwc) {
    if (!input.is_channels_last()) {
      dense = dense_quantized(sdk::op::permute(input, std::vector<int64_t>{0, 2, 3, 1}));
    }
  } else {
    dense = dense_quantized(input);
  }
  a.keep = dense;
  const auto* bytes = dense.data<uint8_t>();
  if (input.dtype() == LOOM_DTYPE_QUINT8) {
    a.data = bytes;
    return a;
  }
  a.shifted.resize(static_cast<size_t>(dense.numel()));
  for (size_t i = 0; i < a.shifted.size(); ++i) a.shifted[i] = bytes[i] ^ 0x80;
  a.data = a.shifted.data();
  a.zero_point += 128;
  return a;
}

// Symmetric qint8 weights, dense, with one scale per output channel (dim 0).
struct Weights {
  Tensor dense;
  std::vector<double> scales;
};

Weights weights(const char* op, const Tensor& weight, int64_t out_channels) {
  const LoomQuantizer& q = quantizer_of(op, weight);
  if (weight.dtype() != LOOM_DTYPE_QINT8) {
    refuse(op, std::string("expected qint8 weights, found ") + sdk::dtype_name(weight.dtype()));
  }
  Weights w;
  w.dense = dense_quantized(weight);
  ChannelParams p = ChannelParams::of(q, w.dense);
  if (q.scheme == LOOM_QSCHEME_PER_CHANNEL_AFFINE && q.axis != 0) {
    refuse(op, "per-channel weights must be quantized along dim 0 (output channels), found axis " +
                   std::to_string(q.axis));
  }
  for (size_t c = 0; c < p.zero_points.size(); ++c) {
    if (p.zero_points[c] != 0) {
      refuse(op, "weights must be quantized symmetrically (zero point 0), found zero point " +
                     std::to_string(p.zero_points[c]) +
                     (p.zero_points.size() > 1 ? " in channel " + std::to_string(c) : ""));
    }
  }
  w.scales = p.scales;
  if (w.scales.size() == 1) w.scales.assign(static_cast<size_t>(out_channels), w.scales[0]);
  return w;
}

std::vector<float> float_bias(const char* op, const std::optional<Tensor>& bias, int64_t n) {
  if (!bias.has_value() || !bias->defined()) return {};
  if (!is_float_dtype(bias->dtype()) || bias->dim() != 1 || bias->numel() != n) {
    refuse(op, "expected a float bias of " + std::to_string(n) + " elements, found " +
                   sdk::dtype_name(bias->dtype()) + " of " + std::to_string(bias->numel()));
  }
  Tensor b = float32_contiguous(*bias);
  return std::vector<float>(b.data<float>(), b.data<float>() + n);
}

void check_output(const char* op, double scale, int64_t zero_point, LoomDType dtype) {
  check_scale(op, scale, " of the output");
  check_zero_point(op, zero_point, quant_min(dtype), quant_max(dtype), dtype_label(dtype),
                   " of the output");
}

// Whether oneDNN's int8 kernels compute these activations exactly (Note [Integer products
// on oneDNN]): always with VNNI, else when no byte exceeds 127.
bool int8_path_is_exact(const Activation& x, int64_t count) {
  if (int8_products_are_exact_for_full_range() || count == 0) return true;
  return *std::max_element(x.data, x.data + count) <= 127;
}

// The float reference of a quantized layer: y = op(dequantized input, dequantized
// weights, bias), ReLU, quantized to the output's parameters.
Tensor requantized_reference(Tensor y, bool relu, double scale, int64_t zero_point,
                             LoomDType dtype) {
  if (relu) y = sdk::op::relu(y);
  return sdk::op::quantize_per_tensor(y, scale, zero_point, dtype);
}

Requantize requantization(double input_scale, const std::vector<double>& weight_scales,
                          std::vector<float> bias, bool relu, double out_scale, int64_t out_zp) {
  Requantize r;
  for (double s : weight_scales) r.multiplier.push_back(static_cast<float>(input_scale * s));
  r.bias = std::move(bias);
  r.relu = relu;
  r.out_scale = out_scale;
  r.out_zero_point = out_zp;
  return r;
}

std::vector<int64_t> with_last(std::span<const int64_t> sizes, int64_t last) {
  std::vector<int64_t> out(sizes.begin(), sizes.end());
  out.back() = last;
  return out;
}

// --- linear and conv2d ---

Tensor quantized_linear(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, double output_scale,
                        int64_t output_zero_point, bool relu) {
  constexpr const char* op = "loom::quantized_linear";
  if (weight.dim() != 2)
    refuse(op, "expected 2-D weights [out, in], found " + std::to_string(weight.dim()) + " dims");
  const int64_t n = weight.size(0), k = weight.size(1);
  if (input.dim() < 1 || input.size(-1) != k) {
    refuse(op, "the input's last dim must be the weights' in_features " + std::to_string(k) +
                   ", found " + (input.dim() ? std::to_string(input.size(-1)) : "a 0-dim input"));
  }
  check_output(op, output_scale, output_zero_point, input.dtype());
  Activation x = activation(op, input, false);
  Weights w = weights(op, weight, n);
  std::vector<float> b = float_bias(op, bias, n);
  const int64_t m = k == 0 ? 0 : input.numel() / k;
  if (!int8_path_is_exact(x, m * k)) {
    return requantized_reference(
        sdk::op::linear(sdk::op::dequantize(input), sdk::op::dequantize(w.dense), bias), relu,
        output_scale, output_zero_point, input.dtype());
  }
  std::vector<int32_t> acc(static_cast<size_t>(m * n));
  if (m > 0 && n > 0) int8_matmul(x.data, m, k, x.zero_point, w.dense, acc.data(), n);
  Tensor out = sdk::empty_quantized(with_last(input.sizes(), n), input.dtype(),
                                    per_tensor_quantizer(output_scale, output_zero_point));
  requantize(acc.data(), m, n,
             requantization(x.scale, w.scales, std::move(b), relu, output_scale, output_zero_point),
             input.dtype(), out.data<void>());
  return out;
}

int64_t conv_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

Tensor quantized_conv2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, std::span<const int64_t> stride,
                        std::span<const int64_t> padding, std::span<const int64_t> dilation,
                        int64_t groups, double output_scale, int64_t output_zero_point, bool relu) {
  constexpr const char* op = "loom::quantized_conv2d";
  if (input.dim() != 4 || weight.dim() != 4) {
    refuse(op, "expected a 4-D input [N, C, H, W] and 4-D weights [O, C/groups, kH, kW], found " +
                   std::to_string(input.dim()) + " and " + std::to_string(weight.dim()) + " dims");
  }
  if (groups < 1 || input.size(1) % groups != 0 || weight.size(0) % groups != 0 ||
      weight.size(1) * groups != input.size(1)) {
    refuse(op, "the input's " + std::to_string(input.size(1)) + " channels and the weights' " +
                   std::to_string(weight.size(1)) + " per group do not fit " +
                   std::to_string(groups) + " groups");
  }
  for (int d = 0; d < 2; ++d) {
    if (stride[d] < 1 || padding[d] < 0 || dilation[d] < 1) {
      refuse(op, "stride and dilation must be positive and padding non-negative");
    }
  }
  check_output(op, output_scale, output_zero_point, input.dtype());
  ConvShape s{input.size(0),
              input.size(1),
              input.size(2),
              input.size(3),
              weight.size(0),
              weight.size(2),
              weight.size(3),
              stride[0],
              stride[1],
              padding[0],
              padding[1],
              dilation[0],
              dilation[1],
              groups,
              0,
              0};
  s.out_h = conv_out(s.height, s.kernel_h, s.stride_h, s.pad_h, s.dilation_h);
  s.out_w = conv_out(s.width, s.kernel_w, s.stride_w, s.pad_w, s.dilation_w);
  if (s.out_h < 1 || s.out_w < 1) {
    refuse(op, "the kernel (" + std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) +
                   ") is larger than the padded input (" + std::to_string(s.height) + "x" +
                   std::to_string(s.width) + ")");
  }
  Activation x = activation(op, input, /*nhwc=*/true);
  Weights w = weights(op, weight, s.out_channels);
  const std::vector<float> b = float_bias(op, bias, s.out_channels);
  if (!int8_path_is_exact(x, input.numel())) {
    return requantized_reference(
        sdk::op::conv2d(sdk::op::dequantize(input), sdk::op::dequantize(w.dense), bias, stride,
                        padding, dilation, groups),
        relu, output_scale, output_zero_point, input.dtype());
  }
  // oneDNN requantizes as it writes (Note [Integer products on oneDNN]).
  ConvOutput o;
  o.relu = relu;
  o.zero_point = static_cast<int32_t>(output_zero_point);
  o.is_signed = input.dtype() == LOOM_DTYPE_QINT8;
  for (int64_t c = 0; c < s.out_channels; ++c) {
    const double product = x.scale * w.scales[c];
    o.scales.push_back(static_cast<float>(product / output_scale));
    if (!b.empty()) o.bias.push_back(static_cast<float>(b[c] / product));
  }
  // The result is channels last, as oneDNN computes it: [N, H, W, C] seen as [N, C, H, W].
  const std::vector<int64_t> nhwc = {s.batch, s.out_h, s.out_w, s.out_channels};
  Tensor out = sdk::empty_quantized(nhwc, input.dtype(),
                                    per_tensor_quantizer(output_scale, output_zero_point));
  if (s.batch > 0) int8_conv2d(x.data, s, x.zero_point, w.dense, o, out.data<void>());
  return sdk::op::permute(out, std::vector<int64_t>{0, 3, 1, 2});
}

// --- elementwise ---

template <typename Combine>
Tensor elementwise(const char* op, const Tensor& a, const Tensor& b, double scale, int64_t zp,
                   bool relu, Combine combine) {
  quantizer_of(op, a);
  quantizer_of(op, b);
  if (a.dtype() != b.dtype()) {
    refuse(op, std::string("expected operands of one quantized dtype, found ") +
                   sdk::dtype_name(a.dtype()) + " and " + sdk::dtype_name(b.dtype()));
  }
  check_output(op, scale, zp, a.dtype());
  Tensor fa = sdk::op::dequantize(a), fb = sdk::op::dequantize(b);
  Tensor y = combine(fa, fb);
  if (relu) y = sdk::op::relu(y);
  return sdk::op::quantize_per_tensor(y, scale, zp, a.dtype());
}

Tensor quantized_add(const Tensor& self, const Tensor& other, double scale, int64_t zp, bool relu) {
  return elementwise("loom::quantized_add", self, other, scale, zp, relu,
                     [](const Tensor& x, const Tensor& y) { return sdk::op::add(x, y); });
}

Tensor quantized_mul(const Tensor& self, const Tensor& other, double scale, int64_t zp, bool relu) {
  return elementwise("loom::quantized_mul", self, other, scale, zp, relu,
                     [](const Tensor& x, const Tensor& y) { return sdk::op::mul(x, y); });
}

// --- dynamic quantization: activations quantized per call ---

Tensor dynamic_quantized_linear(const Tensor& input, const Tensor& weight,
                                const std::optional<Tensor>& bias, bool relu) {
  constexpr const char* op = "loom::dynamic_quantized_linear";
  check_quantizable(op, input);
  if (weight.dim() != 2)
    refuse(op, "expected 2-D weights [out, in], found " + std::to_string(weight.dim()) + " dims");
  const int64_t n = weight.size(0), k = weight.size(1);
  if (input.dim() < 1 || input.size(-1) != k) {
    refuse(op, "the input's last dim must be the weights' in_features " + std::to_string(k));
  }
  Weights w = weights(op, weight, n);
  const Tensor x = float32_contiguous(input);
  const int64_t count = x.numel(), m = k == 0 ? 0 : count / k;
  // quint8 over [min(x, 0), max(x, 0)], as PyTorch's dynamic quantization chooses; 7 bits
  // where the int8 kernels would saturate on 8 (PyTorch's reduce_range).
  const int64_t top = int8_products_are_exact_for_full_range() ? 255 : 127;
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < count; ++i) {
    lo = std::min(lo, x.data<float>()[i]);
    hi = std::max(hi, x.data<float>()[i]);
  }
  const double scale = hi > lo ? (static_cast<double>(hi) - lo) / static_cast<double>(top) : 1.0;
  const int64_t zp = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(-lo / scale)), 0, top);
  std::vector<uint8_t> q(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    q[i] = static_cast<uint8_t>(quantize_value(x.data<float>()[i], scale, zp, 0, top));
  }
  std::vector<int32_t> acc(static_cast<size_t>(m * n));
  if (m > 0 && n > 0) int8_matmul(q.data(), m, k, static_cast<int32_t>(zp), w.dense, acc.data(), n);
  Tensor out = sdk::empty(with_last(input.sizes(), n), LOOM_DTYPE_FLOAT32);
  requantize(acc.data(), m, n, requantization(scale, w.scales, float_bias(op, bias, n), relu, 1, 0),
             LOOM_DTYPE_FLOAT32, out.data<void>());
  return input.dtype() == LOOM_DTYPE_FLOAT32 ? out : sdk::op::to(out, input.dtype());
}

// --- weight-only linear layers ---

// Note [Weight-only linear layers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// LLM-style layers keep float activations and store only the weights in few bits:
// symmetric integers per group of `group_size` consecutive input features of each output
// row, w = q * scale[row, group], q in [-127, 127] (8 bits) or [-8, 7] (4 bits, two per
// byte: within a group of g, element i in the low nibble of byte i and element i + g/2
// in its high nibble, so that both halves unpack into consecutive lanes). The product
// is memory bound at small batches, so its loop reads the packed bytes once per row and
// unpacks them in registers into kLanes independent float accumulators per half (a
// vector each, with no reassociation of one sum), each group's dot product times its
// scale.
int64_t check_bits(const char* op, int64_t bits, int64_t group_size, int64_t k) {
  if (bits != 4 && bits != 8) refuse(op, "bits must be 4 or 8, found " + std::to_string(bits));
  if (group_size < 32 || group_size % 32 != 0 || k % group_size != 0) {
    refuse(op, "group_size must be a multiple of 32 that divides the " + std::to_string(k) +
                   " input features, found " + std::to_string(group_size));
  }
  return k / group_size;
}

std::tuple<Tensor, Tensor> pack_weight_only(const Tensor& weight, int64_t bits,
                                            int64_t group_size) {
  constexpr const char* op = "loom::pack_weight_only";
  check_quantizable(op, weight);
  if (weight.dim() != 2)
    refuse(op, "expected 2-D weights [out, in], found " + std::to_string(weight.dim()) + " dims");
  const int64_t n = weight.size(0), k = weight.size(1);
  const int64_t groups = check_bits(op, bits, group_size, k);
  const int64_t qmax = bits == 8 ? 127 : 7;
  const Tensor w = float32_contiguous(weight);
  const std::vector<int64_t> scale_shape = {n, groups};
  Tensor scales = sdk::empty(scale_shape, LOOM_DTYPE_FLOAT32);
  const std::vector<int64_t> packed_shape = {n, bits == 8 ? k : k / 2};
  Tensor packed = sdk::empty(packed_shape, bits == 8 ? LOOM_DTYPE_INT8 : LOOM_DTYPE_UINT8);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* src = w.data<float>() + r * k + g * group_size;
      float amax = 0;
      for (int64_t i = 0; i < group_size; ++i) amax = std::max(amax, std::fabs(src[i]));
      const float scale = amax > 0 ? amax / static_cast<float>(qmax) : 1.0f;
      scales.data<float>()[r * groups + g] = scale;
      for (int64_t i = 0; i < group_size; ++i) {
        const int64_t q = quantize_value(src[i], scale, 0, bits == 8 ? -127 : -8, qmax);
        const int64_t at = r * k + g * group_size + i;
        if (bits == 8) {
          packed.data<int8_t>()[at] = static_cast<int8_t>(q);
        } else {
          const int64_t half = group_size / 2;
          const bool high = i >= half;
          uint8_t& byte =
              packed.data<uint8_t>()[(r * k + g * group_size) / 2 + (high ? i - half : i)];
          const uint8_t nibble = static_cast<uint8_t>(q) & 0x0F;
          byte = high ? static_cast<uint8_t>((byte & 0x0F) | (nibble << 4))
                      : static_cast<uint8_t>((byte & 0xF0) | nibble);
        }
      }
    }
  }
  return {packed, scales};
}

// One output row's dot product with x: groups of integer products, each times its scale
// (Note [Weight-only linear layers]), in AVX-512 or AVX2 where the CPU has them (chosen
// once at run time) and in plain C++ otherwise. group_size is a multiple of 32.
using RowFn = float (*)(const float* x, const void* row, const float* scales, int64_t groups,
                        int64_t group_size);

float int4_row_scalar(const float* x, const void* row, const float* scales, int64_t groups,
                      int64_t group_size) {
  const auto* bytes = static_cast<const uint8_t*>(row);
  const int64_t half = group_size / 2;
  float total = 0;
  for (int64_t g = 0; g < groups; ++g) {
    float sum = 0;
    for (int64_t i = 0; i < half; ++i) {
      const int8_t b = static_cast<int8_t>(bytes[g * half + i]);
      sum += x[g * group_size + i] * static_cast<float>(static_cast<int8_t>(b << 4) >> 4);
      sum += x[g * group_size + half + i] * static_cast<float>(b >> 4);
    }
    total += sum * scales[g];
  }
  return total;
}

float int8_row_scalar(const float* x, const void* row, const float* scales, int64_t groups,
                      int64_t group_size) {
  const auto* q = static_cast<const int8_t*>(row);
  float total = 0;
  for (int64_t g = 0; g < groups; ++g) {
    float sum = 0;
    for (int64_t i = 0; i < group_size; ++i)
      sum += x[g * group_size + i] * static_cast<float>(q[g * group_size + i]);
    total += sum * scales[g];
  }
  return total;
}

// GCC 12's _mm512_reduce_add_ps extracts halves with an undefined pass-through operand,
// which -Wmaybe-uninitialized reports inside its own header (GCC bug 105593): the warning
// is silenced for the two AVX-512 row kernels only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f,avx512bw"))) float int4_row_avx512(const float* x, const void* row,
                                                                  const float* scales,
                                                                  int64_t groups,
                                                                  int64_t group_size) {
  const auto* bytes = static_cast<const uint8_t*>(row);
  const int64_t half = group_size / 2;
  __m512 total = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    const float* lo_x = x + g * group_size;
    const float* hi_x = lo_x + half;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < half; i += 16) {
      const __m512i w = _mm512_cvtepi8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + g * half + i)));
      const __m512i lo = _mm512_srai_epi32(_mm512_slli_epi32(w, 28), 28);
      const __m512i hi = _mm512_srai_epi32(w, 4);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo), _mm512_loadu_ps(lo_x + i), acc);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), _mm512_loadu_ps(hi_x + i), acc);
    }
    total = _mm512_fmadd_ps(_mm512_set1_ps(scales[g]), acc, total);
  }
  return _mm512_reduce_add_ps(total);
}

__attribute__((target("avx512f,avx512bw"))) float int8_row_avx512(const float* x, const void* row,
                                                                  const float* scales,
                                                                  int64_t groups,
                                                                  int64_t group_size) {
  const auto* q = static_cast<const int8_t*>(row);
  __m512 total = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < group_size; i += 16) {
      const __m512i w = _mm512_cvtepi8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + g * group_size + i)));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(w), _mm512_loadu_ps(x + g * group_size + i), acc);
    }
    total = _mm512_fmadd_ps(_mm512_set1_ps(scales[g]), acc, total);
  }
  return _mm512_reduce_add_ps(total);
}
#pragma GCC diagnostic pop

__attribute__((target("avx2,fma"))) float horizontal_sum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

__attribute__((target("avx2,fma"))) float int4_row_avx2(const float* x, const void* row,
                                                        const float* scales, int64_t groups,
                                                        int64_t group_size) {
  const auto* bytes = static_cast<const uint8_t*>(row);
  const int64_t half = group_size / 2;
  __m256 total = _mm256_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    const float* lo_x = x + g * group_size;
    const float* hi_x = lo_x + half;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < half; i += 8) {
      const __m256i w = _mm256_cvtepi8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + g * half + i)));
      const __m256i lo = _mm256_srai_epi32(_mm256_slli_epi32(w, 28), 28);
      const __m256i hi = _mm256_srai_epi32(w, 4);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_loadu_ps(lo_x + i), acc);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_loadu_ps(hi_x + i), acc);
    }
    total = _mm256_fmadd_ps(_mm256_set1_ps(scales[g]), acc, total);
  }
  return horizontal_sum(total);
}

__attribute__((target("avx2,fma"))) float int8_row_avx2(const float* x, const void* row,
                                                        const float* scales, int64_t groups,
                                                        int64_t group_size) {
  const auto* q = static_cast<const int8_t*>(row);
  __m256 total = _mm256_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < group_size; i += 8) {
      const __m256i w = _mm256_cvtepi8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + g * group_size + i)));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(w), _mm256_loadu_ps(x + g * group_size + i), acc);
    }
    total = _mm256_fmadd_ps(_mm256_set1_ps(scales[g]), acc, total);
  }
  return horizontal_sum(total);
}

RowFn row_kernel(int64_t bits) {
  static const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (bits == 4) return avx512 ? &int4_row_avx512 : avx2 ? &int4_row_avx2 : &int4_row_scalar;
  return avx512 ? &int8_row_avx512 : avx2 ? &int8_row_avx2 : &int8_row_scalar;
}

Tensor weight_only_linear(const Tensor& input, const Tensor& packed, const Tensor& scales,
                          const std::optional<Tensor>& bias, int64_t bits, int64_t group_size) {
  constexpr const char* op = "loom::weight_only_linear";
  check_quantizable(op, input);
  if (packed.dim() != 2)
    refuse(op, "expected 2-D packed weights, found " + std::to_string(packed.dim()) + " dims");
  const int64_t n = packed.size(0);
  const int64_t k = bits == 4 ? packed.size(1) * 2 : packed.size(1);
  const LoomDType expected = bits == 4 ? LOOM_DTYPE_UINT8 : LOOM_DTYPE_INT8;
  const int64_t groups = check_bits(op, bits, group_size, k);
  if (packed.dtype() != expected) {
    refuse(op, std::string("expected ") + sdk::dtype_name(expected) + " packed weights for " +
                   std::to_string(bits) + " bits (loom::pack_weight_only), found " +
                   sdk::dtype_name(packed.dtype()));
  }
  if (scales.dtype() != LOOM_DTYPE_FLOAT32 || scales.dim() != 2 || scales.size(0) != n ||
      scales.size(1) != groups) {
    refuse(op, "expected float32 scales [" + std::to_string(n) + ", " + std::to_string(groups) +
                   "], found " + sdk::dtype_name(scales.dtype()) + " of " +
                   std::to_string(scales.numel()) + " elements");
  }
  if (input.dim() < 1 || input.size(-1) != k) {
    refuse(op, "the input's last dim must be the weights' " + std::to_string(k) + " in_features");
  }
  const std::vector<float> b = float_bias(op, bias, n);
  const Tensor x = float32_contiguous(input);
  const Tensor w = sdk::op::contiguous(packed);
  const Tensor s = sdk::op::contiguous(scales);
  const int64_t m = x.numel() / k;
  Tensor out = sdk::empty(with_last(input.sizes(), n), LOOM_DTYPE_FLOAT32);
  float* y = out.data<float>();
  const int64_t row_bytes = bits == 4 ? k / 2 : k;
  const RowFn kernel = row_kernel(bits);
  const auto* weights = w.data<uint8_t>();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < m; ++i) {
      const float v = kernel(x.data<float>() + i * k, weights + r * row_bytes,
                             s.data<float>() + r * groups, groups, group_size);
      y[i * n + r] = v + (b.empty() ? 0.0f : b[r]);
    }
  }
  return input.dtype() == LOOM_DTYPE_FLOAT32 ? out : sdk::op::to(out, input.dtype());
}

}  // namespace

void register_quantized_kernels(sdk::Registrar& r) {
  const uint32_t cpu = LOOM_KEY_CPU, quantized = LOOM_KEY_QUANTIZED;
  for (const uint32_t key : {quantized, cpu}) {
    r.impl<&quantized_linear>("loom::quantized_linear", key);
    r.impl<&quantized_conv2d>("loom::quantized_conv2d", key);
    r.impl<&quantized_add>("loom::quantized_add", key);
    r.impl<&quantized_mul>("loom::quantized_mul", key);
  }
  // A float input with quantized weights dispatches to the Quantized key.
  r.impl<&dynamic_quantized_linear>("loom::dynamic_quantized_linear", cpu);
  r.impl<&dynamic_quantized_linear>("loom::dynamic_quantized_linear", quantized);
  r.impl<&pack_weight_only>("loom::pack_weight_only", cpu);
  r.impl<&weight_only_linear>("loom::weight_only_linear", cpu);
}

}  // namespace loom::quantization
