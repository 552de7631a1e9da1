// The debugger of loom/quantization.h: per-layer SQNR between a float model and its
// quantized model on the same input, and the static flow that keeps the worst layers in
// float until an accuracy budget holds.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "fused_layers.h"
#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/ops/generated/ops.h"
#include "loom/quantization.h"

namespace loom::quantization {

std::vector<LayerReport> compare_layers(const nn::Sequential& float_model,
                                        const QuantizedModel& quantized, const Tensor& input) {
  LOOM_CHECK(!quantized.is_empty(), "quantization", "compare_layers: the quantized model is empty");
  NoGradGuard no_grad;
  // The float outputs of every layer of the fused model, by the name the quantized
  // layers carry (fusion is what the flows quantize, so outputs line up).
  std::map<std::string, Tensor> float_out;
  std::map<std::string, std::string> types;
  Tensor f = input;
  for (const detail::Layer& layer : detail::fused_layers(float_model)) {
    f = layer.forward(f);
    float_out[layer.name] = f;
    types[layer.name] = layer.module->type_name();
  }
  std::vector<LayerReport> reports;
  Tensor h = input;
  for (const QuantizedModelImpl::Step& s : quantized->steps()) {
    h = s.forward(h);
    if (s.source.empty() || !float_out.contains(s.source)) continue;
    // Pass-through layers (pooling, flatten) only carry their input's error along.
    const std::string& type = s.layer->type_name();
    if (type == "ReLU" || type == "MaxPool2d" || type == "Flatten" || type == "Identity" ||
        type == "Dropout") {
      continue;
    }
    const Tensor q = is_quantized(h.dtype()) ? h.dequantize() : h.to(ScalarType::Float32);
    const Tensor reference = float_out[s.source].to(ScalarType::Float32);
    if (!std::ranges::equal(q.sizes(), reference.sizes())) continue;
    const double signal = (reference * reference).sum().item<double>();
    const double noise = ((reference - q) * (reference - q)).sum().item<double>();
    LayerReport r;
    r.layer = s.source;
    r.type = types[s.source];
    r.sqnr_db = noise == 0 ? std::numeric_limits<double>::infinity()
                           : 10 * std::log10(std::max(signal, 1e-30) / noise);
    r.max_error = (reference - q).abs().max().item<double>();
    reports.push_back(r);
  }
  std::sort(reports.begin(), reports.end(),
            [](const LayerReport& a, const LayerReport& b) { return a.sqnr_db < b.sqnr_db; });
  return reports;
}

AutoQuantizeResult quantize_within_budget(
    const nn::Sequential& model, QConfigMapping mapping,
    const std::function<void(Prepared&)>& calibrate,
    const std::function<double(const std::function<Tensor(const Tensor&)>&)>& evaluate,
    const Tensor& probe, double budget) {
  LOOM_CHECK(budget >= 0, "quantization", "the accuracy budget must be non-negative, found ",
             budget);
  AutoQuantizeResult result;
  result.float_accuracy = evaluate([&](const Tensor& x) { return model->forward(x); });
  while (true) {
    Prepared prepared = prepare(model, mapping);
    prepared->eval();
    calibrate(prepared);
    result.model = convert(prepared);
    result.quantized_accuracy = evaluate([&](const Tensor& x) { return result.model(x); });
    if (result.float_accuracy - result.quantized_accuracy <= budget) break;
    // Keep the worst layer still quantized in float, and try again.
    std::optional<std::string> worst;
    for (const LayerReport& r : compare_layers(model, result.model, probe)) {
      if (std::find(result.float_layers.begin(), result.float_layers.end(), r.layer) ==
          result.float_layers.end()) {
        worst = r.layer;
        break;
      }
    }
    if (!worst) break;  // every layer is float already
    result.float_layers.push_back(*worst);
    mapping.set_module_name(*worst, std::nullopt);
  }
  return result;
}

}  // namespace loom::quantization
