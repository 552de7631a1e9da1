// `loom quantize` (quantize.h): loads the checkpoint into its model, quantizes it with
// loom/quantization.h's flow for --method, and measures both models on the test set.
#include "quantize.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "classifier.h"
#include "loom/checkpoint.h"
#include "loom/core/error.h"
#include "loom/loom.h"
#include "loom/optim.h"
#include "loom/quantization.h"
#include "loom/safetensors.h"

namespace loom::cli {
namespace {

constexpr const char* kWhat = "loom quantize";
namespace q = quantization;
using Model = std::function<Tensor(const Tensor&)>;

int64_t bytes_of(const nn::NamedTensors& tensors) {
  int64_t total = 0;
  for (const auto& [name, t] : tensors)
    total += t.numel() * static_cast<int64_t>(element_size(t.dtype()));
  return total;
}

int64_t model_bytes(const nn::Module& m) {
  return bytes_of(m.named_parameters()) + bytes_of(m.named_buffers());
}

// The median of 25 timed calls after 5 warm-up calls, in milliseconds.
double latency_ms(const Model& model, const Tensor& input) {
  NoGradGuard no_grad;
  for (int i = 0; i < 5; ++i) model(input);
  std::vector<double> times;
  for (int i = 0; i < 25; ++i) {
    const auto start = std::chrono::steady_clock::now();
    model(input);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

// Weight-only quantization's groups: 128 where every Linear's in_features allows it, else
// 32, with the Linear layers whose in_features 32 does not divide kept float (the MLP's
// 784-feature input layer).
std::pair<int64_t, q::QConfigMapping> weight_only_plan(const nn::Sequential& model) {
  q::QConfigMapping mapping = q::QConfigMapping().set_global(q::default_dynamic_qconfig());
  bool all_128 = true;
  for (size_t i = 0; i < model->size(); ++i) {
    if (auto l = std::dynamic_pointer_cast<nn::LinearImpl>((*model)[i])) {
      all_128 = all_128 && l->options.in_features() % 128 == 0;
      if (l->options.in_features() % 32 != 0)
        mapping.set_module_name(std::to_string(i), std::nullopt);
    }
  }
  return {all_128 ? 128 : 32, mapping};
}

}  // namespace

int run_quantize(const QuantizeOptions& o) {
  LOOM_CHECK(!o.model_file.empty() && o.model_file != "cnn" && o.model_file != "mlp", kWhat,
             "--model FILE is required: a `loom train --save` checkpoint (--arch names the model)");
  LOOM_CHECK(o.method == "static" || o.method == "dynamic" || o.method == "qat" ||
                 o.method == "weight-only",
             kWhat, "--method: expected static, dynamic, qat or weight-only, found '", o.method,
             "'");
  LOOM_CHECK(o.calibrate > 0, kWhat, "--calibrate: expected a positive number of images, found ",
             o.calibrate);
  manual_seed(o.seed);
  nn::Sequential net = make_classifier(o.arch, kWhat);
  load_checkpoint(o.model_file, *net);
  net->eval();
  data::TensorDataset train_set =
      data::load_mnist_format(o.data_dir, data::Split::Train, kMean, kStd);
  data::TensorDataset test_set =
      data::load_mnist_format(o.data_dir, data::Split::Test, kMean, kStd);
  data::DataLoaderOptions test_options;
  test_options.batch_size = 1000;
  data::DataLoader test_loader(test_set, test_options);
  const Model float_model = [&](const Tensor& x) { return net(x); };
  const double float_accuracy = accuracy_of(float_model, test_loader);

  const int64_t calibration_count = std::min<int64_t>(o.calibrate, train_set.size());
  const Tensor calibration = train_set.data().narrow(0, 0, calibration_count);
  const q::QConfigMapping mapping = q::QConfigMapping().set_global(q::default_qconfig());
  q::QuantizedModel quantized{nullptr};
  if (o.method == "static") {
    q::Prepared prepared = q::prepare(net, mapping);
    NoGradGuard no_grad;
    for (int64_t at = 0; at < calibration_count; at += 64) {
      prepared(calibration.narrow(0, at, std::min<int64_t>(64, calibration_count - at)));
    }
    quantized = q::convert(prepared);
  } else if (o.method == "qat") {
    // One epoch of fine-tuning through fake quantization, from the float weights.
    q::Prepared prepared =
        q::prepare_qat(net, q::QConfigMapping().set_global(q::default_qat_qconfig()));
    optim::Adam adam(prepared->parameters(), optim::AdamOptions(1e-4));
    nn::CrossEntropyLoss criterion;
    data::DataLoaderOptions train_options;
    train_options.batch_size = 64;
    train_options.shuffle = true;
    train_options.seed = o.seed;
    data::DataLoader train_loader(train_set, train_options);
    for (const data::Example& batch : train_loader) {
      adam.zero_grad();
      criterion(prepared(batch.data), batch.target).backward();
      adam.step();
    }
    prepared->eval();
    quantized = q::convert(prepared);
  } else if (o.method == "dynamic") {
    quantized =
        q::quantize_dynamic(net, q::QConfigMapping().set_global(q::default_dynamic_qconfig()));
  } else {
    auto [group_size, plan] = weight_only_plan(net);
    quantized = q::quantize_weights(net, {.bits = 4, .group_size = group_size}, plan);
  }
  const Model quantized_model = [&](const Tensor& x) { return quantized(x); };
  const double quantized_accuracy = accuracy_of(quantized_model, test_loader);

  const Tensor one = test_set.data().narrow(0, 0, 1), batch = test_set.data().narrow(0, 0, 64);
  nlohmann::ordered_json r;
  r["method"] = o.method;
  r["arch"] = o.arch;
  r["float_accuracy"] = float_accuracy;
  r["quantized_accuracy"] = quantized_accuracy;
  r["float_bytes"] = model_bytes(*net);
  r["quantized_bytes"] = model_bytes(*quantized);
  r["float_ms_b1"] = latency_ms(float_model, one);
  r["quantized_ms_b1"] = latency_ms(quantized_model, one);
  r["float_ms_b64"] = latency_ms(float_model, batch);
  r["quantized_ms_b64"] = latency_ms(quantized_model, batch);
  r["float_layers"] = quantized->float_layers();
  if (!o.save.empty()) {
    nn::NamedTensors tensors = quantized->named_parameters();
    for (auto& entry : quantized->named_buffers()) tensors.push_back(entry);
    std::vector<std::pair<std::string, Tensor>> list(tensors.begin(), tensors.end());
    save_safetensors(o.save, list,
                     {{"format", "loom-quantized-1"}, {"arch", o.arch}, {"method", o.method}});
  }
  if (o.json) {
    std::printf("%s\n", r.dump().c_str());
    return 0;
  }
  std::printf("model: %s from %s; method %s (calibration: %lld images)\n", o.arch.c_str(),
              o.model_file.c_str(), o.method.c_str(), static_cast<long long>(calibration_count));
  std::printf("test accuracy: float %.2f%%, quantized %.2f%%\n", 100 * float_accuracy,
              100 * quantized_accuracy);
  std::printf("model bytes: float %lld, quantized %lld (%.2fx smaller)\n",
              static_cast<long long>(r["float_bytes"].get<int64_t>()),
              static_cast<long long>(r["quantized_bytes"].get<int64_t>()),
              r["float_bytes"].get<double>() / r["quantized_bytes"].get<double>());
  std::printf(
      "latency batch 1: float %.3f ms, quantized %.3f ms; batch 64: float %.3f ms, quantized %.3f "
      "ms\n",
      r["float_ms_b1"].get<double>(), r["quantized_ms_b1"].get<double>(),
      r["float_ms_b64"].get<double>(), r["quantized_ms_b64"].get<double>());
  if (!quantized->float_layers().empty()) {
    std::string names;
    for (const std::string& n : quantized->float_layers()) names += (names.empty() ? "" : ", ") + n;
    std::printf("layers kept float: %s\n", names.c_str());
  }
  if (!o.save.empty()) std::printf("quantized model: %s\n", o.save.c_str());
  return 0;
}

}  // namespace loom::cli
