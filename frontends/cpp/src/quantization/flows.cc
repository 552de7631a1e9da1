// The flows of loom/quantization.h: qconfigs and their mapping, fusion, prepare (static
// and QAT), convert, dynamic and weight-only quantization, and the quantized layers they
// build (Note [Quantizing Sequential models]).
#include <cmath>
#include <sstream>

#include "fused_layers.h"
#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/factories.h"
#include "loom/ops/generated/ops.h"
#include "loom/quantization.h"

namespace loom::quantization {

// Note [Quantizing Sequential models]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// C++ modules run arbitrary code in forward, so, as PyTorch's eager mode, the flows
// rewrite what they can see: nn::Sequential models (nested ones flattened, each layer
// named by its dotted path). prepare keeps the float layers and puts an observer after
// every layer that is not a pass-through (ReLU, MaxPool2d, Flatten, Identity and
// Dropout run on quantized tensors as they are) and one before the first; convert then
// builds the quantized model from the observers: quantize with the input's parameters,
// each Conv2d / Linear (or fused form) with a qconfig as its int8 layer with per-channel
// weights and its observer's output parameters, pass-through layers unchanged, and any
// other layer (or one whose qconfig is nullopt) in float between dequantize and
// quantize (its own observer giving the parameters after it). Quantized layers remember
// the float layer they replace, which is how the debugger lines their outputs up.
namespace {

constexpr const char* kWhat = "quantization";

// --- layers of a flattened model ---

using detail::Layer;

void flatten_into(const nn::SequentialImpl& seq, const std::string& prefix,
                  std::vector<Layer>& out) {
  for (size_t i = 0; i < seq.size(); ++i) {
    const std::string name = prefix + std::to_string(i);
    if (auto nested = std::dynamic_pointer_cast<nn::SequentialImpl>(seq[i])) {
      flatten_into(*nested, name + ".", out);
    } else {
      out.push_back({name, seq[i], seq.forward_of(i)});
    }
  }
}

std::vector<Layer> layers_of(const nn::Sequential& model) {
  LOOM_CHECK(!model.is_empty(), kWhat, "the model is empty (a null nn::Sequential)");
  std::vector<Layer> out;
  flatten_into(*model, "", out);
  return out;
}

bool is_pass_through(const std::string& type) {
  return type == "ReLU" || type == "MaxPool2d" || type == "Flatten" || type == "Identity" ||
         type == "Dropout";
}
bool is_conv(const std::string& type) {
  return type == "Conv2d" || type == "ConvReLU2d";
}
bool is_linear(const std::string& type) {
  return type == "Linear" || type == "LinearReLU";
}

// The Conv2d / Linear inside a layer (plain or fused) and whether ReLU follows.
std::shared_ptr<nn::Conv2dImpl> conv_of(const std::shared_ptr<nn::Module>& m, bool* relu) {
  if (auto fused = std::dynamic_pointer_cast<ConvReLU2dImpl>(m)) {
    *relu = true;
    return fused->conv.ptr();
  }
  *relu = false;
  return std::dynamic_pointer_cast<nn::Conv2dImpl>(m);
}
std::shared_ptr<nn::LinearImpl> linear_of(const std::shared_ptr<nn::Module>& m, bool* relu) {
  if (auto fused = std::dynamic_pointer_cast<LinearReLUImpl>(m)) {
    *relu = true;
    return fused->linear.ptr();
  }
  *relu = false;
  return std::dynamic_pointer_cast<nn::LinearImpl>(m);
}

std::optional<Tensor> bias_of(const Tensor& bias) {
  return bias.defined() ? std::optional<Tensor>(bias.detach()) : std::nullopt;
}

// --- copies of float layers (the flows never change the model they are given) ---

nn::Conv2d copy_conv(const nn::Conv2dImpl& conv) {
  nn::Conv2d out(conv.options);
  NoGradGuard no_grad;
  out->weight.copy_(conv.weight);
  if (conv.bias.defined()) out->bias.copy_(conv.bias);
  return out;
}

nn::Linear copy_linear(const nn::LinearImpl& linear) {
  nn::Linear out(linear.options);
  NoGradGuard no_grad;
  out->weight.copy_(linear.weight);
  if (linear.bias.defined()) out->bias.copy_(linear.bias);
  return out;
}

// Conv2d with BatchNorm2d's eval statistics folded in: w * g / sqrt(v + eps) per output
// channel, (b - mean) * g / sqrt(v + eps) + beta.
nn::Conv2d fold_batch_norm(const nn::Conv2dImpl& conv, const nn::BatchNorm2dImpl& bn) {
  LOOM_CHECK(bn.running_mean.defined() && bn.options.num_features() == conv.options.out_channels(),
             kWhat, "cannot fold a BatchNorm2d of ", bn.options.num_features(),
             " features without running statistics into a Conv2d of ", conv.options.out_channels(),
             " channels");
  nn::Conv2dOptions options = conv.options;
  options.bias(true);
  nn::Conv2d out(options);
  NoGradGuard no_grad;
  Tensor inv_std = (bn.running_var + bn.options.eps()).rsqrt();
  Tensor gamma = bn.weight.defined() ? bn.weight.detach() : ones_like(inv_std);
  Tensor beta = bn.bias.defined() ? bn.bias.detach() : zeros_like(inv_std);
  Tensor factor = gamma * inv_std;
  out->weight.copy_(conv.weight * factor.reshape({-1, 1, 1, 1}));
  Tensor bias = conv.bias.defined() ? conv.bias.detach() : zeros_like(inv_std);
  out->bias.copy_((bias - bn.running_mean) * factor + beta);
  return out;
}

// --- quantized layers ---

// A layer's output parameters as buffers of its state dict ("scale", "zero_point").
void register_output_params(nn::Module& m, double scale, int64_t zero_point) {
  m.register_buffer("scale", scalar_tensor(scale, TensorOptions().dtype(ScalarType::Float64)));
  m.register_buffer("zero_point", scalar_tensor(static_cast<double>(zero_point),
                                                TensorOptions().dtype(ScalarType::Int64)));
}

class QuantizeImpl : public nn::Module {
 public:
  explicit QuantizeImpl(QParams q) : nn::Module("Quantize"), q_(std::move(q)) {
    register_output_params(*this, q_.scale, q_.zero_point);
  }
  Tensor forward(const Tensor& x) const { return quantize(x.to(ScalarType::Float32), q_); }

 protected:
  std::string extra_repr() const override {
    std::ostringstream s;
    s << "scale=" << q_.scale << ", zero_point=" << q_.zero_point
      << ", dtype=" << scalar_type_name(q_.dtype);
    return s.str();
  }

 private:
  QParams q_;
};

class DeQuantizeImpl : public nn::Module {
 public:
  DeQuantizeImpl() : nn::Module("DeQuantize") {}
  Tensor forward(const Tensor& x) const { return is_quantized(x.dtype()) ? x.dequantize() : x; }
};

// Symmetric per-channel qint8 weights from the qconfig's weight observer.
Tensor quantized_weight(const QConfig& qconfig, const Tensor& weight, const std::string& layer) {
  LOOM_CHECK(qconfig.weight != nullptr, kWhat, "layer '", layer,
             "': the qconfig has no weight observer");
  std::shared_ptr<ObserverImpl> observer = qconfig.weight();
  LOOM_CHECK(observer->dtype() == ScalarType::QInt8, kWhat, "layer '", layer,
             "': int8 kernels take qint8 weights, the qconfig's weight observer gives ",
             scalar_type_name(observer->dtype()));
  observer->forward(weight.detach());
  QParams q = observer->calculate_qparams();
  return quantize(weight.detach().contiguous(), q);
}

// What an int8 layer holds: its quantized weights, float bias, output parameters and
// whether ReLU is fused, all in its state dict.
class QuantizedLayerImpl : public nn::Module {
 protected:
  QuantizedLayerImpl(std::string type, Tensor weight, std::optional<Tensor> bias, QParams out,
                     bool relu)
      : nn::Module(std::move(type)),
        weight_(register_buffer("weight", std::move(weight))),
        bias_(std::move(bias)),
        out_(std::move(out)),
        relu_(relu) {
    if (bias_) register_buffer("bias", *bias_);
    register_output_params(*this, out_.scale, out_.zero_point);
  }
  std::string output_repr() const {
    std::ostringstream s;
    s << "scale=" << out_.scale << ", zero_point=" << out_.zero_point;
    return s.str();
  }

  Tensor& weight_;
  std::optional<Tensor> bias_;
  QParams out_;
  bool relu_;
};

class QuantizedLinearImpl : public QuantizedLayerImpl {
 public:
  QuantizedLinearImpl(Tensor weight, std::optional<Tensor> bias, QParams out, bool relu)
      : QuantizedLayerImpl(relu ? "QuantizedLinearReLU" : "QuantizedLinear", std::move(weight),
                           std::move(bias), std::move(out), relu) {}
  Tensor forward(const Tensor& x) const {
    return quantized_linear(x, weight_, bias_, out_.scale, out_.zero_point, relu_);
  }

 protected:
  std::string extra_repr() const override {
    return "in_features=" + std::to_string(weight_.size(1)) +
           ", out_features=" + std::to_string(weight_.size(0)) + ", " + output_repr();
  }
};

class QuantizedConv2dImpl : public QuantizedLayerImpl {
 public:
  QuantizedConv2dImpl(nn::Conv2dOptions options, Tensor weight, std::optional<Tensor> bias,
                      QParams out, bool relu)
      : QuantizedLayerImpl(relu ? "QuantizedConvReLU2d" : "QuantizedConv2d", std::move(weight),
                           std::move(bias), std::move(out), relu),
        options_(std::move(options)) {}
  Tensor forward(const Tensor& x) const {
    return quantized_conv2d(x, weight_, bias_, options_.stride().values(),
                            options_.padding().values(), options_.dilation().values(),
                            options_.groups(), out_.scale, out_.zero_point, relu_);
  }

 protected:
  std::string extra_repr() const override {
    return std::to_string(options_.in_channels()) + ", " + std::to_string(options_.out_channels()) +
           ", kernel_size=" + options_.kernel_size().to_string() + ", " + output_repr();
  }

 private:
  nn::Conv2dOptions options_;
};

class DynamicQuantizedLinearImpl : public nn::Module {
 public:
  DynamicQuantizedLinearImpl(Tensor weight, std::optional<Tensor> bias, bool relu)
      : nn::Module("DynamicQuantizedLinear"),
        weight_(register_buffer("weight", std::move(weight))),
        bias_(bias),
        relu_(relu) {
    if (bias_) register_buffer("bias", *bias_);
  }
  Tensor forward(const Tensor& x) const {
    return dynamic_quantized_linear(x, weight_, bias_, relu_);
  }

 private:
  Tensor& weight_;
  std::optional<Tensor> bias_;
  bool relu_;
};

class WeightOnlyLinearImpl : public nn::Module {
 public:
  WeightOnlyLinearImpl(const Tensor& weight, std::optional<Tensor> bias, bool relu,
                       const WeightOnlyOptions& o)
      : nn::Module("WeightOnlyLinear"), bias_(bias), relu_(relu), options_(o) {
    auto [packed, scales] = pack_weight_only(weight.detach(), o.bits, o.group_size);
    packed_ = &register_buffer("packed_weight", packed);
    scales_ = &register_buffer("scales", scales);
    if (bias_) register_buffer("bias", *bias_);
  }
  Tensor forward(const Tensor& x) const {
    Tensor y = weight_only_linear(x, *packed_, *scales_, bias_, options_.bits, options_.group_size);
    return relu_ ? relu(y) : y;
  }

 protected:
  std::string extra_repr() const override {
    return "bits=" + std::to_string(options_.bits) +
           ", group_size=" + std::to_string(options_.group_size);
  }

 private:
  Tensor* packed_ = nullptr;
  Tensor* scales_ = nullptr;
  std::optional<Tensor> bias_;
  bool relu_;
  WeightOnlyOptions options_;
};

template <typename Impl>
QuantizedModelImpl::Step step_of(std::string source, std::shared_ptr<Impl> impl) {
  return {std::move(source), impl, [impl](const Tensor& x) { return impl->forward(x); }};
}

QParams observed_params(const std::shared_ptr<nn::Module>& m, const std::string& layer) {
  if (auto fake = std::dynamic_pointer_cast<FakeQuantizeImpl>(m))
    return fake->observer()->calculate_qparams();
  auto observer = std::dynamic_pointer_cast<ObserverImpl>(m);
  LOOM_CHECK(observer != nullptr, kWhat, "layer '", layer, "' has no output observer");
  return observer->calculate_qparams();
}

// QAT's weights: symmetric per-channel qint8 parameters of their current values.
QParams weight_qparams(const Tensor& weight) {
  PerChannelMinMaxObserverImpl observer;
  observer.forward(weight);
  return observer.calculate_qparams();
}

Prepared prepare_steps(const nn::Sequential& model, const QConfigMapping& mapping, bool qat) {
  const QConfig fallback = qat ? default_qat_qconfig() : default_qconfig();
  std::vector<PreparedImpl::Step> steps;
  auto make_observer = [&](const std::optional<QConfig>& qconfig) -> std::shared_ptr<nn::Module> {
    const QConfig& q = qconfig ? *qconfig : fallback;
    LOOM_CHECK(q.activation != nullptr, kWhat, "the qconfig has no activation observer");
    std::shared_ptr<ObserverImpl> observer = q.activation();
    if (qat) return std::make_shared<FakeQuantizeImpl>(observer);
    return observer;
  };
  std::optional<QConfig> first;
  for (const Layer& layer : detail::fused_layers(model)) {
    PreparedImpl::Step step{layer.name, layer.module, layer.forward,
                            mapping.qconfig_for(layer.name, layer.module->type_name()), nullptr};
    const std::string& type = layer.module->type_name();
    if (!first && step.qconfig) first = step.qconfig;
    if (!is_pass_through(type)) step.output_observer = make_observer(step.qconfig);
    // QAT trains through weights fake-quantized per channel, as convert will quantize them.
    if (qat && step.qconfig && (is_conv(type) || is_linear(type))) {
      bool relu = false;
      if (auto conv = conv_of(layer.module, &relu)) {
        step.forward = [conv, relu](const Tensor& x) {
          Tensor y = conv2d(x, fake_quantize(conv->weight, weight_qparams(conv->weight)),
                            bias_of(conv->bias), conv->options.stride().values(),
                            conv->options.padding().values(), conv->options.dilation().values(),
                            conv->options.groups());
          return relu ? loom::relu(y) : y;
        };
      } else if (auto linear = linear_of(layer.module, &relu)) {
        step.forward = [linear, relu](const Tensor& x) {
          Tensor y = loom::linear(x, fake_quantize(linear->weight, weight_qparams(linear->weight)),
                                  bias_of(linear->bias));
          return relu ? loom::relu(y) : y;
        };
      }
    }
    steps.push_back(std::move(step));
  }
  return Prepared(std::make_shared<PreparedImpl>(std::move(steps), make_observer(first), qat));
}

}  // namespace

// --- configuration ---

namespace {
// Whether this CPU multiplies u8 x s8 in 32 bits (AVX-512 VNNI): oneDNN's kernels without
// it saturate on 8-bit activations, so the default qconfigs give them 7. (AVX-VNNI-only
// CPUs count as without: clang 14 has no name for that feature; they lose one bit.)
bool cpu_has_vnni() {
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  return vnni;
}

template <typename Observer>
ObserverFactory activations() {
  return [] {
    auto observer = std::make_shared<Observer>();
    observer->set_reduce_range(!cpu_has_vnni());
    return observer;
  };
}
}  // namespace

QConfig default_qconfig() {
  return {activations<HistogramObserverImpl>(),
          [] { return std::make_shared<PerChannelMinMaxObserverImpl>(); }};
}

QConfig default_qat_qconfig() {
  return {activations<MovingAverageMinMaxObserverImpl>(),
          [] { return std::make_shared<PerChannelMinMaxObserverImpl>(); }};
}

QConfig default_dynamic_qconfig() {
  return {nullptr, [] { return std::make_shared<PerChannelMinMaxObserverImpl>(); }};
}

QConfigMapping& QConfigMapping::set_global(std::optional<QConfig> qconfig) {
  global_ = std::move(qconfig);
  return *this;
}
QConfigMapping& QConfigMapping::set_module_type(const std::string& type,
                                                std::optional<QConfig> qconfig) {
  by_type_[type] = std::move(qconfig);
  return *this;
}
QConfigMapping& QConfigMapping::set_module_name(const std::string& name,
                                                std::optional<QConfig> qconfig) {
  by_name_[name] = std::move(qconfig);
  return *this;
}

std::optional<QConfig> QConfigMapping::qconfig_for(const std::string& name,
                                                   const std::string& type) const {
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  if (auto it = by_type_.find(type); it != by_type_.end()) return it->second;
  // A fused layer also answers to its first layer's type.
  const std::string base = type == "ConvReLU2d" ? "Conv2d" : type == "LinearReLU" ? "Linear" : "";
  if (auto it = by_type_.find(base); !base.empty() && it != by_type_.end()) return it->second;
  return global_;
}

// --- fusion ---

ConvReLU2dImpl::ConvReLU2dImpl(nn::Conv2d c) : nn::Module("ConvReLU2d"), conv(std::move(c)) {
  register_module("conv", conv);
}
Tensor ConvReLU2dImpl::forward(const Tensor& x) const {
  return relu(conv(x));
}

LinearReLUImpl::LinearReLUImpl(nn::Linear l) : nn::Module("LinearReLU"), linear(std::move(l)) {
  register_module("linear", linear);
}
Tensor LinearReLUImpl::forward(const Tensor& x) const {
  return relu(linear(x));
}

}  // namespace loom::quantization

namespace loom::quantization::detail {

std::vector<Layer> fused_layers(const nn::Sequential& model) {
  std::vector<Layer> layers = layers_of(model);
  std::vector<Layer> out;
  auto type_at = [&](size_t i) {
    return i < layers.size() ? layers[i].module->type_name() : std::string();
  };
  auto add = [&](const std::string& name, auto holder) {
    auto impl = holder.ptr();
    out.push_back({name, impl, [impl](const Tensor& x) { return impl->forward(x); }});
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string type = type_at(i);
    const std::string& name = layers[i].name;
    if (type == "Conv2d") {
      auto conv = std::static_pointer_cast<nn::Conv2dImpl>(layers[i].module);
      nn::Conv2d fresh =
          type_at(i + 1) == "BatchNorm2d"
              ? fold_batch_norm(*conv,
                                *std::static_pointer_cast<nn::BatchNorm2dImpl>(layers[++i].module))
              : copy_conv(*conv);
      if (type_at(i + 1) == "ReLU") {
        ++i;
        add(name, ConvReLU2d(fresh));
      } else {
        add(name, fresh);
      }
    } else if (type == "Linear") {
      nn::Linear fresh = copy_linear(*std::static_pointer_cast<nn::LinearImpl>(layers[i].module));
      if (type_at(i + 1) == "ReLU") {
        ++i;
        add(name, LinearReLU(fresh));
      } else {
        add(name, fresh);
      }
    } else {
      out.push_back(layers[i]);
    }
  }
  return out;
}

}  // namespace loom::quantization::detail

namespace loom::quantization {

nn::Sequential fuse_modules(const nn::Sequential& model) {
  nn::Sequential out;
  for (const Layer& layer : detail::fused_layers(model))
    out->push_back(layer.module, layer.forward);
  return out;
}

// --- prepared and quantized models ---

PreparedImpl::PreparedImpl(std::vector<Step> steps, std::shared_ptr<nn::Module> input_observer,
                           bool qat)
    : nn::Module(qat ? "PreparedQAT" : "Prepared"),
      steps_(std::move(steps)),
      input_observer_(std::move(input_observer)),
      qat_(qat) {
  register_module("input_observer", input_observer_);
  for (size_t i = 0; i < steps_.size(); ++i) {
    register_module(std::to_string(i), steps_[i].layer);
    if (steps_[i].output_observer)
      register_module(std::to_string(i) + "_observer", steps_[i].output_observer);
  }
}

namespace {
Tensor run_observer(const std::shared_ptr<nn::Module>& m, const Tensor& x) {
  if (auto fake = std::dynamic_pointer_cast<FakeQuantizeImpl>(m)) return fake->forward(x);
  return std::static_pointer_cast<ObserverImpl>(m)->forward(x);
}
}  // namespace

Tensor PreparedImpl::forward(const Tensor& x) const {
  Tensor h = run_observer(input_observer_, x);
  for (const Step& s : steps_) {
    h = s.forward(h);
    if (s.output_observer) h = run_observer(s.output_observer, h);
  }
  return h;
}

QuantizedModelImpl::QuantizedModelImpl(std::vector<Step> steps)
    : nn::Module("QuantizedModel"), steps_(std::move(steps)) {
  for (size_t i = 0; i < steps_.size(); ++i) register_module(std::to_string(i), steps_[i].layer);
}

Tensor QuantizedModelImpl::forward(const Tensor& x) const {
  Tensor h = x;
  for (const Step& s : steps_) h = s.forward(h);
  return h;
}

std::vector<std::string> QuantizedModelImpl::float_layers() const {
  std::vector<std::string> out;
  for (const Step& s : steps_) {
    const std::string& type = s.layer->type_name();
    if (!s.source.empty() && type.find("Quantized") == std::string::npos &&
        type != "WeightOnlyLinear" && !is_pass_through(type)) {
      out.push_back(s.source);
    }
  }
  return out;
}

Prepared prepare(const nn::Sequential& model, const QConfigMapping& mapping) {
  return prepare_steps(model, mapping, /*qat=*/false);
}

Prepared prepare_qat(const nn::Sequential& model, const QConfigMapping& mapping) {
  Prepared p = prepare_steps(model, mapping, /*qat=*/true);
  p->train();
  return p;
}

QuantizedModel convert(const Prepared& prepared) {
  LOOM_CHECK(!prepared.is_empty(), kWhat, "convert: the prepared model is empty");
  std::vector<QuantizedModelImpl::Step> steps;
  QParams current = observed_params(prepared->input_observer(), "input");
  bool quantized = false;
  for (const PreparedImpl::Step& s : prepared->steps()) {
    const std::string& type = s.layer->type_name();
    if (s.qconfig && (is_conv(type) || is_linear(type))) {
      if (!quantized) steps.push_back(step_of("", std::make_shared<QuantizeImpl>(current)));
      quantized = true;
      const QParams out = observed_params(s.output_observer, s.name);
      LOOM_CHECK(!out.per_channel && out.dtype == current.dtype, kWhat, "layer '", s.name,
                 "': activations must be quantized per tensor in one dtype, found ",
                 scalar_type_name(out.dtype), " after ", scalar_type_name(current.dtype));
      bool relu = false;
      if (auto conv = conv_of(s.layer, &relu)) {
        steps.push_back(
            step_of(s.name, std::make_shared<QuantizedConv2dImpl>(
                                conv->options, quantized_weight(*s.qconfig, conv->weight, s.name),
                                bias_of(conv->bias), out, relu)));
      } else {
        auto linear = linear_of(s.layer, &relu);
        steps.push_back(step_of(s.name, std::make_shared<QuantizedLinearImpl>(
                                            quantized_weight(*s.qconfig, linear->weight, s.name),
                                            bias_of(linear->bias), out, relu)));
      }
      current = out;
    } else if (is_pass_through(type)) {
      steps.push_back({s.name, s.layer, s.forward});
    } else {
      if (quantized) steps.push_back(step_of("", std::make_shared<DeQuantizeImpl>()));
      quantized = false;
      // The float layer itself (QAT's fake quantization of weights is not kept).
      bool relu = false;
      std::function<Tensor(const Tensor&)> forward = s.forward;
      if (auto conv = conv_of(s.layer, &relu)) {
        forward = [m = s.layer](const Tensor& x) {
          if (auto c = std::dynamic_pointer_cast<ConvReLU2dImpl>(m)) return c->forward(x);
          return std::static_pointer_cast<nn::Conv2dImpl>(m)->forward(x);
        };
      } else if (auto linear = linear_of(s.layer, &relu)) {
        forward = [m = s.layer](const Tensor& x) {
          if (auto l = std::dynamic_pointer_cast<LinearReLUImpl>(m)) return l->forward(x);
          return std::static_pointer_cast<nn::LinearImpl>(m)->forward(x);
        };
      }
      steps.push_back({s.name, s.layer, forward});
      if (s.output_observer) current = observed_params(s.output_observer, s.name);
    }
  }
  if (quantized) steps.push_back(step_of("", std::make_shared<DeQuantizeImpl>()));
  QuantizedModel out(std::make_shared<QuantizedModelImpl>(std::move(steps)));
  out->eval();
  return out;
}

QuantizedModel quantize_dynamic(const nn::Sequential& model, const QConfigMapping& mapping) {
  std::vector<QuantizedModelImpl::Step> steps;
  for (const Layer& layer : detail::fused_layers(model)) {
    bool relu = false;
    auto linear = linear_of(layer.module, &relu);
    std::optional<QConfig> q = mapping.qconfig_for(layer.name, layer.module->type_name());
    if (linear && q) {
      steps.push_back(step_of(layer.name, std::make_shared<DynamicQuantizedLinearImpl>(
                                              quantized_weight(*q, linear->weight, layer.name),
                                              bias_of(linear->bias), relu)));
    } else {
      steps.push_back({layer.name, layer.module, layer.forward});
    }
  }
  return QuantizedModel(std::make_shared<QuantizedModelImpl>(std::move(steps)));
}

QuantizedModel quantize_weights(const nn::Sequential& model, const WeightOnlyOptions& options,
                                const QConfigMapping& mapping) {
  std::vector<QuantizedModelImpl::Step> steps;
  for (const Layer& layer : detail::fused_layers(model)) {
    bool relu = false;
    auto linear = linear_of(layer.module, &relu);
    if (linear && mapping.qconfig_for(layer.name, layer.module->type_name())) {
      LOOM_CHECK(linear->options.in_features() % options.group_size == 0, kWhat, "layer '",
                 layer.name, "': group_size ", options.group_size, " does not divide its ",
                 linear->options.in_features(), " in_features");
      steps.push_back(
          step_of(layer.name, std::make_shared<WeightOnlyLinearImpl>(
                                  linear->weight, bias_of(linear->bias), relu, options)));
    } else {
      steps.push_back({layer.name, layer.module, layer.forward});
    }
  }
  return QuantizedModel(std::make_shared<QuantizedModelImpl>(std::move(steps)));
}

}  // namespace loom::quantization
