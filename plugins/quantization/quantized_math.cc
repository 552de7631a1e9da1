// The quantization plugin's element loops and parameter checks (quantized_math.h).
#include "quantized_math.h"

namespace loom::quantization {

namespace {

template <typename Q>
void quantize_loop(const float* x, Q* out, int64_t n, const ChannelParams& p, int64_t lo,
                   int64_t hi) {
  if (p.axis < 0) {
    const double s = p.scales[0];
    const int64_t z = p.zero_points[0];
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Q>(quantize_value(x[i], s, z, lo, hi));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const size_t c = p.channel(i);
    out[i] = static_cast<Q>(quantize_value(x[i], p.scales[c], p.zero_points[c], lo, hi));
  }
}

template <typename Q>
void dequantize_loop(const Q* in, float* out, int64_t n, const ChannelParams& p) {
  for (int64_t i = 0; i < n; ++i) {
    const size_t c = p.channel(i);
    out[i] = dequantize_value(in[i], p.scales[c], p.zero_points[c]);
  }
}

// Reads element i of a 1-D tensor as a double (any real dtype, through a float64 copy).
std::vector<double> as_doubles(const Tensor& t) {
  Tensor d = sdk::op::contiguous(sdk::op::to(t, LOOM_DTYPE_FLOAT64));
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.numel());
}

}  // namespace

ChannelParams ChannelParams::per_channel(const char* op, const Tensor& scales,
                                         const Tensor& zero_points, int64_t channels, int64_t axis,
                                         int64_t lo, int64_t hi, const std::string& label) {
  if (scales.dim() != 1 || zero_points.dim() != 1) {
    refuse(op, "per-channel scales and zero points must be 1-D, found " +
                   std::to_string(scales.dim()) + " and " + std::to_string(zero_points.dim()) +
                   " dims");
  }
  if (scales.numel() != channels || zero_points.numel() != channels) {
    refuse(op, "expected " + std::to_string(channels) +
                   " scales and zero points (the size of axis " + std::to_string(axis) +
                   "), found " + std::to_string(scales.numel()) + " and " +
                   std::to_string(zero_points.numel()));
  }
  if (!is_float_dtype(scales.dtype())) {
    refuse(op, std::string("per-channel scales must be floating point, found ") +
                   sdk::dtype_name(scales.dtype()));
  }
  // Integers, or whole floats (PyTorch's fake_quantize_per_channel_affine takes float
  // zero points).
  if (zero_points.dtype() == LOOM_DTYPE_BOOL || is_quantized_dtype(zero_points.dtype())) {
    refuse(op, std::string("per-channel zero points must be integers, found ") +
                   sdk::dtype_name(zero_points.dtype()));
  }
  ChannelParams p;
  p.axis = axis;
  p.scales = as_doubles(scales);
  const std::vector<double> zeros = as_doubles(zero_points);
  p.zero_points.assign(zeros.size(), 0);
  for (int64_t c = 0; c < channels; ++c) {
    const std::string where = " of channel " + std::to_string(c);
    check_scale(op, p.scales[c], where);
    if (zeros[c] != std::nearbyint(zeros[c])) {
      refuse(op,
             "zero point" + where + " must be a whole number, found " + std::to_string(zeros[c]));
    }
    p.zero_points[c] = static_cast<int64_t>(zeros[c]);
    check_zero_point(op, p.zero_points[c], lo, hi, label, where);
  }
  const int64_t n = channels;
  p.scales_tensor = sdk::empty(std::span<const int64_t>(&n, 1), LOOM_DTYPE_FLOAT64);
  p.zero_points_tensor = sdk::empty(std::span<const int64_t>(&n, 1), LOOM_DTYPE_INT64);
  std::memcpy(p.scales_tensor.data<double>(), p.scales.data(), sizeof(double) * n);
  std::memcpy(p.zero_points_tensor.data<int64_t>(), p.zero_points.data(), sizeof(int64_t) * n);
  return p;
}

ChannelParams ChannelParams::of(const LoomQuantizer& q, const Tensor& t) {
  if (q.scheme == LOOM_QSCHEME_PER_TENSOR_AFFINE) return per_tensor(q.scale, q.zero_point);
  ChannelParams p;
  p.axis = q.axis;
  Tensor scales = Tensor::borrow(q.scales), zeros = Tensor::borrow(q.zero_points);
  p.scales.assign(scales.data<double>(), scales.data<double>() + scales.numel());
  p.zero_points.assign(zeros.data<int64_t>(), zeros.data<int64_t>() + zeros.numel());
  p.set_layout(t.sizes());
  return p;
}

void quantize_into(const float* x, Tensor& out, ChannelParams params) {
  params.set_layout(out.sizes());
  const LoomDType t = out.dtype();
  const int64_t lo = quant_min(t), hi = quant_max(t), n = out.numel();
  switch (t) {
    case LOOM_DTYPE_QINT8:
      return quantize_loop(x, out.data<int8_t>(), n, params, lo, hi);
    case LOOM_DTYPE_QUINT8:
      return quantize_loop(x, out.data<uint8_t>(), n, params, lo, hi);
    default:
      return quantize_loop(x, out.data<int32_t>(), n, params, lo, hi);
  }
}

void dequantize_into(const Tensor& in, float* out, ChannelParams params) {
  params.set_layout(in.sizes());
  const int64_t n = in.numel();
  switch (in.dtype()) {
    case LOOM_DTYPE_QINT8:
      return dequantize_loop(in.data<int8_t>(), out, n, params);
    case LOOM_DTYPE_QUINT8:
      return dequantize_loop(in.data<uint8_t>(), out, n, params);
    default:
      return dequantize_loop(in.data<int32_t>(), out, n, params);
  }
}

void fake_quantize_into(const float* x, float* out, int64_t n, const ChannelParams& params,
                        int64_t lo, int64_t hi) {
  for (int64_t i = 0; i < n; ++i) {
    const size_t c = params.channel(i);
    const double s = params.scales[c];
    const int64_t z = params.zero_points[c];
    out[i] = dequantize_value(quantize_value(x[i], s, z, lo, hi), s, z);
  }
}

void copy_raw(const Tensor& in, Tensor& out) {
  const size_t bytes = static_cast<size_t>(in.numel()) * (in.dtype() == LOOM_DTYPE_QINT32 ? 4 : 1);
  if (bytes > 0) std::memcpy(out.data<char>(), in.data<char>(), bytes);
}

namespace {

// Copies the elements of a strided tensor in row-major order: the last dim innermost, the
// rows of the outer dims spread over threads.
template <typename T>
void gather_rows(const T* src, T* dst, std::span<const int64_t> sizes,
                 std::span<const int64_t> strides) {
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  const int64_t inner = ndim == 0 ? 1 : sizes[ndim - 1];
  const int64_t step = ndim == 0 ? 1 : strides[ndim - 1];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < ndim; ++d) rows *= sizes[d];
#pragma omp parallel for schedule(static) if (rows * inner > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0, rest = r;
    for (int64_t d = ndim - 2; d >= 0; --d) {
      offset += (rest % sizes[d]) * strides[d];
      rest /= sizes[d];
    }
    const T* from = src + offset;
    T* to = dst + r * inner;
    for (int64_t i = 0; i < inner; ++i) to[i] = from[i * step];
  }
}

}  // namespace

Tensor dense_quantized(const Tensor& t) {
  if (t.is_contiguous()) return t;
  const LoomQuantizer& q = *t.quantizer();
  Tensor out = sdk::empty_quantized(t.sizes(), t.dtype(), q, t.device());
  if (t.numel() == 0) return out;
  if (t.dtype() == LOOM_DTYPE_QINT32) {
    gather_rows(t.data<int32_t>(), out.data<int32_t>(), t.sizes(), t.strides());
  } else {
    gather_rows(t.data<uint8_t>(), out.data<uint8_t>(), t.sizes(), t.strides());
  }
  return out;
}

namespace {

template <typename Q>
void requantize_rows(const int32_t* acc, int64_t m, int64_t n, const Requantize& r, Q* out) {
  const float inv_scale = 1.0f / static_cast<float>(r.out_scale);
  const float zp = static_cast<float>(r.out_zero_point);
  const float lo = static_cast<float>(
      quant_min(std::is_same_v<Q, uint8_t> ? LOOM_DTYPE_QUINT8 : LOOM_DTYPE_QINT8));
  const float hi = std::is_same_v<Q, uint8_t> ? 255.0f : 127.0f;
  const bool has_bias = !r.bias.empty();
  for (int64_t i = 0; i < m; ++i) {
    const int32_t* row = acc + i * n;
    Q* dst = out + i * n;
    for (int64_t c = 0; c < n; ++c) {
      float y = static_cast<float>(row[c]) * r.multiplier[c] + (has_bias ? r.bias[c] : 0.0f);
      if (r.relu && y < 0) y = 0;
      float q = std::nearbyint(y * inv_scale) + zp;
      q = q < lo ? lo : (q > hi ? hi : q);
      dst[c] = static_cast<Q>(q);
    }
  }
}

}  // namespace

void requantize(const int32_t* acc, int64_t m, int64_t n, const Requantize& r, LoomDType out_dtype,
                void* out) {
  if (out_dtype == LOOM_DTYPE_FLOAT32) {
    float* dst = static_cast<float*>(out);
    const bool has_bias = !r.bias.empty();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t c = 0; c < n; ++c) {
        float y =
            static_cast<float>(acc[i * n + c]) * r.multiplier[c] + (has_bias ? r.bias[c] : 0.0f);
        dst[i * n + c] = r.relu && y < 0 ? 0.0f : y;
      }
    }
    return;
  }
  if (out_dtype == LOOM_DTYPE_QUINT8) {
    requantize_rows(acc, m, n, r, static_cast<uint8_t*>(out));
  } else {
    requantize_rows(acc, m, n, r, static_cast<int8_t*>(out));
  }
}

}  // namespace loom::quantization
