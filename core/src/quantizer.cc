// Quantizer (loom/core/quantizer.h): the checked construction of per-tensor and
// per-channel affine quantizers.
#include "loom/core/quantizer.h"

#include <cmath>
#include <sstream>

#include "loom/core/error.h"

namespace loom {

const char* qscheme_name(QScheme scheme) {
  return scheme == QScheme::PerTensorAffine ? "per_tensor_affine" : "per_channel_affine";
}

int64_t quantized_min(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::QInt8:
      return -128;
    case ScalarType::QUInt8:
      return 0;
    case ScalarType::QInt32:
      return INT32_MIN;
    default:
      LOOM_CHECK(false, "quantizer", scalar_type_name(dtype), " is not quantized");
      return 0;
  }
}

int64_t quantized_max(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::QInt8:
      return 127;
    case ScalarType::QUInt8:
      return 255;
    case ScalarType::QInt32:
      return INT32_MAX;
    default:
      LOOM_CHECK(false, "quantizer", scalar_type_name(dtype), " is not quantized");
      return 0;
  }
}

namespace {

void check_scale(double scale, const char* what, const std::string& where) {
  LOOM_CHECK(std::isfinite(scale) && scale > 0, what, "scale", where,
             " must be positive and finite, found ", scale);
}

void check_zero_point(int64_t zero_point, ScalarType dtype, const char* what,
                      const std::string& where) {
  LOOM_CHECK(zero_point >= quantized_min(dtype) && zero_point <= quantized_max(dtype), what,
             "zero point", where, " must be within ", scalar_type_name(dtype), "'s range [",
             quantized_min(dtype), ", ", quantized_max(dtype), "], found ", zero_point);
}

}  // namespace

Ref<Quantizer> Quantizer::per_tensor(double scale, int64_t zero_point, ScalarType dtype,
                                     const char* what) {
  LOOM_CHECK(is_quantized(dtype), what,
             "expected a quantized dtype (qint8, quint8, qint32), found ", scalar_type_name(dtype));
  check_scale(scale, what, "");
  check_zero_point(zero_point, dtype, what, "");
  Ref<Quantizer> q = Ref<Quantizer>::adopt(new Quantizer());
  q->params_.scheme = QScheme::PerTensorAffine;
  q->params_.scale = scale;
  q->params_.zero_point = zero_point;
  return q;
}

Ref<Quantizer> Quantizer::per_channel(Ref<TensorImpl> scales, Ref<TensorImpl> zero_points,
                                      int64_t axis, ScalarType dtype, const char* what) {
  LOOM_CHECK(is_quantized(dtype), what,
             "expected a quantized dtype (qint8, quint8, qint32), found ", scalar_type_name(dtype));
  LOOM_CHECK(scales && zero_points, what, "per-channel quantization needs scales and zero points");
  LOOM_CHECK(scales->dtype() == ScalarType::Float64 && scales->dim() == 1 &&
                 scales->is_contiguous() && scales->device().type == kCPU,
             what, "per-channel scales must be a contiguous 1-D float64 CPU tensor");
  LOOM_CHECK(zero_points->dtype() == ScalarType::Int64 && zero_points->dim() == 1 &&
                 zero_points->is_contiguous() && zero_points->device().type == kCPU,
             what, "per-channel zero points must be a contiguous 1-D int64 CPU tensor");
  LOOM_CHECK(scales->numel() == zero_points->numel(), what,
             "expected as many zero points as scales (", scales->numel(), "), found ",
             zero_points->numel());
  LOOM_CHECK(axis >= 0 && axis <= INT32_MAX, what, "the channel axis must be non-negative, found ",
             axis);
  const double* s = static_cast<const double*>(scales->data());
  const int64_t* z = static_cast<const int64_t*>(zero_points->data());
  for (int64_t c = 0; c < scales->numel(); ++c) {
    check_scale(s[c], what, " of channel " + std::to_string(c));
    check_zero_point(z[c], dtype, what, " of channel " + std::to_string(c));
  }
  Ref<Quantizer> q = Ref<Quantizer>::adopt(new Quantizer());
  q->params_.scheme = QScheme::PerChannelAffine;
  q->params_.axis = static_cast<int32_t>(axis);
  q->params_.scales = scales.get();
  q->params_.zero_points = zero_points.get();
  q->scales_ = std::move(scales);
  q->zero_points_ = std::move(zero_points);
  return q;
}

int64_t Quantizer::channels() const {
  return scales_ ? scales_->numel() : 0;
}

double Quantizer::channel_scale(int64_t c) const {
  return static_cast<const double*>(scales_->data())[c];
}

int64_t Quantizer::channel_zero_point(int64_t c) const {
  return static_cast<const int64_t*>(zero_points_->data())[c];
}

std::string Quantizer::describe() const {
  std::ostringstream s;
  s << qscheme_name(scheme());
  if (scheme() == QScheme::PerTensorAffine) {
    s << ", scale=" << scale() << ", zero_point=" << zero_point();
  } else {
    s << ", axis=" << axis() << ", " << channels() << " channels";
  }
  return s.str();
}

}  // namespace loom
