// The quantization plugin's shared arithmetic and checks: PyTorch's affine mapping
// between floats and quantized integers (per tensor and per channel), the checks every
// quantizing op makes with its own name in the message, and element loops over dense
// buffers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "loom/sdk/ops.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {

using sdk::Tensor;

[[noreturn]] inline void refuse(const char* op, const std::string& what) {
  throw sdk::Error(std::string("[") + op + "] " + what, LOOM_STATUS_INVALID_ARGUMENT);
}

inline bool is_float_dtype(LoomDType t) {
  return t == LOOM_DTYPE_FLOAT32 || t == LOOM_DTYPE_FLOAT64 || t == LOOM_DTYPE_FLOAT16 ||
         t == LOOM_DTYPE_BFLOAT16;
}

inline bool is_quantized_dtype(LoomDType t) {
  return t == LOOM_DTYPE_QINT8 || t == LOOM_DTYPE_QUINT8 || t == LOOM_DTYPE_QINT32;
}

inline int64_t quant_min(LoomDType t) {
  return t == LOOM_DTYPE_QINT8 ? -128 : t == LOOM_DTYPE_QUINT8 ? 0 : INT32_MIN;
}
inline int64_t quant_max(LoomDType t) {
  return t == LOOM_DTYPE_QINT8 ? 127 : t == LOOM_DTYPE_QUINT8 ? 255 : INT32_MAX;
}
inline std::string dtype_label(LoomDType t) {
  return std::string(sdk::dtype_name(t)) + "'s range";
}

// The plain integer dtype holding a quantized dtype's values (int_repr's result).
inline LoomDType integer_dtype(LoomDType t) {
  return t == LOOM_DTYPE_QINT8    ? LOOM_DTYPE_INT8
         : t == LOOM_DTYPE_QUINT8 ? LOOM_DTYPE_UINT8
                                  : LOOM_DTYPE_INT32;
}

// A float tensor on the CPU: what quantize and fake-quantize accept.
inline void check_quantizable(const char* op, const Tensor& t) {
  if (!is_float_dtype(t.dtype())) {
    refuse(op, std::string("expected a floating-point tensor to quantize, found ") +
                   sdk::dtype_name(t.dtype()));
  }
  if (t.device().type != LOOM_DEVICE_CPU) {
    refuse(op, "quantization runs on CPU tensors (a Quantized key for CUDA is not built yet)");
  }
}

inline void check_quantized_dtype(const char* op, LoomDType t) {
  if (!is_quantized_dtype(t)) {
    refuse(op, std::string("expected a quantized dtype (qint8, quint8 or qint32), found ") +
                   sdk::dtype_name(t));
  }
}

inline void check_scale(const char* op, double scale, const std::string& where) {
  if (!(std::isfinite(scale) && scale > 0)) {
    refuse(op, "scale" + where + " must be positive and finite, found " + std::to_string(scale));
  }
}

inline void check_zero_point(const char* op, int64_t zero_point, int64_t lo, int64_t hi,
                             const std::string& label, const std::string& where) {
  if (zero_point < lo || zero_point > hi) {
    refuse(op, "zero point" + where + " must be within " + label + " [" + std::to_string(lo) +
                   ", " + std::to_string(hi) + "], found " + std::to_string(zero_point));
  }
}

inline void check_range(const char* op, int64_t qmin, int64_t qmax) {
  if (qmin > qmax) {
    refuse(op, "quant_min (" + std::to_string(qmin) + ") must not exceed quant_max (" +
                   std::to_string(qmax) + ")");
  }
}

inline int64_t normalize_axis(const char* op, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim || ndim == 0) {
    refuse(op, "axis " + std::to_string(axis) + " is out of range for a tensor of " +
                   std::to_string(ndim) + " dims");
  }
  return axis < 0 ? axis + ndim : axis;
}

inline const LoomQuantizer& quantizer_of(const char* op, const Tensor& t) {
  const LoomQuantizer* q = t.quantizer();
  if (q == nullptr) {
    refuse(op, std::string("expected a quantized tensor, found ") + sdk::dtype_name(t.dtype()));
  }
  return *q;
}

inline Tensor float32_contiguous(const Tensor& t) {
  return sdk::op::contiguous(t.dtype() == LOOM_DTYPE_FLOAT32 ? t
                                                             : sdk::op::to(t, LOOM_DTYPE_FLOAT32));
}

// The scale and zero point of every element of a dense tensor: one pair, or one per index
// of a channel dim (element i is in channel (i / inner) % channels).
struct ChannelParams {
  std::vector<double> scales{1.0};
  std::vector<int64_t> zero_points{0};
  int64_t axis = -1;  // -1: per tensor
  int64_t inner = 1;
  Tensor scales_tensor, zero_points_tensor;  // per channel: float64 and int64, contiguous

  static ChannelParams per_tensor(double scale, int64_t zero_point) {
    ChannelParams p;
    p.scales = {scale};
    p.zero_points = {zero_point};
    return p;
  }
  // Checked parameters of `channels` channels of dim `axis`, each scale positive and
  // finite, each zero point within [lo, hi].
  static ChannelParams per_channel(const char* op, const Tensor& scales, const Tensor& zero_points,
                                   int64_t channels, int64_t axis, int64_t lo, int64_t hi,
                                   const std::string& label);
  // A quantized tensor's parameters, for its dense layout.
  static ChannelParams of(const LoomQuantizer& q, const Tensor& t);

  void set_layout(std::span<const int64_t> sizes) {
    inner = 1;
    if (axis < 0) return;
    for (size_t d = static_cast<size_t>(axis) + 1; d < sizes.size(); ++d) inner *= sizes[d];
  }
  size_t channel(int64_t i) const {
    return axis < 0 ? 0 : static_cast<size_t>((i / inner) % static_cast<int64_t>(scales.size()));
  }
};

// q = clamp(zero_point + nearbyint(x * (1 / scale)), lo, hi), in float as PyTorch does.
inline int64_t quantize_value(float x, double scale, int64_t zero_point, int64_t lo, int64_t hi) {
  const float inv_scale = 1.0f / static_cast<float>(scale);
  const float r = std::nearbyint(x * inv_scale);
  // Clamped in double, where NaN (which compares false) becomes lo.
  double q = static_cast<double>(zero_point) + static_cast<double>(r);
  if (!(q >= static_cast<double>(lo))) q = static_cast<double>(lo);
  if (q > static_cast<double>(hi)) q = static_cast<double>(hi);
  return static_cast<int64_t>(q);
}

inline float dequantize_value(int64_t q, double scale, int64_t zero_point) {
  return static_cast<float>(q - zero_point) * static_cast<float>(scale);
}

// Quantizes n dense floats into `out` (a dense quantized tensor of params' layout).
void quantize_into(const float* x, Tensor& out, ChannelParams params);
// Dequantizes a dense quantized tensor into floats.
void dequantize_into(const Tensor& in, float* out, ChannelParams params);
// Fake quantization: quantize then dequantize, in float.
void fake_quantize_into(const float* x, float* out, int64_t n, const ChannelParams& params,
                        int64_t lo, int64_t hi);
// Copies the integers of a dense quantized tensor into a plain integer tensor.
void copy_raw(const Tensor& in, Tensor& out);
// A dense copy of a quantized tensor of any strides, with the same quantizer.
Tensor dense_quantized(const Tensor& t);

// A per-tensor quantizer of `dtype` (its parameters checked by the host).
inline LoomQuantizer per_tensor_quantizer(double scale, int64_t zero_point) {
  return LoomQuantizer{LOOM_QSCHEME_PER_TENSOR_AFFINE, 0, scale, zero_point, nullptr, nullptr};
}

// The requantization of s32 accumulators acc [m, n] (Note [Integer products on oneDNN]):
// y = acc * multiplier[c] + bias[c] (bias may be empty), ReLU when asked, then either
// quantized to (out_scale, out_zero_point) in `out_dtype` or, with out_dtype float32,
// written as floats.
struct Requantize {
  std::vector<float> multiplier;  // s_x * s_w[c], one per column
  std::vector<float> bias;        // empty: none
  bool relu = false;
  double out_scale = 1;
  int64_t out_zero_point = 0;
};
void requantize(const int32_t* acc, int64_t m, int64_t n, const Requantize& r, LoomDType out_dtype,
                void* out);

}  // namespace loom::quantization
