// Dynamic loss scaling (loom/grad_scaler.h): scaled gradients unscaled before the step, a
// step skipped and the scale backed off on inf, growth after clean intervals, the call
// order PyTorch enforces, float16 gradients refused, state for checkpoints, bad options.
#include <gtest/gtest.h>

#include <limits>

#include "../frontend/frontend_test_util.h"
#include "loom/optim.h"

namespace loom {
namespace {

using test::expect_error;

class GradScalerTest : public test::LoadedRuntimeTest {};

double max_difference(const Tensor& a, const Tensor& b) {
  return (a - b).abs().max().item<double>();
}

TEST_F(GradScalerTest, StepsWithTheUnscaledGradientsAndGrowsTheScale) {
  Tensor w = randn({5});
  w.requires_grad_();
  Tensor reference = w.detach().clone();
  const Tensor x = randn({5});
  optim::SGD sgd({w}, optim::SGDOptions(0.1));
  amp::GradScaler scaler({.init_scale = 1024, .growth_interval = 1});
  Tensor scaled = scaler.scale((x * w).sum());
  scaled.backward();
  EXPECT_LT(max_difference(w.grad(), x * 1024), 1e-3);
  EXPECT_TRUE(scaler.step(sgd));
  EXPECT_LT(max_difference(w.detach(), reference - 0.1 * x), 1e-6);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 2048);
}

TEST_F(GradScalerTest, AnInfSkipsTheStepAndBacksTheScaleOff) {
  Tensor w = randn({3});
  w.requires_grad_();
  const Tensor before = w.detach().clone();
  optim::SGD sgd({w}, optim::SGDOptions(0.1));
  amp::GradScaler scaler({.init_scale = 256});
  Tensor x = ones({3});
  x.select(0, 1).fill_(std::numeric_limits<float>::infinity());
  scaler.scale((x * w).sum()).backward();
  EXPECT_FALSE(scaler.step(sgd));
  EXPECT_EQ(max_difference(w.detach(), before), 0);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 128);
}

TEST_F(GradScalerTest, CallsOutOfOrderAndFloat16GradientsAreRefused) {
  Tensor w = randn({3});
  w.requires_grad_();
  optim::SGD sgd({w}, optim::SGDOptions(0.1));
  amp::GradScaler scaler;
  expect_error([&] { scaler.update(); }, "amp::GradScaler", {"no inf checks were recorded"});
  scaler.scale(w.sum()).backward();
  scaler.unscale_(sgd);
  expect_error([&] { scaler.unscale_(sgd); }, "amp::GradScaler",
               {"unscale_() has already been called on this optimizer since the last update()"});
  scaler.step(sgd);
  expect_error([&] { scaler.step(sgd); }, "amp::GradScaler",
               {"step() has already been called since the last update()"});
  scaler.update();

  Tensor half = randn({3}).to(ScalarType::Float16);
  half.requires_grad_();
  optim::SGD half_sgd({half}, optim::SGDOptions(0.1));
  scaler.scale(half.to(ScalarType::Float32).sum()).backward();
  expect_error([&] { scaler.step(half_sgd); }, "amp::GradScaler",
               {"attempting to unscale float16 gradients"});
}

TEST_F(GradScalerTest, StateRoundTripsAndBadStateOrOptionsAreRefused) {
  amp::GradScaler a({.init_scale = 512, .growth_interval = 3});
  Tensor w = randn({2});
  w.requires_grad_();
  optim::SGD sgd({w}, optim::SGDOptions(0.1));
  a.scale(w.sum()).backward();
  a.step(sgd);
  a.update();
  std::map<std::string, double> state = a.state_dict();
  EXPECT_EQ(state.at("scale"), 512);
  EXPECT_EQ(state.at("growth_tracker"), 1);
  amp::GradScaler b;
  b.load_state_dict(state);
  EXPECT_EQ(b.state_dict(), state);

  std::map<std::string, double> missing = state;
  missing.erase("growth_tracker");
  expect_error([&] { b.load_state_dict(missing); }, "amp::GradScaler",
               {"the state has no 'growth_tracker'"});
  std::map<std::string, double> bad = state;
  bad["growth_tracker"] = 7;
  expect_error([&] { b.load_state_dict(bad); }, "amp::GradScaler",
               {"growth_tracker in [0, 3), found 3 and 7"});
  EXPECT_EQ(b.state_dict(), state);  // a refused state changes nothing

  expect_error([] { amp::GradScaler({.init_scale = 0}); }, "amp::GradScaler",
               {"expected a positive finite init_scale, found 0"});
  expect_error([] { amp::GradScaler({.backoff_factor = 1.5}); }, "amp::GradScaler",
               {"expected 0 < backoff_factor < 1, found 1.5"});
}

TEST_F(GradScalerTest, DisabledItPassesThrough) {
  Tensor w = randn({2});
  w.requires_grad_();
  optim::SGD sgd({w}, optim::SGDOptions(0.1));
  amp::GradScaler scaler({.enabled = false});
  Tensor loss = w.sum();
  EXPECT_EQ(scaler.scale(loss).impl(), loss.impl());
  loss.backward();
  EXPECT_TRUE(scaler.step(sgd));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
}

}  // namespace
}  // namespace loom
