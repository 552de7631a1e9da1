// Pooling of quantized tensors (the pool family at the Quantized key): max_pool2d compares
// the integers directly (the quantizer is monotonic) and keeps the input's quantizer and
// memory format (channels last stays channels last, as oneDNN's convolutions make it);
// avg_pool2d averages in float under the input's quantizer.
#include <algorithm>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../quantized_math.h"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {
namespace {

using sdk::Tensor;

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // PyTorch: the last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

template <typename Q>
void max_pool(const Tensor& in, Tensor& out, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
              int64_t ph, int64_t pw, int64_t dh, int64_t dw) {
  const int64_t n = in.size(0), c = in.size(1), h = in.size(2), w = in.size(3);
  const int64_t oh = out.size(1), ow = out.size(2);  // out is [N, OH, OW, C]
  const auto st = in.strides();
  const int64_t sb = st[0], sc = st[1], sy = st[2], sx = st[3];
  const Q* src = in.data<Q>();
  Q* dst = out.data<Q>();
  // Each output row of each image is one task; channels innermost (unit stride when the
  // input is channels last, as a convolution's result is).
#pragma omp parallel for collapse(2) schedule(static) if (n * oh * ow * c > 16384)
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        Q* o = dst + ((b * oh + y) * ow + x) * c;
        for (int64_t ch = 0; ch < c; ++ch) o[ch] = std::numeric_limits<Q>::lowest();
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t yy = y * sh - ph + i * dh;
          if (yy < 0 || yy >= h) continue;
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t xx = x * sw - pw + j * dw;
            if (xx < 0 || xx >= w) continue;
            const Q* p = src + b * sb + yy * sy + xx * sx;
            if (sc == 1) {
              for (int64_t ch = 0; ch < c; ++ch) o[ch] = std::max(o[ch], p[ch]);
            } else {
              for (int64_t ch = 0; ch < c; ++ch) o[ch] = std::max(o[ch], p[ch * sc]);
            }
          }
        }
      }
    }
  }
}

Tensor max_pool2d(const Tensor& self, std::span<const int64_t> kernel_size,
                  std::span<const int64_t> stride, std::span<const int64_t> padding,
                  std::span<const int64_t> dilation, bool ceil_mode) {
  constexpr const char* op = "loom::max_pool2d";
  const LoomQuantizer& q = quantizer_of(op, self);
  if (q.scheme != LOOM_QSCHEME_PER_TENSOR_AFFINE) {
    refuse(op, "quantized max_pool2d takes tensors quantized per tensor, found per channel");
  }
  if (self.dim() != 4) {
    refuse(op, "quantized max_pool2d takes a 4-D input [N, C, H, W], found " +
                   std::to_string(self.dim()) + " dims");
  }
  const int64_t kh = kernel_size[0], kw = kernel_size.size() > 1 ? kernel_size[1] : kh;
  const int64_t sh = stride.empty() ? kh : stride[0];
  const int64_t sw = stride.empty() ? kw : (stride.size() > 1 ? stride[1] : sh);
  const int64_t ph = padding[0], pw = padding.size() > 1 ? padding[1] : ph;
  const int64_t dh = dilation[0], dw = dilation.size() > 1 ? dilation[1] : dh;
  if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1 || ph < 0 || pw < 0 || 2 * ph > kh ||
      2 * pw > kw) {
    refuse(op, "kernel, stride and dilation must be positive and padding at most half the kernel");
  }
  const int64_t oh = pooled_size(self.size(2), kh, sh, ph, dh, ceil_mode);
  const int64_t ow = pooled_size(self.size(3), kw, sw, pw, dw, ceil_mode);
  if (oh < 1 || ow < 1)
    refuse(op, "the output would be empty: the input is smaller than the kernel");
  const std::vector<int64_t> nhwc = {self.size(0), oh, ow, self.size(1)};
  Tensor out = sdk::empty_quantized(nhwc, self.dtype(), q);
  switch (self.dtype()) {
    case LOOM_DTYPE_QINT8:
      max_pool<int8_t>(self, out, kh, kw, sh, sw, ph, pw, dh, dw);
      break;
    case LOOM_DTYPE_QUINT8:
      max_pool<uint8_t>(self, out, kh, kw, sh, sw, ph, pw, dh, dw);
      break;
    default:
      max_pool<int32_t>(self, out, kh, kw, sh, sw, ph, pw, dh, dw);
  }
  Tensor nchw = sdk::op::permute(out, std::vector<int64_t>{0, 3, 1, 2});
  return self.is_channels_last() ? nchw : dense_quantized(nchw);
}

// The average of each window in float, requantized with the input's parameters, as
// PyTorch's quantized avg_pool2d keeps them.
Tensor avg_pool2d(const Tensor& self, std::span<const int64_t> kernel_size,
                  std::span<const int64_t> stride, std::span<const int64_t> padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr const char* op = "loom::avg_pool2d";
  const LoomQuantizer& q = quantizer_of(op, self);
  if (q.scheme != LOOM_QSCHEME_PER_TENSOR_AFFINE) {
    refuse(op, "quantized avg_pool2d takes tensors quantized per tensor, found per channel");
  }
  Tensor pooled = sdk::op::avg_pool2d(sdk::op::dequantize(self), kernel_size, stride, padding,
                                      ceil_mode, count_include_pad, divisor_override);
  return sdk::op::quantize_per_tensor(pooled, q.scale, q.zero_point, self.dtype());
}

}  // namespace

void register_quantized_pool_kernels(sdk::Registrar& r) {
  r.impl<&max_pool2d>("loom::max_pool2d", LOOM_KEY_QUANTIZED);
  r.impl<&avg_pool2d>("loom::avg_pool2d", LOOM_KEY_QUANTIZED);
}

}  // namespace loom::quantization
