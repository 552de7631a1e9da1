// loom::quantization, the C++ API of quantization (as torch.ao.quantization's eager mode):
// observers, fake quantization, qconfigs and their mapping, module fusion, and the four
// flows over nn::Sequential models (static post-training quantization, quantization-aware
// training, dynamic and weight-only quantization), with a debugger for accuracy drops.
//
//   auto model = quantization::fuse_modules(float_model);      // conv+bn+relu, linear+relu
//   auto prepared = quantization::prepare(model, quantization::QConfigMapping()
//                                                    .set_global(quantization::default_qconfig()));
//   for (batch : calibration) prepared(batch);                 // observers record ranges
//   auto quantized = quantization::convert(prepared);          // int8 kernels
//
// The kernels are the quantization plugin's (ops/schemas/quantization.def, quantized.def);
// without it the flows raise the dispatcher's "no kernel" errors naming the op.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/core/scalar_type.h"
#include "loom/nn.h"
#include "loom/ops/tensor.h"

namespace loom::quantization {

// How an observer maps its range: affine (a zero point anywhere, activations) or
// symmetric (zero point 0 for qint8, weights), per tensor or per channel.
enum class QScheme { PerTensorAffine, PerTensorSymmetric, PerChannelSymmetric, PerChannelAffine };

// The parameters an observer chose.
struct QParams {
  ScalarType dtype = ScalarType::QUInt8;
  bool per_channel = false;
  double scale = 1;        // per tensor
  int64_t zero_point = 0;  // per tensor
  Tensor scales;           // per channel: float64 [C]
  Tensor zero_points;      // per channel: int64 [C]
  int64_t axis = 0;
};
// x quantized with q.
Tensor quantize(const Tensor& x, const QParams& q);
// x fake-quantized with q (float in, float out; straight-through gradients).
Tensor fake_quantize(const Tensor& x, const QParams& q);

// --- observers: modules that record what flows through them and return it unchanged ---

class ObserverImpl : public nn::Module {
 public:
  ObserverImpl(std::string type_name, ScalarType dtype, QScheme scheme);
  Tensor forward(const Tensor& x);
  // The parameters for what was recorded (an error before anything was).
  virtual QParams calculate_qparams() const = 0;
  bool has_observed() const { return observed_; }
  ScalarType dtype() const { return dtype_; }
  QScheme qscheme() const { return scheme_; }
  // PyTorch's reduce_range: one bit fewer (quint8 [0, 127], qint8 [-64, 63]), for CPUs
  // whose int8 products saturate on 8-bit activations (AVX2 without VNNI).
  void set_reduce_range(bool on) { reduce_range_ = on; }
  bool reduce_range() const { return reduce_range_; }

 protected:
  virtual void observe(const Tensor& x) = 0;  // x: detached, float
  // PyTorch's choice for a [min, max] range (widened to hold 0).
  QParams from_range(double min, double max) const;
  std::string extra_repr() const override;

 private:
  ScalarType dtype_;
  QScheme scheme_;
  bool observed_ = false;
  bool reduce_range_ = false;
};
using ObserverFactory = std::function<std::shared_ptr<ObserverImpl>()>;

// The running min and max.
class MinMaxObserverImpl : public ObserverImpl {
 public:
  explicit MinMaxObserverImpl(ScalarType dtype = ScalarType::QUInt8,
                              QScheme scheme = QScheme::PerTensorAffine);
  QParams calculate_qparams() const override;

 protected:
  MinMaxObserverImpl(std::string type_name, ScalarType dtype, QScheme scheme);
  void observe(const Tensor& x) override;
  double min_ = 0, max_ = 0;
  bool first_ = true;
};

// min and max averaged over batches: min += c * (batch_min - min).
class MovingAverageMinMaxObserverImpl : public MinMaxObserverImpl {
 public:
  explicit MovingAverageMinMaxObserverImpl(double averaging_constant = 0.01,
                                           ScalarType dtype = ScalarType::QUInt8,
                                           QScheme scheme = QScheme::PerTensorAffine);

 protected:
  void observe(const Tensor& x) override;
  double averaging_constant_;
};

// A min and max per index of `axis` (weights: the output channels).
class PerChannelMinMaxObserverImpl : public ObserverImpl {
 public:
  explicit PerChannelMinMaxObserverImpl(int64_t axis = 0, ScalarType dtype = ScalarType::QInt8,
                                        QScheme scheme = QScheme::PerChannelSymmetric);
  QParams calculate_qparams() const override;

 protected:
  void observe(const Tensor& x) override;
  int64_t axis_;
  std::vector<double> min_, max_;
};

// A histogram of the values; the range chosen by searching for the one that minimises the
// L2 error of quantizing the histogram (PyTorch's HistogramObserver's search: shrink the
// range from the side that costs less while the error falls).
class HistogramObserverImpl : public ObserverImpl {
 public:
  explicit HistogramObserverImpl(int64_t bins = 2048, ScalarType dtype = ScalarType::QUInt8,
                                 QScheme scheme = QScheme::PerTensorAffine);
  QParams calculate_qparams() const override;

 protected:
  HistogramObserverImpl(std::string type_name, int64_t bins, ScalarType dtype, QScheme scheme);
  void observe(const Tensor& x) override;
  // The error of quantizing the histogram to bins [begin, end) of it.
  double l2_error(int64_t begin, int64_t end) const;
  std::vector<double> histogram_;
  double min_ = 0, max_ = 0;
};

// The range between the `percentile` and 100 - `percentile` points of the histogram.
class PercentileObserverImpl : public HistogramObserverImpl {
 public:
  explicit PercentileObserverImpl(double percentile = 99.99, int64_t bins = 2048,
                                  ScalarType dtype = ScalarType::QUInt8,
                                  QScheme scheme = QScheme::PerTensorAffine);
  QParams calculate_qparams() const override;

 private:
  double percentile_;
};

// Fake quantization for quantization-aware training: observes (while enabled) and
// rounds through the observer's current parameters in float.
class FakeQuantizeImpl : public nn::Module {
 public:
  explicit FakeQuantizeImpl(std::shared_ptr<ObserverImpl> observer);
  Tensor forward(const Tensor& x);
  void enable_observer(bool on) { observe_ = on; }
  void enable_fake_quant(bool on) { fake_quant_ = on; }
  const std::shared_ptr<ObserverImpl>& observer() const { return observer_; }

 private:
  std::shared_ptr<ObserverImpl> observer_;
  bool observe_ = true, fake_quant_ = true;
};

// --- configuration ---

// How a layer is quantized: its activations' observer and its weights'.
struct QConfig {
  ObserverFactory activation;
  ObserverFactory weight;
};
// x86's defaults (PyTorch's "x86" qconfig): histogram quint8 activations, per-channel
// symmetric qint8 weights; the activations use all 8 bits on CPUs with VNNI and 7
// (reduce_range) on others, where oneDNN's int8 products would saturate.
QConfig default_qconfig();
// For quantization-aware training: moving-average activations, per-channel weights.
QConfig default_qat_qconfig();
// For dynamic quantization: weights only (activations are measured per call).
QConfig default_dynamic_qconfig();

// Which qconfig a layer gets: by its name (dotted, as named_modules), else by its type
// ("Linear", "Conv2d", "ConvReLU2d"...), else the global one; nullopt keeps it float.
class QConfigMapping {
 public:
  QConfigMapping& set_global(std::optional<QConfig> qconfig);
  QConfigMapping& set_module_type(const std::string& type, std::optional<QConfig> qconfig);
  QConfigMapping& set_module_name(const std::string& name, std::optional<QConfig> qconfig);
  std::optional<QConfig> qconfig_for(const std::string& name, const std::string& type) const;

 private:
  std::optional<QConfig> global_;
  std::map<std::string, std::optional<QConfig>> by_type_, by_name_;
};

// --- fusion ---

// Conv2d (+ BatchNorm2d folded in) + ReLU as one layer, as torch.ao.nn.intrinsic's.
class ConvReLU2dImpl : public nn::Module {
 public:
  explicit ConvReLU2dImpl(nn::Conv2d conv);
  Tensor forward(const Tensor& x) const;
  nn::Conv2d conv;
};
LOOM_MODULE(ConvReLU2d);

class LinearReLUImpl : public nn::Module {
 public:
  explicit LinearReLUImpl(nn::Linear linear);
  Tensor forward(const Tensor& x) const;
  nn::Linear linear;
};
LOOM_MODULE(LinearReLU);

// A copy of `model` (nested Sequentials flattened, layers named by their dotted paths) with
// Conv2d + BatchNorm2d folded into one Conv2d (eval statistics), and Conv2d + ReLU and
// Linear + ReLU fused. The float layers are new: the original model is unchanged.
nn::Sequential fuse_modules(const nn::Sequential& model);

// --- the flows ---

// A model being quantized: its float layers, each with the observer (or fake quantizer) of
// its output, and the observer of the model's input. Runs in float.
class PreparedImpl : public nn::Module {
 public:
  struct Step {
    std::string name;  // the layer's name in the float model
    std::shared_ptr<nn::Module> layer;
    std::function<Tensor(const Tensor&)> forward;
    std::optional<QConfig> qconfig;
    std::shared_ptr<nn::Module> output_observer;  // ObserverImpl or FakeQuantizeImpl
  };
  PreparedImpl(std::vector<Step> steps, std::shared_ptr<nn::Module> input_observer, bool qat);
  Tensor forward(const Tensor& x) const;
  const std::vector<Step>& steps() const { return steps_; }
  const std::shared_ptr<nn::Module>& input_observer() const { return input_observer_; }
  bool is_qat() const { return qat_; }

 private:
  std::vector<Step> steps_;
  std::shared_ptr<nn::Module> input_observer_;
  bool qat_;
};
LOOM_MODULE(Prepared);

// A quantized model: quantize, the int8 layers (and float layers between dequantize and
// quantize where a layer was kept float), dequantize. `sources` names each layer's float
// layer.
class QuantizedModelImpl : public nn::Module {
 public:
  struct Step {
    std::string source;  // the float layer it replaces ("" for quantize / dequantize)
    std::shared_ptr<nn::Module> layer;
    std::function<Tensor(const Tensor&)> forward;
  };
  explicit QuantizedModelImpl(std::vector<Step> steps);
  Tensor forward(const Tensor& x) const;
  const std::vector<Step>& steps() const { return steps_; }
  // The layers kept in float (their qconfig was nullopt, or they have no int8 kernel).
  std::vector<std::string> float_layers() const;

 private:
  std::vector<Step> steps_;
};
LOOM_MODULE(QuantizedModel);

// Static quantization: observers after every quantizable layer (Conv2d, Linear and their
// fused forms; ReLU, MaxPool2d, Flatten, Identity and Dropout run on quantized tensors).
// The model is fused first. Run calibration batches through the result, then convert.
Prepared prepare(const nn::Sequential& model, const QConfigMapping& mapping);
// Quantization-aware training: fake quantization of weights (per channel) and of every
// layer's output; train the result (its parameters are the model's), then convert.
Prepared prepare_qat(const nn::Sequential& model, const QConfigMapping& mapping);
// The int8 model of a calibrated or trained preparation.
QuantizedModel convert(const Prepared& prepared);
// Dynamic quantization: Linear layers (those the mapping selects) with qint8 weights and
// activations quantized per call.
QuantizedModel quantize_dynamic(const nn::Sequential& model, const QConfigMapping& mapping);

struct WeightOnlyOptions {
  int64_t bits = 4;          // 4 or 8
  int64_t group_size = 128;  // divides in_features
};
// Weight-only quantization: the Linear layers the mapping selects keep float activations
// and store their weights in `bits` per value, grouped (Note [Weight-only linear layers]).
QuantizedModel quantize_weights(
    const nn::Sequential& model, const WeightOnlyOptions& options,
    const QConfigMapping& mapping = QConfigMapping().set_global(default_dynamic_qconfig()));

// --- the debugger ---

// How far a quantized layer's output is from its float layer's on the same inputs.
struct LayerReport {
  std::string layer;  // the float layer's name
  std::string type;
  double sqnr_db = 0;    // 10 log10(|float|^2 / |float - quantized|^2); higher is better
  double max_error = 0;  // max |float - quantized|
};
// Runs both models on `input` layer by layer and compares every quantized layer's output
// (dequantized) with its float layer's, worst (lowest SQNR) first.
std::vector<LayerReport> compare_layers(const nn::Sequential& float_model,
                                        const QuantizedModel& quantized, const Tensor& input);

struct AutoQuantizeResult {
  QuantizedModel model{nullptr};
  std::vector<std::string> float_layers;  // kept in float to hold the budget
  double float_accuracy = 0, quantized_accuracy = 0;
};
// Static quantization that keeps the worst layers (by compare_layers on `probe`) in float,
// one at a time, until evaluate(quantized) is within `budget` (accuracy points) of
// evaluate(float). calibrate runs calibration batches through a prepared model.
AutoQuantizeResult quantize_within_budget(
    const nn::Sequential& model, QConfigMapping mapping,
    const std::function<void(Prepared&)>& calibrate,
    const std::function<double(const std::function<Tensor(const Tensor&)>&)>& evaluate,
    const Tensor& probe, double budget);

}  // namespace loom::quantization
