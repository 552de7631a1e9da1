// Quantizer: how a quantized tensor's integers map to real numbers (per-tensor or
// per-channel affine), held by the tensor itself (Note [Where the quantizer lives]).
#pragma once

#include <cstdint>
#include <string>

#include "loom/core/ref_counted.h"
#include "loom/core/scalar_type.h"
#include "loom/core/tensor_impl.h"

namespace loom {

// Note [Where the quantizer lives]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A quantized tensor (qint8, quint8, qint32) stores integers q; its real values are
// (q - zero_point) * scale, with one (scale, zero_point) for the whole tensor or one per
// index of a channel axis. That mapping is part of what the tensor is: views keep it,
// printing and checkpoints need it, and a kernel cannot read the integers without it.
// So it is a core field of TensorImpl, as PyTorch's QTensorImpl holds its quantizer,
// not a per-tensor extension slot of the quantization plugin: an extension slot would
// be lost by every view the core makes and would make the dtype mean nothing without
// that one plugin. Plugins read it through LoomTensorView::quantizer (ABI 1.10) and make
// quantized tensors with LoomHostApi::tensor_empty_quantized, which checks the
// parameters; the quantizer is immutable once made.
enum class QScheme : int32_t { PerTensorAffine = 0, PerChannelAffine = 1 };

const char* qscheme_name(QScheme scheme);  // "per_tensor_affine"

// The fields, laid out as the ABI's LoomQuantizer (the dispatcher hands plugins a
// pointer to them).
struct QuantizerParams {
  QScheme scheme = QScheme::PerTensorAffine;
  int32_t axis = 0;                   // per channel
  double scale = 1.0;                 // per tensor
  int64_t zero_point = 0;             // per tensor
  TensorImpl* scales = nullptr;       // per channel: float64 [channels], CPU
  TensorImpl* zero_points = nullptr;  // per channel: int64 [channels], CPU
};

class Quantizer final : public RefCounted {
 public:
  // Throws "[<what>] ..." unless scale is positive and finite and zero_point is within
  // the range of `dtype`.
  static Ref<Quantizer> per_tensor(double scale, int64_t zero_point, ScalarType dtype,
                                   const char* what);
  // scales: float64 [C]; zero_points: int64 [C], both contiguous CPU tensors that the
  // quantizer owns from now on (the caller copies); each checked as above.
  static Ref<Quantizer> per_channel(Ref<TensorImpl> scales, Ref<TensorImpl> zero_points,
                                    int64_t axis, ScalarType dtype, const char* what);

  const QuantizerParams& params() const { return params_; }
  QScheme scheme() const { return params_.scheme; }
  double scale() const { return params_.scale; }
  int64_t zero_point() const { return params_.zero_point; }
  int64_t axis() const { return params_.axis; }
  int64_t channels() const;  // per channel: the number of scales
  double channel_scale(int64_t c) const;
  int64_t channel_zero_point(int64_t c) const;
  const Ref<TensorImpl>& scales() const { return scales_; }
  const Ref<TensorImpl>& zero_points() const { return zero_points_; }

  // "per_tensor_affine, scale=0.1, zero_point=3"
  std::string describe() const;

 private:
  Quantizer() = default;
  QuantizerParams params_;
  Ref<TensorImpl> scales_, zero_points_;
};

// The integer range of a quantized dtype ([-128, 127] for qint8, ...).
int64_t quantized_min(ScalarType dtype);
int64_t quantized_max(ScalarType dtype);

}  // namespace loom
