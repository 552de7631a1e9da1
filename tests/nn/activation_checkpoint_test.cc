// Activation checkpointing (loom/nn/activation_checkpoint.h), both kinds (reentrant and
// not): gradients equal the unchecked run's (dropout included, through the restored random
// streams), activations are not kept, parameters train when no input requires grad,
// autocast regions are recomputed alike, and bad segment counts and functions that compute
// differently the second time are refused; the non-reentrant kind also under grad(),
// create_graph and a retained graph.
#include <gtest/gtest.h>

#include "../frontend/frontend_test_util.h"
#include "loom/autocast.h"
#include "loom/core/host_memory.h"
#include "loom/nn.h"

namespace loom {
namespace {

using test::expect_error;

// The parameter: use_reentrant.
class ActivationCheckpoint : public test::LoadedRuntimeTest,
                             public ::testing::WithParamInterface<bool> {
 protected:
  nn::CheckpointOptions options(bool preserve_rng_state = true) const {
    return {.preserve_rng_state = preserve_rng_state, .use_reentrant = GetParam()};
  }
};

nn::Sequential mlp(int64_t layers, int64_t width, double dropout) {
  nn::Sequential net;
  for (int64_t i = 0; i < layers; ++i) {
    net->push_back(nn::Linear(width, width));
    net->push_back(nn::ReLU());
    if (dropout > 0) net->push_back(nn::Dropout(dropout));
  }
  return net;
}

double max_difference(const Tensor& a, const Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// The gradients of the parameters and of x after one backward of sum(net(x)^2), with the
// Sequential run plainly or in `segments` checkpointed segments.
std::vector<Tensor> gradients(const nn::Sequential& net, const Tensor& x, int64_t segments,
                              nn::CheckpointOptions options) {
  for (Tensor& p : net->parameters()) p.set_grad(Tensor());
  Tensor input = x.detach();
  input.requires_grad_();
  manual_seed(11);
  Tensor out =
      segments == 0 ? net(input) : nn::checkpoint_sequential(net, segments, input, options);
  out.pow(2).sum().backward();
  std::vector<Tensor> grads{input.grad()};
  for (const Tensor& p : net->parameters()) grads.push_back(p.grad());
  return grads;
}

TEST_P(ActivationCheckpoint, GradientsEqualTheUncheckedRunDropoutIncluded) {
  manual_seed(1);
  nn::Sequential net = mlp(6, 16, 0.3);
  const Tensor x = randn({8, 16});
  const std::vector<Tensor> plain = gradients(net, x, 0, options());
  for (int64_t segments : {1, 3, 18}) {
    const std::vector<Tensor> checked = gradients(net, x, segments, options());
    ASSERT_EQ(checked.size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      ASSERT_TRUE(checked[i].defined()) << "gradient " << i << ", " << segments << " segments";
      EXPECT_LT(max_difference(checked[i], plain[i]), 1e-6)
          << "gradient " << i << ", " << segments << " segments";
    }
  }
}

TEST_P(ActivationCheckpoint, WithoutTheRandomStreamsRestoredDropoutDiffers) {
  Tensor w = randn({32});
  w.requires_grad_();
  auto fn = [&](const Tensor& x) { return dropout(x * w, 0.5, true); };
  auto grad_of = [&](bool checkpointed, bool preserve) {
    w.set_grad(Tensor());
    manual_seed(5);
    Tensor y = checkpointed ? nn::checkpoint(fn, ones({32}), options(preserve)) : fn(ones({32}));
    y.sum().backward();
    return w.grad();
  };
  const Tensor plain = grad_of(false, true);
  EXPECT_EQ(max_difference(grad_of(true, true), plain), 0);
  EXPECT_GT(max_difference(grad_of(true, false), plain), 0);
}

TEST_P(ActivationCheckpoint, ParametersTrainWhenNoInputRequiresGrad) {
  nn::Linear layer(4, 3);
  const Tensor x = randn({2, 4});  // data: no grad
  Tensor y = nn::checkpoint([&](const Tensor& in) { return layer(in); }, x, options());
  EXPECT_TRUE(y.requires_grad());
  y.sum().backward();
  ASSERT_TRUE(layer->weight.grad().defined());
  EXPECT_LT(max_difference(layer->weight.grad(), x.sum(0).expand({3, 4})), 1e-6);
}

TEST_P(ActivationCheckpoint, UnderNoGradTheFunctionJustRuns) {
  nn::Linear layer(4, 3);
  NoGradGuard no_grad;
  Tensor y = nn::checkpoint([&](const Tensor& in) { return layer(in); }, randn({2, 4}), options());
  EXPECT_FALSE(y.requires_grad());
}

TEST_P(ActivationCheckpoint, TheActivationsAreNotKept) {
  manual_seed(2);
  nn::Sequential net = mlp(20, 128, 0);
  const Tensor x = randn({8192, 128});
  // The peak above what the parameters hold, over a forward and backward (gradients()
  // frees the previous gradients first).
  auto peak_of = [&](int64_t segments) {
    for (Tensor& p : net->parameters()) p.set_grad(Tensor());
    reset_peak_host_memory_stats();
    const size_t before = host_memory_stats().allocated_bytes;
    gradients(net, x, segments, options());
    return host_memory_stats().peak_allocated_bytes - before;
  };
  const size_t plain = peak_of(0), checked = peak_of(5);
  std::cerr << "peak above the parameters: unchecked " << plain << " bytes, 5 segments " << checked
            << "\n";
  // The 20 ReLU outputs of 4 MiB that backward needs, kept; against 4 segment inputs and
  // one segment's 4 at a time.
  EXPECT_LT(static_cast<double>(checked), 0.6 * static_cast<double>(plain))
      << "checkpointed peak " << checked << " bytes, unchecked " << plain;
}

TEST_P(ActivationCheckpoint, AutocastRegionsAreRecomputedAlike) {
  if (!autocast::is_available()) GTEST_SKIP() << "the autocast plugin is not built";
  nn::Linear layer(8, 8);
  const Tensor x = randn({4, 8});
  auto grad_of = [&](bool checkpointed) {
    layer->weight.set_grad(Tensor());
    Tensor loss;
    {
      autocast::Guard amp("cpu");
      auto fn = [&](const Tensor& in) { return layer(in); };
      Tensor y = checkpointed ? nn::checkpoint(fn, x, options()) : fn(x);
      EXPECT_EQ(y.dtype(), ScalarType::BFloat16);
      loss = y.to(ScalarType::Float32).pow(2).sum();
    }
    loss.backward();
    return layer->weight.grad();
  };
  EXPECT_EQ(max_difference(grad_of(true), grad_of(false)), 0);
}

TEST_P(ActivationCheckpoint, BadSegmentsAndChangingFunctionsAreRefused) {
  nn::Sequential net = mlp(2, 4, 0);
  const Tensor x = randn({2, 4});
  expect_error([&] { nn::checkpoint_sequential(net, 0, x); }, "nn::checkpoint_sequential",
               {"expected between 1 and 4 segments (the Sequential's layers), found 0"});
  expect_error([&] { nn::checkpoint_sequential(net, 5, x); }, "nn::checkpoint_sequential",
               {"found 5"});
  int calls = 0;
  Tensor w = randn({3});
  w.requires_grad_();
  if (GetParam()) {
    Tensor y = nn::checkpoint(
        [&](const Tensor& in) { return ++calls == 1 ? in * w : (in * w).repeat({2}); }, ones({3}),
        options());
    // Raised inside backward, so autograd names the backward call first.
    expect_error([&] { y.sum().backward(); }, "autograd",
                 {"[nn::checkpoint] the recomputation's output 0 is [6], the forward's was [3]"});
    return;
  }
  // Non-reentrant: what the recomputation saves is compared with what the forward saved.
  Tensor y = nn::checkpoint(
      [&](const Tensor& in) {
        return ++calls == 1 ? (in * w).sum(0, true) : (in.repeat({2}) * w.repeat({2})).sum(0, true);
      },
      ones({3}), options());
  expect_error([&] { y.sum().backward(); }, "autograd",
               {"[nn::checkpoint] saved tensor 0 is float32 [6] in the recomputation, float32 [3] "
                "in the forward"});
  calls = 0;
  Tensor z =
      nn::checkpoint([&](const Tensor& in) { return ++calls == 1 ? in * w : (in * w).exp() * 1.0; },
                     ones({3}), options());
  expect_error([&] { z.sum().backward(); }, "autograd",
               {"[nn::checkpoint] the recomputation saved 5 tensors for backward, the forward 2"});
}

INSTANTIATE_TEST_SUITE_P(Kinds, ActivationCheckpoint, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Reentrant" : "NonReentrant";
                         });

// The non-reentrant kind keeps the ordinary graph: grad() with respect to the input, a
// second derivative (create_graph), and a retained graph differentiated twice (the second
// backward reads the tensors the first recomputed) all equal the unchecked run's.
class NonReentrantCheckpoint : public test::LoadedRuntimeTest {};

TEST_F(NonReentrantCheckpoint, GradCreateGraphAndRetainedGraphsEqualTheUncheckedRun) {
  manual_seed(3);
  nn::Sequential net = mlp(3, 8, 0);
  const Tensor x0 = randn({4, 8});
  auto run = [&](bool checkpointed, const Tensor& x) {
    return checkpointed ? nn::checkpoint_sequential(net, 3, x, {.use_reentrant = false}) : net(x);
  };
  std::vector<Tensor> plain;
  for (bool checkpointed : {false, true}) {
    SCOPED_TRACE(checkpointed ? "checkpointed" : "plain");
    Tensor x = x0.detach();
    x.requires_grad_();
    // grad(): nothing accumulates into the parameters.
    for (Tensor& p : net->parameters()) p.set_grad(Tensor());
    const Tensor g = autograd::grad({run(checkpointed, x).pow(2).sum()}, {x})[0];
    EXPECT_FALSE(net->parameters()[0].grad().defined());
    // create_graph: d/dx of sum(dy/dx * v).
    const Tensor y = run(checkpointed, x).tanh().sum();
    const Tensor gx = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    const Tensor second = autograd::grad({(gx * gx).sum()}, {x})[0];
    // retain_graph: two backwards accumulate twice the gradient.
    const Tensor z = run(checkpointed, x).pow(2).sum();
    autograd::backward({z}, {}, /*retain_graph=*/true);
    autograd::backward({z});
    std::vector<Tensor> results{g, second, x.grad(), net->parameters()[0].grad()};
    if (!checkpointed) {
      plain = results;
      continue;
    }
    for (size_t i = 0; i < results.size(); ++i) {
      ASSERT_TRUE(results[i].defined()) << "result " << i;
      EXPECT_LT(max_difference(results[i], plain[i]), 1e-5) << "result " << i;
    }
  }
}

}  // namespace
}  // namespace loom
