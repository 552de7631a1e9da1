// The flows of loom/quantization.h on small models: observers' parameters (PyTorch's
// formulas), fusion with BatchNorm folding, static quantization (prepare, calibrate,
// convert) with layers kept float by the mapping, quantization-aware training, dynamic
// and weight-only quantization, and the debugger's per-layer SQNR and budget search.
#include <gtest/gtest.h>

#include <cmath>

#include "../frontend/frontend_test_util.h"
#include "loom/nn.h"
#include "loom/optim.h"
#include "loom/quantization.h"

namespace loom {
namespace {

namespace q = quantization;
using test::expect_error;

class QuantizationFlows : public test::LoadedRuntimeTest {
 protected:
  void SetUp() override { manual_seed(3); }
};

nn::Sequential small_cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Flatten(), nn::Linear(4 * 4 * 4, 16), nn::ReLU(),
                        nn::Linear(16, 5));
}

double relative_error(const Tensor& got, const Tensor& expected) {
  return (got - expected).abs().max().item<double>() / expected.abs().max().item<double>();
}

TEST_F(QuantizationFlows, ObserversChooseParametersAsPyTorchDoes) {
  Tensor x = tensor({-1.0, 0.5, 3.0});
  q::MinMaxObserverImpl affine;
  affine.forward(x);
  q::QParams p = affine.calculate_qparams();
  EXPECT_NEAR(p.scale, 4.0 / 255, 1e-12);
  EXPECT_EQ(p.zero_point, 64);  // 0 - round(-1 / scale) = round(63.75)
  // reduce_range: one bit fewer, as PyTorch's x86 qconfig on CPUs without VNNI.
  q::MinMaxObserverImpl reduced;
  reduced.set_reduce_range(true);
  reduced.forward(x);
  EXPECT_NEAR(reduced.calculate_qparams().scale, 4.0 / 127, 1e-12);
  EXPECT_EQ(reduced.calculate_qparams().zero_point, 32);  // round(31.75)
  q::MinMaxObserverImpl symmetric(ScalarType::QInt8, q::QScheme::PerTensorSymmetric);
  symmetric.forward(x);
  EXPECT_NEAR(symmetric.calculate_qparams().scale, 3.0 / 127.5, 1e-12);
  EXPECT_EQ(symmetric.calculate_qparams().zero_point, 0);
  q::MovingAverageMinMaxObserverImpl moving(0.5);
  moving.forward(tensor({0.0, 2.0}));
  moving.forward(tensor({0.0, 4.0}));
  EXPECT_NEAR(moving.calculate_qparams().scale, 3.0 / 255, 1e-12);  // max 2 + 0.5 * (4 - 2)
  q::PerChannelMinMaxObserverImpl channels;
  channels.forward(tensor({1.0, -2.0, 0.5, 0.25}).reshape({2, 2}));
  q::QParams pc = channels.calculate_qparams();
  EXPECT_TRUE(pc.per_channel);
  EXPECT_EQ(test::values(pc.scales), (std::vector<double>{2 / 127.5, 0.5 / 127.5}));
  // The L2 search clips an outlier when the error it saves on the bulk is larger than the
  // outlier's own: a million values in [-1, 1] and one at 30 (min/max keeps all); a
  // percentile clips by count.
  Tensor data = cat({rand({1000000}) * 2 - 1, tensor({30.0})});
  const double full = data.max().item<double>() - data.min().item<double>();
  q::HistogramObserverImpl histogram;
  histogram.forward(data);
  const double searched = histogram.calculate_qparams().scale * 255;
  EXPECT_LT(searched, 0.5 * full) << searched << " of " << full;
  q::PercentileObserverImpl percentile(99.9);
  percentile.forward(data);
  EXPECT_LT(percentile.calculate_qparams().scale * 255, 2.1);
  q::MinMaxObserverImpl unused;
  expect_error([&] { unused.calculate_qparams(); }, "quantization", "has observed nothing");
}

TEST_F(QuantizationFlows, FusionFoldsBatchNormAndKeepsTheOutput) {
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(2, 3, 3).padding(1)),
                       nn::BatchNorm2d(nn::BatchNormOptions(3)), nn::ReLU(), nn::Flatten(),
                       nn::Linear(3 * 5 * 5, 4), nn::ReLU());
  // Statistics that are not the identity.
  for (int i = 0; i < 3; ++i) model(randn({8, 2, 5, 5}) * 2 + 1);
  model->eval();
  nn::Sequential fused = q::fuse_modules(model);
  EXPECT_EQ(fused->size(), 3u);
  EXPECT_EQ((*fused)[0]->type_name(), "ConvReLU2d");
  EXPECT_EQ((*fused)[2]->type_name(), "LinearReLU");
  Tensor x = randn({2, 2, 5, 5});
  EXPECT_LT(relative_error(fused(x), model(x)), 1e-5);
}

TEST_F(QuantizationFlows, StaticQuantizationIsCloseToTheFloatModel) {
  nn::Sequential model = small_cnn();
  model->eval();
  q::Prepared prepared = q::prepare(model, q::QConfigMapping().set_global(q::default_qconfig()));
  Tensor calibration = randn({64, 1, 8, 8});
  prepared(calibration);
  q::QuantizedModel quantized = q::convert(prepared);
  std::ostringstream printed;
  printed << *quantized;
  EXPECT_NE(printed.str().find("QuantizedConvReLU2d"), std::string::npos) << printed.str();
  EXPECT_NE(printed.str().find("QuantizedLinearReLU"), std::string::npos) << printed.str();
  Tensor x = randn({8, 1, 8, 8});
  Tensor y = quantized(x);
  EXPECT_EQ(y.dtype(), ScalarType::Float32);
  EXPECT_LT(relative_error(y, model(x)), 0.1);
  EXPECT_TRUE(quantized->float_layers().empty());
  // The last Linear kept float by name: dequantize before it.
  q::Prepared partial = q::prepare(
      model,
      q::QConfigMapping().set_global(q::default_qconfig()).set_module_name("6", std::nullopt));
  partial(calibration);
  q::QuantizedModel mixed = q::convert(partial);
  EXPECT_EQ(mixed->float_layers(), (std::vector<std::string>{"6"}));
  EXPECT_LT(relative_error(mixed(x), model(x)), 0.1);
  // Uncalibrated: a clear error.
  expect_error(
      [&] { q::convert(q::prepare(model, q::QConfigMapping().set_global(q::default_qconfig()))); },
      "quantization", "has observed nothing");
}

TEST_F(QuantizationFlows, QuantizationAwareTrainingTrainsThroughFakeQuantization) {
  nn::Sequential model(nn::Linear(4, 16), nn::ReLU(), nn::Linear(16, 1));
  q::Prepared qat = q::prepare_qat(model, q::QConfigMapping().set_global(q::default_qat_qconfig()));
  optim::SGD sgd(qat->parameters(), optim::SGDOptions(0.05));
  Tensor x = randn({64, 4});
  Tensor target = x.sum({1}, true);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    sgd.zero_grad();
    Tensor loss = mse_loss(qat(x), target);
    loss.backward();
    sgd.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.5) << first << " -> " << last;
  // Training changed the prepared copy, not the model it came from.
  EXPECT_GT(
      (qat->steps()[0].layer->parameters()[0] - model->parameters()[0]).abs().max().item<double>(),
      0);
  qat->eval();
  q::QuantizedModel converted = q::convert(qat);
  EXPECT_LT(mse_loss(converted(x), target).item<double>(), first * 0.6);
}

TEST_F(QuantizationFlows, DynamicAndWeightOnlyQuantizeTheLinearLayers) {
  nn::Sequential model(nn::Linear(256, 128), nn::ReLU(), nn::Linear(128, 10));
  Tensor x = randn({4, 256});
  Tensor expected = model(x);
  q::QuantizedModel dynamic =
      q::quantize_dynamic(model, q::QConfigMapping().set_global(q::default_dynamic_qconfig()));
  EXPECT_EQ(dynamic->steps()[0].layer->type_name(), "DynamicQuantizedLinear");
  EXPECT_LT(relative_error(dynamic(x), expected), 0.05);
  q::QuantizedModel int4 = q::quantize_weights(model, {.bits = 4, .group_size = 128});
  EXPECT_EQ(int4->steps()[0].layer->type_name(), "WeightOnlyLinear");
  EXPECT_LT(relative_error(int4(x), expected), 0.25);
  q::QuantizedModel int8 = q::quantize_weights(model, {.bits = 8, .group_size = 32});
  EXPECT_LT(relative_error(int8(x), expected), 0.02);
  expect_error(
      [&] {
        q::quantize_weights(nn::Sequential(nn::Linear(100, 4)), {.bits = 4, .group_size = 32});
      },
      "quantization", "group_size 32 does not divide its 100 in_features");
}

TEST_F(QuantizationFlows, TheDebuggerRanksLayersAndKeepsTheWorstFloatUntilTheBudgetHolds) {
  nn::Sequential model = small_cnn();
  model->eval();
  // A huge weight in the first Linear makes its per-channel scale coarse for one row.
  {
    NoGradGuard no_grad;
    model->ptr<nn::LinearImpl>(4)->weight.select(0, 0).fill_(0.0);
  }
  Tensor calibration = randn({64, 1, 8, 8});
  q::Prepared prepared = q::prepare(model, q::QConfigMapping().set_global(q::default_qconfig()));
  prepared(calibration);
  q::QuantizedModel quantized = q::convert(prepared);
  std::vector<q::LayerReport> reports = q::compare_layers(model, quantized, calibration);
  ASSERT_EQ(reports.size(), 3u);  // the conv, the two linears
  for (size_t i = 1; i < reports.size(); ++i) EXPECT_LE(reports[i - 1].sqnr_db, reports[i].sqnr_db);
  EXPECT_GT(reports.back().sqnr_db, 10);
  // A budget no int8 model meets keeps layers float, worst first, until it holds.
  auto evaluate = [&](const std::function<Tensor(const Tensor&)>& run) {
    return 100 - 1000 * (run(calibration) - model(calibration)).abs().mean().item<double>();
  };
  q::AutoQuantizeResult r = q::quantize_within_budget(
      model, q::QConfigMapping().set_global(q::default_qconfig()),
      [&](q::Prepared& p) { p(calibration); }, evaluate, calibration, 0.01);
  EXPECT_FALSE(r.float_layers.empty());
  EXPECT_EQ(r.float_layers[0], reports[0].layer);
  EXPECT_EQ(r.model->float_layers().size(), r.float_layers.size());
  EXPECT_TRUE(r.float_accuracy - r.quantized_accuracy <= 0.01 || r.float_layers.size() == 3);
}

}  // namespace
}  // namespace loom
