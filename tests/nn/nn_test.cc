// loom::nn: registration and naming, initialisation, each layer's forward against
// hand-computed values, train/eval, to(dtype), zero_grad, the state dict and its
// refusals, and the losses.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "../frontend/frontend_test_util.h"
#include "loom/loom.h"
#include "loom/nn.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class NN : public test::LoadedRuntimeTest {};

std::vector<std::string> names(const nn::NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [n, t] : named) out.push_back(n);
  return out;
}

void expect_near(const std::vector<double>& actual, const std::vector<double>& expected,
                 double tol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tol) << i;
}

TEST_F(NN, LinearRegistersWeightAndBiasWithPyTorchsInitBounds) {
  manual_seed(0);
  nn::Linear fc(4, 3);
  EXPECT_EQ(names(fc->named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(fc->weight.sizes()[0], 3);
  EXPECT_EQ(fc->weight.sizes()[1], 4);
  EXPECT_TRUE(fc->weight.requires_grad());
  EXPECT_TRUE(fc->weight.is_leaf());
  for (double v : values(fc->weight)) EXPECT_LE(std::abs(v), 0.5);  // 1/sqrt(4)
  for (double v : values(fc->bias)) EXPECT_LE(std::abs(v), 0.5);
  manual_seed(0);
  nn::Linear again(4, 3);
  EXPECT_EQ(values(again->weight), values(fc->weight));
  nn::Linear no_bias(nn::LinearOptions(4, 3).bias(false));
  EXPECT_EQ(names(no_bias->named_parameters()), (std::vector<std::string>{"weight"}));
  EXPECT_FALSE(no_bias->bias.defined());
}

TEST_F(NN, LinearComputesXWtPlusB) {
  nn::Linear fc(2, 1);
  fc->load_state_dict({{"weight", tensor({2.0, -1.0}).view({1, 2})}, {"bias", tensor({0.5})}});
  EXPECT_EQ(values(fc(tensor({3.0, 4.0}).view({1, 2}))), (std::vector<double>{2.5}));
  expect_error(
      [&] {
        fc(tensor({1.0, 2.0, 3.0}).view({1, 3}));
      },
      "nn::Linear", {"in_features 2", "[1, 3]"});
}

TEST_F(NN, SequentialNamesItsLayersByIndexAndPrints) {
  nn::Sequential net(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  EXPECT_EQ(names(net->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(net->size(), 3u);
  EXPECT_EQ(net(zeros({5, 3})).sizes()[1], 2);
  std::ostringstream s;
  s << *net;
  EXPECT_EQ(s.str(),
            "Sequential(\n"
            "  (0): Linear(in_features=3, out_features=4, bias=true)\n"
            "  (1): ReLU()\n"
            "  (2): Linear(in_features=4, out_features=2, bias=true)\n"
            ")");
  EXPECT_NE(net->ptr<nn::LinearImpl>(0), nullptr);
  expect_error([&] { net->ptr<nn::LinearImpl>(1); }, "nn::Sequential", "is a ReLU");
  expect_error([&] { (*net)[3]; }, "nn::Sequential", "out of range");
}

TEST_F(NN, NestedModulesGetDottedNamesAndShareTrainingMode) {
  struct Net : nn::Module {
    Net() : Module("Net") {
      features = register_module("features", nn::Sequential(nn::Conv2d(1, 2, 3), nn::ReLU()));
      head = register_module("head", nn::Linear(2, 2));
      scale = &register_buffer("scale", ones({1}));
    }
    nn::Sequential features{nullptr};
    nn::Linear head{nullptr};
    Tensor* scale;
  };
  auto net = std::make_shared<Net>();
  EXPECT_EQ(names(net->state_dict()),
            (std::vector<std::string>{"features.0.weight", "features.0.bias", "head.weight",
                                      "head.bias", "scale"}));
  EXPECT_EQ(net->named_modules().size(), 5u);  // Net, features, conv, relu, head
  net->eval();
  EXPECT_FALSE(net->head->is_training());
  net->train();
  EXPECT_TRUE(net->features->is_training());
  expect_error([&] { net->register_parameter("head", zeros({1})); }, "Net", "taken");
  expect_error([&] { net->register_buffer("a.b", zeros({1})); }, "Net", "without '.'");
}

TEST_F(NN, Conv2dShapesInitAndChecks) {
  manual_seed(1);
  nn::Conv2d conv(nn::Conv2dOptions(4, 6, 3).padding(1).groups(2));
  EXPECT_EQ(conv->weight.sizes()[1], 2);  // in / groups
  const double bound = 1.0 / std::sqrt(2.0 * 9.0);
  for (double v : values(conv->weight)) EXPECT_LE(std::abs(v), bound);
  Tensor y = conv(zeros({2, 4, 5, 5}));
  EXPECT_EQ(std::vector<int64_t>(y.sizes().begin(), y.sizes().end()),
            (std::vector<int64_t>{2, 6, 5, 5}));
  expect_error([] { nn::Conv2d(nn::Conv2dOptions(3, 6, 3).groups(2)); }, "nn::Conv2d",
               "divisible by groups 2");
  expect_error([&] { conv(zeros({2, 3, 5, 5})); }, "nn::Conv2d", "[N, 4, H, W]");
}

TEST_F(NN, BatchNormUpdatesRunningStatsInTrainingAndUsesThemInEval) {
  nn::BatchNorm1d bn(nn::BatchNormOptions(1));
  Tensor x = tensor({1.0, 3.0}).view({2, 1});
  Tensor y = bn(x);
  expect_near(values(y), {-1.0, 1.0}, 1e-4);              // biased variance 1
  expect_near(values(bn->running_mean), {0.2});           // 0.9 * 0 + 0.1 * 2
  expect_near(values(bn->running_var), {0.9 + 0.1 * 2});  // unbiased variance 2
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_FALSE(bn->running_mean.requires_grad());
  bn->eval();
  expect_near(values(bn(x)),
              {(1.0 - 0.2) / std::sqrt(1.1 + 1e-5), (3.0 - 0.2) / std::sqrt(1.1 + 1e-5)}, 1e-4);
  expect_error([&] { bn(zeros({2, 1, 1, 1})); }, "nn::BatchNorm1d", "2D or 3D");
}

TEST_F(NN, DropoutIsTheIdentityInEvalAndScalesInTraining) {
  nn::Dropout drop(0.5);
  Tensor x = ones({1000});
  for (double v : values(drop(x))) EXPECT_TRUE(v == 0.0 || v == 2.0);
  drop->eval();
  EXPECT_EQ(values(drop(x)), values(x));
  expect_error([] { nn::Dropout(1.5); }, "nn::Dropout", "[0, 1]");
}

TEST_F(NN, EmbeddingPaddingRowIsZero) {
  nn::Embedding emb(nn::EmbeddingOptions(5, 3).padding_idx(-1));
  EXPECT_EQ(*emb->options.padding_idx(), 4);
  EXPECT_EQ(values(emb(tensor({int64_t{4}}))), (std::vector<double>{0, 0, 0}));
}

TEST_F(NN, LossesMatchHandComputedValues) {
  Tensor logits = tensor({0.0, 0.0, 1.0, 3.0}).view({2, 2});
  Tensor target = tensor({int64_t{0}, int64_t{1}});
  const double l0 = std::log(2.0), l1 = std::log(1.0 + std::exp(-2.0));
  expect_near(values(nn::CrossEntropyLoss()(logits, target)), {(l0 + l1) / 2});
  // Label smoothing 0.2 over 2 classes: targets (0.9, 0.1) and (0.1, 0.9).
  const double s1 = 0.1 * (std::log(1 + std::exp(2.0))) + 0.9 * l1;
  expect_near(values(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(0.2))(
                  logits, target)),
              {(l0 + s1) / 2});
  Tensor ignored = tensor({int64_t{0}, int64_t{-100}});
  expect_near(values(nn::CrossEntropyLoss()(logits, ignored)), {l0});
  expect_near(values(nn::MSELoss()(tensor({1.0, 2.0}), tensor({0.0, 0.0}))), {2.5});
  expect_near(values(nn::L1Loss(nn::Reduction::Sum)(tensor({1.0, -2.0}), tensor({0.0, 0.0}))),
              {3.0});
  expect_near(values(nn::BCEWithLogitsLoss()(tensor({0.0}), tensor({1.0}))), {std::log(2.0)});
  expect_near(values(nn::NLLLoss()(logits, target)), {(-0.0 - 3.0) / 2});
  expect_error([] { nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(2)); },
               "nn::CrossEntropyLoss", "[0, 1]");
}

TEST_F(NN, ToFloat64KeepsRequiresGradAndIntegerBuffers) {
  nn::Sequential net(nn::Linear(2, 2), nn::BatchNorm1d(nn::BatchNormOptions(2)));
  net->to(ScalarType::Float64);
  nn::Linear fc = nn::Linear(net->ptr<nn::LinearImpl>(0));
  EXPECT_EQ(fc->weight.dtype(), ScalarType::Float64);  // seen through the member
  EXPECT_TRUE(fc->weight.requires_grad());
  auto bn = net->ptr<nn::BatchNorm1dImpl>(1);
  EXPECT_EQ(bn->running_mean.dtype(), ScalarType::Float64);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), ScalarType::Int64);
  EXPECT_EQ(net(zeros({3, 2}, TensorOptions().dtype(ScalarType::Float64))).dtype(),
            ScalarType::Float64);
}

TEST_F(NN, ZeroGradClearsEveryGradient) {
  nn::Linear fc(2, 1);
  fc(ones({1, 2})).sum().backward();
  EXPECT_TRUE(fc->weight.grad().defined());
  fc->zero_grad(false);
  EXPECT_EQ(values(fc->weight.grad()), (std::vector<double>{0, 0}));
  fc->zero_grad();
  EXPECT_FALSE(fc->weight.grad().defined());
}

TEST_F(NN, LoadStateDictRefusesBadDictsAndLeavesTheModelUnchanged) {
  nn::Linear fc(2, 1);
  std::vector<double> before = values(fc->weight);
  expect_error(
      [&] {
        fc->load_state_dict({{"bias", tensor({9.0})}, {"weight", zeros({2, 1})}});
      },
      "load_state_dict", {"'weight'", "expected shape [1, 2], found [2, 1]"});
  EXPECT_EQ(values(fc->weight), before);
  EXPECT_NE(values(fc->bias), (std::vector<double>{9.0}));
  expect_error(
      [&] {
        fc->load_state_dict({{"bias", tensor({9.0})}});
      },
      "load_state_dict", "missing key 'weight'");
  expect_error(
      [&] {
        fc->load_state_dict({{"weight", zeros({1, 2}, TensorOptions().dtype(ScalarType::Float64))},
                             {"bias", tensor({9.0})}});
      },
      "load_state_dict", "expected dtype float32, found float64");
  expect_error(
      [&] {
        fc->load_state_dict(
            {{"weight", zeros({1, 2})}, {"bias", tensor({9.0})}, {"extra", zeros({1})}});
      },
      "load_state_dict", "unexpected key 'extra'");
  fc->load_state_dict({{"bias", tensor({9.0})}, {"extra", zeros({1})}}, /*strict=*/false);
  EXPECT_EQ(values(fc->bias), (std::vector<double>{9.0}));
  EXPECT_EQ(values(fc->weight), before);
  EXPECT_TRUE(fc->bias.is_leaf());
}

TEST_F(NN, InitFunctionsFollowTheirFormulas) {
  Tensor w = empty({10, 20});
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(empty({8, 4, 3, 3})),
            (std::pair<int64_t, int64_t>{36, 72}));
  EXPECT_NEAR(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3.0), 1e-12);
  nn::init::xavier_uniform_(w);
  for (double v : values(w)) EXPECT_LE(std::abs(v), std::sqrt(6.0 / 30.0));
  nn::init::constant_(w, 0.25);
  for (double v : values(w)) EXPECT_EQ(v, 0.25);
  expect_error([&] { nn::init::kaiming_uniform_(w, 0, "fan_middle"); }, "nn::init", "fan_middle");
  expect_error([] { nn::init::calculate_fan_in_and_fan_out(empty({3})); }, "nn::init",
               "at least 2 dimensions");
}

}  // namespace
}  // namespace loom
