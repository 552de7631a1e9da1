// loom::optim: each optimizer's update against hand-computed steps, parameter groups and
// learning rates, parameters without gradients, option checks, and a small model that
// trains to a loss threshold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <numbers>
#include "../frontend/frontend_test_util.h"
#include "loom/loom.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class Optim : public test::LoadedRuntimeTest {};

// A scalar parameter p = 1 whose loss 2p gives the gradient 2 at every step.
struct LinearLoss {
  Tensor p = tensor({1.0}).requires_grad_();
  void backward() { (p * 2.0).sum().backward(); }
  double value() const { return p.item<double>(); }
};

template <typename Opt>
std::vector<double> run(Opt& opt, LinearLoss& loss, int steps) {
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    loss.backward();
    opt.step();
    out.push_back(loss.value());
  }
  return out;
}

void expect_near(const std::vector<double>& actual, const std::vector<double>& expected,
                 double tol = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tol) << i;
}

TEST_F(Optim, SGDPlainMomentumNesterovAndWeightDecay) {
  LinearLoss a;
  optim::SGD plain({a.p}, optim::SGDOptions(0.1));
  expect_near(run(plain, a, 2), {0.8, 0.6});
  LinearLoss b;  // buf 2 then 0.9 * 2 + 2 = 3.8
  optim::SGD momentum({b.p}, optim::SGDOptions(0.1).momentum(0.9));
  expect_near(run(momentum, b, 2), {0.8, 0.42});
  LinearLoss c;  // d = 2 + 0.9 * 2 = 3.8, then buf 3.8, d = 2 + 0.9 * 3.8 = 5.42
  optim::SGD nesterov({c.p}, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  expect_near(run(nesterov, c, 2), {0.62, 0.62 - 0.542});
  LinearLoss d;  // d = 2 + 0.5 * 1
  optim::SGD decay({d.p}, optim::SGDOptions(0.1).weight_decay(0.5));
  expect_near(run(decay, d, 1), {0.75});
  LinearLoss e;  // dampening 0.5: buf 2, then 0.9 * 2 + 0.5 * 2 = 2.8
  optim::SGD damped({e.p}, optim::SGDOptions(0.1).momentum(0.9).dampening(0.5));
  expect_near(run(damped, e, 2), {0.8, 0.52});
}

TEST_F(Optim, AdamStepsByTheLearningRateForAConstantGradient) {
  LinearLoss a;  // m_hat = 2, v_hat = 4 at every step
  optim::Adam adam({a.p}, optim::AdamOptions(0.1));
  expect_near(run(adam, a, 3), {0.9, 0.8, 0.7});
  EXPECT_EQ(adam.state(0, 0).step, 3);
  expect_near(values(adam.state(0, 0).exp_avg), {2.0 * (1 - std::pow(0.9, 3))});
  LinearLoss b;  // L2: gradient 2 + 0.5 * 1 = 2.5, still one lr step
  optim::Adam l2({b.p}, optim::AdamOptions(0.1).weight_decay(0.5));
  expect_near(run(l2, b, 1), {0.9});
  LinearLoss c;  // decoupled: 1 * (1 - 0.1 * 0.5) - 0.1
  optim::AdamW adamw({c.p}, optim::AdamOptions(0.1).weight_decay(0.5));
  expect_near(run(adamw, c, 1), {0.85});
  LinearLoss d;
  optim::Adam ams({d.p}, optim::AdamOptions(0.1).amsgrad(true));
  expect_near(run(ams, d, 2), {0.9, 0.8});
}

// capturable(true): the step count in a float64 tensor, the bias corrections as tensor
// ops; the same updates (to rounding), the count saved and restored as an int64.
TEST_F(Optim, CapturableAdamMatchesAdamAndSavesItsStepCount) {
  for (bool amsgrad : {false, true}) {
    LinearLoss a, b;
    optim::AdamW plain({a.p}, optim::AdamOptions(0.1).amsgrad(amsgrad).weight_decay(0.5));
    optim::AdamW capturable(
        {b.p}, optim::AdamOptions(0.1).amsgrad(amsgrad).weight_decay(0.5).capturable(true));
    EXPECT_FALSE(plain.capturable());
    EXPECT_TRUE(capturable.capturable());
    expect_near(run(capturable, b, 3), run(plain, a, 3));
    EXPECT_EQ(capturable.state(0, 0).step_tensor.item<double>(), 3);
    optim::NamedTensors saved = capturable.state_dict();
    bool found = false;
    for (const auto& [key, t] : saved) {
      if (key != "state.0.0.step") continue;
      found = true;
      EXPECT_EQ(t.dtype(), ScalarType::Int64);
      EXPECT_EQ(t.item<double>(), 3);
    }
    EXPECT_TRUE(found);
    const uint64_t generation = capturable.generation();
    capturable.load_state_dict(plain.state_dict());
    EXPECT_GT(capturable.generation(), generation);  // a compiled step captures again
    expect_near(run(capturable, b, 1), run(plain, a, 1));
    EXPECT_EQ(capturable.state(0, 0).step_tensor.item<double>(), 4);
  }
}

TEST_F(Optim, RMSpropPlainCenteredAndMomentum) {
  LinearLoss a;  // v = 0.01 * 4 = 0.04; p -= 0.01 * 2 / 0.2
  optim::RMSprop plain({a.p}, optim::RMSpropOptions(0.01));
  expect_near(run(plain, a, 1), {0.9});
  LinearLoss b;  // centered: avg = 0.02, v - avg^2 = 0.0396
  optim::RMSprop centered({b.p}, optim::RMSpropOptions(0.01).centered(true));
  expect_near(run(centered, b, 1), {1.0 - 0.02 / std::sqrt(0.0396)});
  LinearLoss c;  // buf = 10, then 0.5 * 10 + 2 / sqrt(0.0796)
  optim::RMSprop momentum({c.p}, optim::RMSpropOptions(0.01).momentum(0.5));
  expect_near(run(momentum, c, 2), {0.9, 0.9 - 0.01 * (5 + 2 / std::sqrt(0.99 * 0.04 + 0.04))});
}

TEST_F(Optim, GroupsHaveTheirOwnLearningRateAndGradlessParametersAreSkipped) {
  LinearLoss a, b;
  Tensor untouched = tensor({5.0}).requires_grad_();
  optim::SGD sgd(std::vector<optim::ParamGroup<optim::SGDOptions>>{
      {{a.p, untouched}, optim::SGDOptions(0.1)}, {{b.p}, optim::SGDOptions(0.2)}});
  a.backward();
  b.backward();
  sgd.step();
  EXPECT_NEAR(a.value(), 0.8, 1e-6);
  EXPECT_NEAR(b.value(), 0.6, 1e-6);
  EXPECT_EQ(untouched.item<double>(), 5.0);
  sgd.set_lr(0.5);
  EXPECT_EQ(sgd.lr(0), 0.5);
  EXPECT_EQ(sgd.lr(1), 0.5);
  EXPECT_EQ(sgd.parameters().size(), 3u);
  sgd.zero_grad();
  EXPECT_FALSE(a.p.grad().defined());
  expect_error([&] { sgd.lr(2); }, "optim::SGD", "out of range");
}

TEST_F(Optim, BadOptionsAndParametersAreRefused) {
  Tensor p = tensor({1.0}).requires_grad_();
  expect_error([&] { optim::SGD({p}, optim::SGDOptions(-1)); }, "optim::SGD", "lr >= 0");
  expect_error([&] { optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)); }, "optim::SGD",
               "Nesterov momentum needs momentum > 0");
  expect_error([&] { optim::Adam({p}, optim::AdamOptions().beta1(1.0)); }, "Adam",
               "betas in [0, 1)");
  expect_error([&] { optim::Adam({p * 2.0}); }, "Adam", "not a leaf");
  expect_error([&] { optim::RMSprop({p}, optim::RMSpropOptions().alpha(-1)); }, "optim::RMSprop",
               "alpha >= 0");
}

TEST_F(Optim, AdafactorFollowsItsUpdateForVectorsAndMatrices) {
  LinearLoss a;  // t=1: rho 0.01, alpha 0.01 * max(1e-3, 1), v = 4, u = 1 -> p = 0.99
  optim::Adafactor vec({a.p});
  expect_near(run(vec, a, 1), {0.99});
  EXPECT_EQ(vec.state(0, 0).step, 1);
  // A 2x2 matrix of ones with loss sum(2 * w): g^2 = 4 everywhere, so the factored
  // estimate is 4 * 4 / 4 = 4, u = 1, and each element moves by alpha = 0.01.
  Tensor w = ones({2, 2}).requires_grad_();
  optim::Adafactor mat({w});
  (w * 2.0).sum().backward();
  mat.step();
  expect_near(values(w), {0.99, 0.99, 0.99, 0.99});
  EXPECT_EQ(mat.state(0, 0).row_var.sizes()[1], 1);
  EXPECT_EQ(mat.state(0, 0).col_var.sizes()[0], 1);
  expect_error([&] { optim::Adafactor({w}, optim::AdafactorOptions().d(0.5)); }, "optim::Adafactor",
               "d >= 1");
}

TEST_F(Optim, SchedulersFollowTheirClosedForms) {
  Tensor p = tensor({1.0}).requires_grad_();
  optim::SGD sgd({p}, optim::SGDOptions(1.0));
  auto lrs = [&](optim::LRScheduler& s, int n) {
    std::vector<double> out{sgd.lr()};
    for (int i = 0; i < n; ++i) {
      s.step();
      out.push_back(sgd.lr());
    }
    sgd.set_lr(1.0);
    return out;
  };
  optim::StepLR step(sgd, 2, 0.5);
  expect_near(lrs(step, 4), {1, 1, 0.5, 0.5, 0.25});
  optim::MultiStepLR multi(sgd, {1, 3}, 0.1);
  expect_near(lrs(multi, 3), {1, 0.1, 0.1, 0.01});
  optim::CosineAnnealingLR cosine(sgd, 4, 0.0);
  expect_near(lrs(cosine, 4), {1, (1 + std::cos(std::numbers::pi / 4)) / 2, 0.5,
                               (1 + std::cos(3 * std::numbers::pi / 4)) / 2, 0});
  optim::LinearLR warmup(sgd, 0.25, 1.0, 3);
  expect_near(lrs(warmup, 4), {0.25, 0.5, 0.75, 1.0, 1.0});
  // OneCycle over 10 steps: 0.04 at 0, the peak 1.0 at step 2 (0.3 * 10 - 1), then down
  // to 0.04 / 1e4 at step 9; a tenth step is an error.
  optim::OneCycleLR cycle(sgd, 1.0, 10);
  std::vector<double> c = lrs(cycle, 9);
  EXPECT_NEAR(c[0], 0.04, 1e-12);
  EXPECT_NEAR(c[2], 1.0, 1e-12);
  EXPECT_NEAR(c[9], 0.04 / 1e4, 1e-12);
  EXPECT_NEAR(c[1], 0.04 + (1 - 0.04) / 2, 1e-12);
  expect_error([&] { cycle.step(); }, "optim::OneCycleLR", "total_steps is 10");
  expect_error([&] { optim::StepLR(sgd, 0); }, "optim::StepLR", "step_size > 0");
}

TEST_F(Optim, ClipGradNormAndValue) {
  Tensor a = tensor({3.0}).requires_grad_(), b = tensor({4.0}).requires_grad_();
  (a * 3.0 + b * 4.0).sum().backward();  // gradients 3 and 4: norm 5
  EXPECT_NEAR(optim::clip_grad_norm_({a, b}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(a.grad().item<double>(), 0.6, 1e-5);
  EXPECT_NEAR(b.grad().item<double>(), 0.8, 1e-5);
  EXPECT_NEAR(optim::clip_grad_norm_({a, b}, 10.0), 1.0, 1e-5);  // under the limit: kept
  EXPECT_NEAR(a.grad().item<double>(), 0.6, 1e-5);
  EXPECT_NEAR(optim::clip_grad_norm_({a, b}, 1.0, INFINITY), 0.8, 1e-5);
  optim::clip_grad_value_({a, b}, 0.7);
  EXPECT_NEAR(b.grad().item<double>(), 0.7, 1e-6);
  a.set_grad(tensor({NAN}));
  expect_error(
      [&] {
        optim::clip_grad_norm_({a, b}, 1.0, 2.0, true);
      },
      "optim::clip_grad_norm_", "not finite");
}

// Two Gaussian blobs, a small MLP and Adam: the loss must fall under 0.1.
TEST_F(Optim, AnMlpLearnsTwoBlobs) {
  manual_seed(3);
  Tensor x0 = randn({64, 2}) + tensor({2.0, 2.0});
  Tensor x1 = randn({64, 2}) - tensor({2.0, 2.0});
  Tensor x = cat({x0, x1}, 0);
  Tensor y = cat({zeros({64}, TensorOptions().dtype(ScalarType::Int64)),
                  ones({64}, TensorOptions().dtype(ScalarType::Int64))},
                 0);
  nn::Sequential net(nn::Linear(2, 16), nn::ReLU(), nn::Linear(16, 2));
  optim::Adam adam(net->parameters(), optim::AdamOptions(0.05));
  nn::CrossEntropyLoss criterion;
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    adam.zero_grad();
    Tensor loss = criterion(net(x), y);
    loss.backward();
    adam.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_GT(first, 0.3);
  EXPECT_LT(last, 0.1);
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.numel() != b.numel()) return false;
  if (a.numel() == 0) return true;  // an empty tensor's data pointer may be null
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * element_size(x.dtype())) == 0;
}

// Parameters after `steps` updates of a model (one parameter never gets a gradient) by an
// optimizer made by make(params).
template <typename Make>
std::vector<Tensor> train_steps(const Make& make, int steps) {
  manual_seed(5);
  nn::Linear big(300, 200), small(200, 3), unused(2, 2);
  std::vector<Tensor> params = big->parameters();
  for (const Tensor& p : small->parameters()) params.push_back(p);
  params.push_back(unused->weight);
  auto opt = make(params);
  Tensor x = randn({16, 300});
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    Tensor y = small(relu(big(x)));
    (y * y).mean().backward();
    opt.step();
  }
  return params;
}

template <typename Opt, typename Options>
void expect_foreach_equals_loop(const Options& options) {
  auto with = [&](bool foreach) {
    return train_steps(
        [&](std::vector<Tensor> p) { return Opt(p, Options(options).foreach(foreach)); }, 4);
  };
  std::vector<Tensor> a = with(true), b = with(false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bit_equal(a[i], b[i])) << "parameter " << i;
  // The updates moved the parameters (the unused one stays as initialised).
  EXPECT_FALSE(
      bit_equal(a[0], train_steps([&](std::vector<Tensor> p) { return Opt(p, options); }, 0)[0]));
}

// The multi-tensor ("foreach") updates give the per-parameter loop's bits.
TEST_F(Optim, ForeachUpdatesEqualThePerParameterLoopBitForBit) {
  expect_foreach_equals_loop<optim::Adam>(optim::AdamOptions(0.01));
  expect_foreach_equals_loop<optim::Adam>(optim::AdamOptions(0.01).weight_decay(0.1).amsgrad(true));
  expect_foreach_equals_loop<optim::AdamW>(optim::AdamOptions(0.01).weight_decay(0.1));
  expect_foreach_equals_loop<optim::SGD>(optim::SGDOptions(0.1));
  expect_foreach_equals_loop<optim::SGD>(
      optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
  expect_foreach_equals_loop<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).dampening(0.3));
  expect_foreach_equals_loop<optim::RMSprop>(optim::RMSpropOptions(0.01));
  expect_foreach_equals_loop<optim::RMSprop>(
      optim::RMSpropOptions(0.01).centered(true).momentum(0.5).weight_decay(0.1));
  expect_foreach_equals_loop<optim::Adafactor>(optim::AdafactorOptions(0.01));
  expect_foreach_equals_loop<optim::Adafactor>(
      optim::AdafactorOptions(0.05).eps1(1e-6).weight_decay(0.1).d(2.0));
}

// Note [Fused Adam]: Adam and AdamW through _fused_adam_ / _fused_adamw_ give the
// per-parameter loop's bits, with their step counts as cpu numbers or, with capturable,
// in device tensors; fused with foreach is refused.
TEST_F(Optim, FusedAdamEqualsThePerParameterLoopBitForBit) {
  auto expect_fused_equals_loop = [](auto make_optimizer, const optim::AdamOptions& options) {
    auto with = [&](optim::AdamOptions o) {
      return train_steps([&](std::vector<Tensor> p) { return make_optimizer(p, o); }, 4);
    };
    const std::vector<Tensor> loop = with(optim::AdamOptions(options).foreach(false));
    const std::vector<Tensor> fused = with(optim::AdamOptions(options).fused(true));
    const std::vector<Tensor> captured =
        with(optim::AdamOptions(options).fused(true).capturable(true));
    ASSERT_EQ(loop.size(), fused.size());
    for (size_t i = 0; i < loop.size(); ++i) {
      EXPECT_TRUE(bit_equal(fused[i], loop[i])) << "parameter " << i;
      EXPECT_TRUE(bit_equal(captured[i], loop[i])) << "parameter " << i << " (capturable)";
    }
    const std::vector<Tensor> initial =
        train_steps([&](std::vector<Tensor> p) { return make_optimizer(p, options); }, 0);
    EXPECT_FALSE(bit_equal(fused[0], initial[0]));  // the updates moved the parameters
  };
  auto adam = [](std::vector<Tensor> p, const optim::AdamOptions& o) { return optim::Adam(p, o); };
  auto adamw = [](std::vector<Tensor> p, const optim::AdamOptions& o) {
    return optim::AdamW(p, o);
  };
  expect_fused_equals_loop(adam, optim::AdamOptions(0.01));
  expect_fused_equals_loop(adam, optim::AdamOptions(0.01).weight_decay(0.1).amsgrad(true));
  expect_fused_equals_loop(adamw, optim::AdamOptions(0.01).weight_decay(0.1));
  Tensor w = randn({3}).requires_grad_();
  expect_error(
      [&] { optim::Adam(std::vector<Tensor>{w}, optim::AdamOptions().fused(true).foreach(true)); },
      "Adam", "expected at most one of fused and foreach, found both true");
}

// Adafactor's lists of one eps1: parameters of two dtypes (each its dtype's eps1) update
// as the per-parameter loop does.
TEST_F(Optim, AdafactorForeachSplitsParametersByDtype) {
  auto run_steps = [](bool foreach) {
    manual_seed(11);
    std::vector<Tensor> params = {
        randn({6, 5}).requires_grad_(),
        randn({6, 5}, TensorOptions().dtype(ScalarType::Float64)).requires_grad_(),
        randn({5}, TensorOptions().dtype(ScalarType::Float64)).requires_grad_()};
    optim::Adafactor opt(params, optim::AdafactorOptions(0.1).foreach(foreach));
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      Tensor loss =
          (params[0] * params[0]).sum() + (params[1] * params[1] * 3.0).sum() + params[2].sum();
      loss.backward();
      opt.step();
    }
    return params;
  };
  std::vector<Tensor> a = run_steps(true), b = run_steps(false);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bit_equal(a[i], b[i])) << "parameter " << i;
}

// clip_grad_norm_ with the foreach ops: the loop's total norm and scaled bits.
TEST_F(Optim, ClipGradNormForeachEqualsTheLoop) {
  auto clipped = [](bool foreach, double norm_type) {
    manual_seed(2);
    std::vector<Tensor> params = {randn({40, 30}).requires_grad_(), randn({7}).requires_grad_()};
    ((params[0] * params[0]).sum() * 5.0 + params[1].sum()).backward();
    const double total = optim::clip_grad_norm_(params, 0.5, norm_type, false, foreach);
    return std::make_pair(total, std::vector<Tensor>{params[0].grad(), params[1].grad()});
  };
  for (double norm_type : {2.0, 1.0, double(INFINITY)}) {
    auto [total_a, grads_a] = clipped(true, norm_type);
    auto [total_b, grads_b] = clipped(false, norm_type);
    EXPECT_EQ(total_a, total_b) << norm_type;
    for (size_t i = 0; i < grads_a.size(); ++i) EXPECT_TRUE(bit_equal(grads_a[i], grads_b[i]));
  }
}

// Outside an optimizer's no-grad update, the foreach ops refuse tensors that require grad.
TEST_F(Optim, ForeachOpsRefuseTensorsThatRequireGrad) {
  Tensor p = tensor({1.0, 2.0}).requires_grad_();
  expect_error([&] { _foreach_mul_({p}, 2.0); }, "loom::_foreach_mul_.Scalar",
               "does not support automatic differentiation");
  expect_error([&] { _foreach_sqrt({p}); }, "loom::_foreach_sqrt",
               "does not support automatic differentiation");
  {
    NoGradGuard no_grad;
    _foreach_mul_({p}, 2.0);
  }
  EXPECT_EQ(values(p), (std::vector<double>{2.0, 4.0}));
}

}  // namespace
}  // namespace loom
