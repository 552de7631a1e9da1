// The autograd plugin's graph behaviour through the frontend: leaves and accumulation,
// shared inputs and diamonds, broadcasting, views, in-place ops and version counters,
// retain_graph and create_graph, backward(inputs=), no-grad and inference mode, hooks,
// anomaly mode, gradient layout, the refusals, and separate graphs on several threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "../frontend/frontend_test_util.h"
#include "loom/core/str_cat.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class Autograd : public test::LoadedRuntimeTest {};

Tensor leaf(std::initializer_list<double> v) {
  return tensor(v).requires_grad_();
}

std::vector<double> grad_of(const Tensor& t) {
  return values(t.grad());
}

void expect_near(const std::vector<double>& actual, const std::vector<double>& expected,
                 double tol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
}

TEST_F(Autograd, MulAndAddAccumulateIntoLeaves) {
  Tensor x = leaf({1, 2, 3});
  Tensor w = leaf({4, 5, 6});
  Tensor y = (x * w + x).sum();
  EXPECT_EQ(y.grad_fn_name(), "SumBackward0");
  y.backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(grad_of(w), (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(x.grad_fn_name(), "");
}

TEST_F(Autograd, PlainTensorsRecordNothing) {
  Tensor a = tensor({1.0, 2.0});
  Tensor b = a * a;
  EXPECT_FALSE(b.requires_grad());
  EXPECT_TRUE(b.is_leaf());
  EXPECT_FALSE(b.grad().defined());
}

TEST_F(Autograd, SharedInputsAndDiamondsAddTheirGradients) {
  Tensor x = leaf({0.5, 1.5});
  (x * x).sum().backward();
  expect_near(grad_of(x), {1.0, 3.0});

  Tensor z = leaf({0.3, -0.7});
  Tensor a = z * 2.0;
  Tensor y = (exp(a) + sin(a)).sum();  // d/dz = 2 (exp(2z) + cos(2z))
  y.backward();
  expect_near(grad_of(z),
              {2 * (std::exp(0.6) + std::cos(0.6)), 2 * (std::exp(-1.4) + std::cos(-1.4))});
}

TEST_F(Autograd, GradientsAccumulateAcrossBackwardCallsUntilCleared) {
  Tensor x = leaf({1, 2});
  (x * 3.0).sum().backward();
  (x * 3.0).sum().backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{6, 6}));
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad().defined());
  (x * 2.0).sum().backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{2, 2}));
}

// var_mean has a formula (the CPU's kernel hides the decomposition's pieces): a gradient
// through either return alone, or both, is the sum of var's and mean's.
TEST_F(Autograd, VarMeanGradientsFromEitherReturn) {
  Tensor x = tensor({1.0, 2.0, 4.0, 8.0, 3.0, 5.0}).reshape({2, 3}).requires_grad_();
  auto [v, m] = var_mean(x, IntList{1});
  EXPECT_EQ(v.grad_fn_name(), m.grad_fn_name());
  m.sum().backward({}, true);
  expect_near(grad_of(x), {1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  x.set_grad(Tensor());
  v.sum().backward({}, true);
  // 2 (x - mean) / (N - 1): means 7/3 and 16/3
  std::vector<double> expected = {-4.0 / 3, -1.0 / 3, 5.0 / 3, 8.0 / 3, -7.0 / 3, -1.0 / 3};
  expect_near(grad_of(x), expected);
  x.set_grad(Tensor());
  (v * 2.0 + m).sum().backward();
  for (double& e : expected) e = 2 * e + 1.0 / 3;
  expect_near(grad_of(x), expected);
}

TEST_F(Autograd, BroadcastGradientsAreSummedToTheInputShape) {
  Tensor row = leaf({1, 2, 3});
  Tensor grid = ones({2, 3}).requires_grad_();
  (row * grid).sum().backward();
  EXPECT_EQ(grad_of(row), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(grid.grad().sizes()[0], 2);
  EXPECT_EQ(grad_of(grid), (std::vector<double>{1, 2, 3, 1, 2, 3}));
}

TEST_F(Autograd, RetainGraphAllowsASecondBackwardAndTheFreedGraphRefuses) {
  Tensor x = leaf({2});
  Tensor y = x * x;
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{8}));
  expect_error([&] { y.backward(); }, "autograd",
               {"backward()", "backward through the graph a second time", "retain_graph=true"});
}

TEST_F(Autograd, CreateGraphGivesSecondDerivatives) {
  Tensor x = leaf({2.0, -1.0});
  Tensor y = (x * x * x).sum();
  std::vector<Tensor> g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  expect_near(values(g[0]), {12.0, 3.0});
  EXPECT_TRUE(g[0].requires_grad());
  g[0].sum().backward();
  expect_near(grad_of(x), {12.0, -6.0});  // 6x
}

TEST_F(Autograd, BackwardInputsLimitsWhichLeavesGetGradients) {
  Tensor a = leaf({1});
  Tensor b = leaf({2});
  (a * b).backward(Tensor(), std::nullopt, false, {a});
  EXPECT_EQ(grad_of(a), (std::vector<double>{2}));
  EXPECT_FALSE(b.grad().defined());
}

TEST_F(Autograd, GradOfUnusedInputsNeedsAllowUnused) {
  Tensor a = leaf({1});
  Tensor unused = leaf({1});
  Tensor y = a * 2.0;
  expect_error([&] { autograd::grad({y}, {unused}, {}, true); }, "autograd",
               {"autograd::grad()", "input 0 was not used", "allow_unused"});
  std::vector<Tensor> g = autograd::grad({y}, {a, unused}, {}, true, false, true);
  EXPECT_EQ(values(g[0]), (std::vector<double>{2}));
  EXPECT_FALSE(g[1].defined());
  EXPECT_FALSE(a.grad().defined());  // grad() accumulates nothing
}

TEST_F(Autograd, NoGradAndInferenceModeRecordNothing) {
  Tensor x = leaf({1, 2});
  EXPECT_TRUE(autograd::is_enabled());
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(autograd::is_enabled());
    EXPECT_FALSE((x * 2.0).requires_grad());
    autograd::EnableGradGuard enable;
    EXPECT_TRUE((x * 2.0).requires_grad());
  }
  {
    InferenceMode inference;
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
  Tensor d = (x * 2.0).detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
}

TEST_F(Autograd, TensorHooksSeeAndReplaceGradients) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 3.0;
  std::vector<double> seen;
  y.register_hook([&](const Tensor& g) {
    seen = values(g);
    return g * 2.0;
  });
  y.sum().backward();
  EXPECT_EQ(seen, (std::vector<double>{1, 1}));
  EXPECT_EQ(grad_of(x), (std::vector<double>{6, 6}));

  Tensor w = leaf({5});
  std::vector<double> after;
  w.register_post_accumulate_grad_hook([&](const Tensor& g) { after = values(g); });
  (w * w).sum().backward();
  EXPECT_EQ(after, (std::vector<double>{10}));
}

TEST_F(Autograd, RetainGradKeepsANonLeafsGradient) {
  Tensor x = leaf({1, 2});
  Tensor h = x * 2.0;
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  (h * h).sum().backward();
  EXPECT_EQ(values(h.grad()), (std::vector<double>{4, 8}));
  EXPECT_EQ(grad_of(x), (std::vector<double>{8, 16}));
}

TEST_F(Autograd, InPlaceOnANonLeafRebasesItsHistory) {
  Tensor x = leaf({1, 2});
  Tensor h = x * 2.0;
  Tensor y = x + 1.0;
  h.mul_(y);  // h = 2x (x + 1): y's gradient needs the old h, kept as a copy
  EXPECT_EQ(h.grad_fn_name(), "MulBackward0");
  h.sum().backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{6, 10}));  // 4x + 2
  // Writing a tensor the op also reads and saves is refused at backward, as in PyTorch.
  Tensor z = x * 2.0;
  z.mul_(z);
  expect_error([&] { z.sum().backward(); }, "autograd",
               {"backward()", "a tensor saved by mul_ for backward was modified in place"});
}

// The copy of the old values an in-place op saves keeps their history: gelu_'s second
// derivative equals gelu's.
TEST_F(Autograd, InPlaceOpsHaveSecondDerivatives) {
  Tensor x = leaf({-1.5, -0.2, 0.3, 2.0});
  auto second = [&](bool in_place) {
    Tensor h = x * 1.5;
    Tensor y = in_place ? gelu_(h) : gelu(h);
    std::vector<Tensor> g =
        autograd::grad({(y * y).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true);
    return values(autograd::grad({g[0].sum()}, {x})[0]);
  };
  const std::vector<double> functional = second(false);
  expect_near(second(true), functional);
  EXPECT_GT(std::abs(functional[3]), 0.1);  // not trivially zero
}

TEST_F(Autograd, InPlaceThroughAViewOfANonLeafReachesTheBase) {
  Tensor x = leaf({1, 2, 3});
  Tensor base = x * 1.0;
  Tensor front = base.narrow(0, 0, 2);
  front *= 3.0;
  EXPECT_EQ(base.grad_fn_name(), "CopySlices");
  (base * base).sum().backward();  // d/dx = 2 base * [3, 3, 1]
  EXPECT_EQ(grad_of(x), (std::vector<double>{18, 36, 6}));
  EXPECT_EQ(values(base), (std::vector<double>{3, 6, 3}));
}

TEST_F(Autograd, AnotherViewOfAWrittenBaseSeesTheWrite) {
  Tensor x = leaf({1, 2, 3, 4});
  Tensor base = x * 1.0;
  Tensor first = base.narrow(0, 0, 2);
  Tensor second = base.narrow(0, 2, 2);
  second *= 10.0;
  (first.sum() + second.sum()).backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{1, 1, 10, 10}));
}

TEST_F(Autograd, WritingAPlainBufferWithAGradientGivesTheBufferAHistory) {
  Tensor x = leaf({1, 2});
  Tensor buffer = zeros({4});
  buffer.narrow(0, 1, 2).copy_(x * 5.0);
  EXPECT_TRUE(buffer.requires_grad());
  buffer.sum().backward();
  EXPECT_EQ(grad_of(x), (std::vector<double>{5, 5}));
}

TEST_F(Autograd, ASavedTensorModifiedInPlaceFailsAtBackward) {
  Tensor x = leaf({1, 2});
  Tensor a = x * 1.0;
  Tensor y = a * x;  // saves a
  a += 1.0;
  expect_error([&] { y.sum().backward(); }, "autograd",
               {"backward()", "a tensor saved by mul for backward was modified in place (version",
                "saved at version"});
}

TEST_F(Autograd, InPlaceOnALeafThatRequiresGradIsRefused) {
  Tensor x = leaf({1, 2});
  expect_error(
      [&] { x += 1.0; }, "loom::add_.Tensor",
      {"a leaf tensor that requires grad ('self') is being used in an in-place operation"});
  expect_error(
      [&] {
        Tensor part = x.narrow(0, 0, 1);
        part *= 2.0;
      },
      "loom::mul_.Tensor", {"a view of a leaf tensor that requires grad"});
  NoGradGuard no_grad;
  x += 1.0;  // allowed without grad mode, as in PyTorch
  EXPECT_EQ(values(x), (std::vector<double>{2, 3}));
}

// Note [resize_]: as PyTorch, refused for a tensor that requires grad, leaf or not.
TEST_F(Autograd, ResizeRefusesATensorThatRequiresGrad) {
  Tensor x = leaf({1, 2});
  expect_error([&] { resize_(x, {3}); }, "loom::resize_",
               {"cannot resize a tensor that requires grad"});
  Tensor y = x * 2.0;
  expect_error([&] { resize_(y, {1}); }, "loom::resize_",
               {"cannot resize a tensor that requires grad"});
  Tensor plain = empty({2});
  resize_(plain, {4});
  EXPECT_EQ(plain.numel(), 4);
}

TEST_F(Autograd, OutVariantsRefuseInputsThatRequireGrad) {
  Tensor x = leaf({1, 2});
  Tensor out = empty({2});
  expect_error([&] { add_out(out, x, x); }, "loom::add.out",
               {"out= variants do not support automatic differentiation"});
}

TEST_F(Autograd, OpsWithoutAFormulaFailInBackwardNamingTheOpAndInput) {
  // grid sampling has a first derivative but, as in PyTorch, no second one
  Tensor input = randn({1, 1, 3, 3}).requires_grad_();
  Tensor grid = zeros({1, 2, 2, 2});
  std::vector<Value> r =
      call("loom::grid_sampler_2d", {input, grid, int64_t{0}, int64_t{0}, false});
  Tensor sampled = r[0].to_tensor();
  std::vector<Tensor> first = autograd::grad({(sampled * sampled).sum()}, {input}, {}, true, true);
  ASSERT_EQ(first.size(), 1u);
  expect_error(
      [&] { first[0].sum().backward(); }, "autograd",
      {"backward()", "[loom::grid_sampler_2d_backward] has no derivative for input 'grad_output'"});
}

TEST_F(Autograd, AnomalyModeNamesTheNodeThatMadeNaN) {
  Tensor x = leaf({0.0, 1.0});
  autograd::DetectAnomalyGuard anomaly;
  EXPECT_TRUE(autograd::is_anomaly_enabled());
  Tensor y = sqrt(x).sum();
  expect_error(
      [&] { y.backward(); }, "autograd",
      {"backward()", "SqrtBackward0 returned nan or inf values", "the forward op was loom::sqrt"});
}

TEST_F(Autograd, BadRequestsGetClearErrors) {
  expect_error(
      [] { tensor({int64_t{1}}).requires_grad_(); }, "autograd",
      {"requires_grad_()", "only tensors of a floating-point dtype can require grad, found int64"});
  Tensor x = leaf({1, 2});
  expect_error([&] { (x * 2.0).backward(); }, "autograd",
               {"backward()", "created implicitly only for outputs of one element", "has 2"});
  expect_error([&] { tensor({1.0}).backward(); }, "autograd",
               {"backward()", "does not require grad and has no grad_fn"});
  expect_error([&] { (x * 2.0).requires_grad_(false); }, "autograd",
               {"requires_grad_()", "only be changed on leaf tensors"});
  expect_error([&] { tensor({1.0}).register_hook([](const Tensor& g) { return g; }); }, "autograd",
               {"register_hook()", "does not require grad"});
  expect_error([&] { (x * 2.0).backward(ones({3})); }, "autograd",
               {"backward()", "different shape"});
}

// The walk DDP's find_unused_parameters makes: leaves a graph leads to, through ops, a
// custom function's node and views, and none a graph does not.
TEST_F(Autograd, ReachesFindsTheLeavesAGraphLeadsTo) {
  Tensor a = leaf({1, 2}), b = leaf({3, 4}), c = leaf({5, 6}), plain = tensor({1.0, 2.0});
  Tensor y = (a * 2.0 + b.narrow(0, 0, 1)).sum();
  EXPECT_EQ(autograd::reaches({y}, {a, b, c, plain}),
            (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(autograd::reaches({c}, {a, c}), (std::vector<bool>{false, true}));  // itself
  EXPECT_EQ(autograd::reaches({plain}, {a}), std::vector<bool>{false});
  EXPECT_EQ(autograd::reaches({y, c * 3.0}, {c}), std::vector<bool>{true});  // several roots
  // A custom function's node (what compiled code records) leads to its inputs.
  Tensor out = [&] {
    NoGradGuard no_grad;
    return c * 2.0;
  }();
  autograd::apply_function("Twice", {c}, {out}, [](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0] * 2.0};
  });
  EXPECT_EQ(autograd::reaches({out}, {a, c}), (std::vector<bool>{false, true}));
  expect_error([&] { autograd::reaches({Tensor()}, {a}); }, "autograd",
               {"reaches()", "element 0 of the roots is null"});
}

// Note [Saved-tensor hooks]: what ops save goes through pack, backward reads it through
// unpack; the innermost guard applies; a wrong unpacked tensor and a failing hook are
// errors naming the op; SaveOnCpu keeps cpu tensors.
TEST_F(Autograd, SavedTensorHooksPackAndUnpackWhatOpsSave) {
  Tensor x = leaf({0.1, 0.2, 0.3}), w = leaf({0.4, 0.5, 0.6});
  int packed = 0, unpacked = 0;
  Tensor y;
  {
    autograd::SavedTensorsHooks hooks(
        [&](const Tensor& t) {
          ++packed;
          return std::any(t * 1.0);  // a copy: recording is off inside the hook
        },
        [&](const std::any& p) {
          ++unpacked;
          return std::any_cast<Tensor>(p);
        });
    y = (x * w).exp().sum();
  }
  EXPECT_EQ(packed, 3);  // mul's x and w, exp's result
  EXPECT_EQ(unpacked, 0);
  y.backward();
  EXPECT_EQ(unpacked, 3);
  expect_near(grad_of(x), {0.4 * std::exp(0.04), 0.5 * std::exp(0.1), 0.6 * std::exp(0.18)});
  // Nested guards: the innermost packs; the outer applies again once it is gone.
  int outer = 0, inner = 0;
  auto keep = [](const std::any& p) { return std::any_cast<Tensor>(p); };
  {
    autograd::SavedTensorsHooks a([&](const Tensor& t) { return ++outer, std::any(t); }, keep);
    {
      autograd::SavedTensorsHooks b([&](const Tensor& t) { return ++inner, std::any(t); }, keep);
      (void)(x * w);
    }
    (void)x.exp();
  }
  EXPECT_EQ(inner, 2);
  EXPECT_EQ(outer, 1);
  // An unpacked tensor of another shape, and a failing hook, are errors naming the op.
  Tensor bad;
  {
    autograd::SavedTensorsHooks h([](const Tensor& t) { return std::any(t); },
                                  [](const std::any&) { return zeros({2}); });
    bad = (x * w).sum();
  }
  expect_error([&] { bad.backward(); }, "autograd",
               {"the unpack hook returned float32 [2] for a tensor saved by mul as float32 [3]"});
  {
    autograd::SavedTensorsHooks h(
        [](const Tensor&) -> std::any { fail("my_hook", "no room to pack"); }, keep);
    expect_error([&] { (void)(x * w); }, "loom::mul.Tensor", {"[my_hook] no room to pack"});
  }
  // save_on_cpu: cpu tensors are kept as they are.
  x.set_grad(Tensor());
  {
    autograd::SaveOnCpu offload(/*pin_memory=*/true);
    y = (x * w).exp().sum();
  }
  y.backward();
  expect_near(grad_of(x), {0.4 * std::exp(0.04), 0.5 * std::exp(0.1), 0.6 * std::exp(0.18)});
}

TEST_F(Autograd, AGradientTakesItsLeafsLayout) {
  Tensor channels_last =
      randn({2, 4, 3, 3}).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  Tensor p = channels_last.requires_grad_();
  (p * 2.0).sum().backward();
  EXPECT_EQ(std::vector<int64_t>(p.grad().strides().begin(), p.grad().strides().end()),
            std::vector<int64_t>(p.strides().begin(), p.strides().end()));
  Tensor q = randn({3, 2}).requires_grad_();
  (q.t() * 2.0).sum().backward();
  EXPECT_TRUE(q.grad().is_contiguous());
}

// A channels-last network (Note [Convolution layouts]): conv2d's gradients come back in
// the leaves' layout, equal to the row-major network's.
TEST_F(Autograd, ChannelsLastConvolutionGradients) {
  Tensor x = randn({2, 3, 6, 6}), w = randn({4, 3, 3, 3}), g = randn({2, 4, 6, 6});
  auto grads = [&](const Tensor& input, const Tensor& weight) {
    Tensor xi = input.detach().requires_grad_(), wi = weight.detach().requires_grad_();
    Tensor y = conv2d(xi, wi, std::nullopt, 1, 1);
    y.backward(g);
    return std::tuple{y, xi.grad(), wi.grad()};
  };
  auto [y, gx, gw] = grads(x, w);
  auto [y_cl, gx_cl, gw_cl] =
      grads(x.contiguous(MemoryFormat::ChannelsLast), w.contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(y_cl.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(gx_cl.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(gw_cl.is_contiguous(MemoryFormat::ChannelsLast));
  expect_near(values(y_cl), values(y), 1e-4);
  expect_near(values(gx_cl), values(gx), 1e-4);
  expect_near(values(gw_cl), values(gw), 1e-4);
}

// A channels-last network stays channels last through batch_norm, relu, max pooling and softmax
// (Note [Layouts of new results], Note [Channels-last max pooling]), forward and backward,
// with the row-major network's values.
TEST_F(Autograd, ChannelsLastNetworkKeepsItsLayout) {
  Tensor x = randn({2, 3, 8, 8}), w = randn({4, 3, 3, 3}), g = randn({2, 4, 4, 4});
  auto run = [&](const Tensor& input, const Tensor& weight, bool channels_last) {
    Tensor xi = input.detach().requires_grad_(), wi = weight.detach().requires_grad_();
    Tensor y = conv2d(xi, wi, std::nullopt, 1, 1);
    Tensor normalized =
        batch_norm(y, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5);
    Tensor activated = relu(normalized);
    Tensor pooled = max_pool2d(activated, {2, 2});
    Tensor probs = softmax(pooled, 1);
    for (const Tensor& t : {normalized, activated, pooled, probs}) {
      EXPECT_EQ(t.is_contiguous(MemoryFormat::ChannelsLast) && !t.is_contiguous(), channels_last);
    }
    probs.backward(g);
    EXPECT_EQ(xi.grad().is_contiguous(MemoryFormat::ChannelsLast), channels_last);
    return std::tuple{probs, xi.grad(), wi.grad()};
  };
  auto [y, gx, gw] = run(x, w, false);
  auto [y_cl, gx_cl, gw_cl] =
      run(x.contiguous(MemoryFormat::ChannelsLast), w.contiguous(MemoryFormat::ChannelsLast), true);
  expect_near(values(y_cl), values(y), 1e-4);
  expect_near(values(gx_cl), values(gx), 1e-3);
  expect_near(values(gw_cl), values(gw), 1e-3);
}

// The average poolings of a channels-last input (channels-last results) differentiate to
// the row-major input's gradients.
TEST_F(Autograd, ChannelsLastAveragePoolingGradients) {
  Tensor x = randn({2, 5, 7, 6}), g = randn({2, 5, 4, 3}), g1 = randn({2, 5, 1, 1});
  auto grads = [&](const Tensor& input) {
    Tensor xi = input.detach().requires_grad_();
    Tensor pooled = avg_pool2d(xi, {3, 3}, {2, 2}, {1, 1});
    Tensor cells = adaptive_avg_pool2d(xi, {1, 1});
    loom::autograd::backward({pooled, cells}, {g, g1});
    return xi.grad();
  };
  expect_near(values(grads(x.contiguous(MemoryFormat::ChannelsLast))), values(grads(x)), 1e-6);
}

TEST_F(Autograd, SeparateGraphsBackpropagateOnSeveralThreadsAtOnce) {
  constexpr int kThreads = 4;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        Tensor x = full({8}, static_cast<double>(t + 1)).requires_grad_();
        Tensor y = (exp(x * 0.1) * x).sum();
        y.backward();
        const double v = t + 1;
        const double expected = std::exp(0.1 * v) * (1 + 0.1 * v);
        for (double g : values(x.grad())) {
          if (std::abs(g - expected) > 1e-4 * expected) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(Autograd, OneLeafSharedByGraphsOnSeveralThreadsGetsEveryGradient) {
  Tensor shared = zeros({4}).requires_grad_();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 25; ++round) (shared * 1.0).sum().backward();
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(grad_of(shared), (std::vector<double>{100, 100, 100, 100}));
}

TEST_F(Autograd, OneRetainedGraphDifferentiatedOnSeveralThreadsAtOnce) {
  Tensor x = full({6}, 1.5).requires_grad_();
  Tensor y = (x * x * x).sum();  // d/dx = 3x^2 = 6.75
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 25; ++round) {
        std::vector<Tensor> g = autograd::grad({y}, {x}, {}, /*retain_graph=*/true);
        for (double v : values(g[0])) {
          if (std::abs(v - 6.75) > 1e-5) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// The README's autograd example, as written there.
TEST_F(Autograd, ReadmeExampleTrainsALeaf) {
  loom::Tensor w = loom::randn({3, 2}).requires_grad_();
  loom::Tensor x = loom::randn({4, 3});
  loom::Tensor loss = loom::relu(loom::matmul(x, w)).sum();
  loss.backward();
  EXPECT_EQ(loss.grad_fn_name(), "SumBackward0");
  EXPECT_TRUE(w.is_leaf());
  const std::vector<double> before = values(w);
  const std::vector<double> g = values(w.grad());
  {
    loom::NoGradGuard no_grad;
    w -= w.grad() * 0.1;
  }
  w.set_grad(loom::Tensor());
  EXPECT_FALSE(w.grad().defined());
  const std::vector<double> after = values(w);
  for (size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(after[i], before[i] - 0.1 * g[i], 1e-6);
}

// --- the functional API ---

TEST_F(Autograd, JacobianHessianAndProducts) {
  Tensor x = tensor({1.0, 2.0, 3.0}, TensorOptions().dtype(ScalarType::Float64));
  Tensor j = autograd::jacobian([](const Tensor& t) { return t * t; }, x);
  EXPECT_EQ(j.sizes()[0], 3);
  EXPECT_EQ(values(j), (std::vector<double>{2, 0, 0, 0, 4, 0, 0, 0, 6}));

  Tensor h = autograd::hessian([](const Tensor& t) { return (t * t * t).sum(); }, x);
  EXPECT_EQ(values(h), (std::vector<double>{6, 0, 0, 0, 12, 0, 0, 0, 18}));

  Tensor v = tensor({1.0, 0.0, -1.0}, TensorOptions().dtype(ScalarType::Float64));
  auto [y, vjp] = autograd::vjp([](const Tensor& t) { return t * t; }, x, v);
  EXPECT_EQ(values(vjp), (std::vector<double>{2, 0, -6}));
  EXPECT_FALSE(y.requires_grad());
  auto [y2, jvp] = autograd::jvp([](const Tensor& t) { return t * t; }, x, v);
  EXPECT_EQ(values(jvp), (std::vector<double>{2, 0, -6}));
  auto [f, hv] = autograd::hvp([](const Tensor& t) { return (t * t * t).sum(); }, x, v);
  EXPECT_EQ(values(hv), (std::vector<double>{6, 0, -18}));
  EXPECT_EQ(f.item<double>(), 36.0);
}

TEST_F(Autograd, GradcheckReportsTheWorstElement) {
  Tensor x = tensor({0.5, 1.5}, TensorOptions().dtype(ScalarType::Float64)).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck([](const std::vector<Tensor>& in) { return sin(in[0]); }, {x}));
  EXPECT_TRUE(
      autograd::gradgradcheck([](const std::vector<Tensor>& in) { return sin(in[0]); }, {x}));
  // A hook that doubles the gradient makes the analytic Jacobian wrong.
  autograd::MultiFunction wrong = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 3.0;
    if (y.requires_grad()) y.register_hook([](const Tensor& g) { return g * 2.0; });
    return y;
  };
  expect_error([&] { autograd::gradcheck(wrong, {x}); }, "gradcheck",
               {"Jacobian mismatch for input 0", "analytic 6", "numeric 3"});
  autograd::GradcheckOptions quiet;
  quiet.raise_exception = false;
  EXPECT_FALSE(autograd::gradcheck(wrong, {x}, quiet));
}

// Note [FFT gradients]: each transform through its parts (view_as_real / view_as_complex),
// so that gradcheck sees real inputs and outputs; one and several dims, both halves, every
// normalization, even and odd lengths, and the second derivative.
TEST_F(Autograd, FftGradientsMatchCentralDifferences) {
  const TensorOptions f64 = TensorOptions().dtype(ScalarType::Float64);
  Tensor x = randn({3, 4, 5}, f64).requires_grad_();
  struct R2c {
    std::vector<int64_t> dims;
    int64_t normalization;
    bool onesided;
  };
  for (const R2c& c : {R2c{{2}, 0, true}, R2c{{0, 2}, 1, true}, R2c{{1}, 2, false},
                       R2c{{1, 2}, 0, false}, R2c{{2, 1}, 1, true}}) {
    SCOPED_TRACE(str_cat("r2c over ", c.dims.size(), " dims, normalization ", c.normalization,
                         c.onesided ? ", one side" : ", both halves"));
    autograd::MultiFunction f = [&](const std::vector<Tensor>& in) {
      return view_as_real(_fft_r2c(in[0], c.dims, c.normalization, c.onesided));
    };
    EXPECT_TRUE(autograd::gradcheck(f, {x}));
    EXPECT_TRUE(autograd::gradgradcheck(f, {x}));
  }
  // c2r of a [3, 4, bins] spectrum given as its parts, to n = 6 (even) and 7 (odd)
  for (int64_t n : {6, 7}) {
    Tensor parts = randn({3, 4, n / 2 + 1, 2}, f64).requires_grad_();
    for (int64_t normalization : {0, 2}) {
      SCOPED_TRACE(str_cat("c2r to ", n, ", normalization ", normalization));
      autograd::MultiFunction f = [&](const std::vector<Tensor>& in) {
        return _fft_c2r(view_as_complex(in[0]), {2}, normalization, n);
      };
      EXPECT_TRUE(autograd::gradcheck(f, {parts}));
      autograd::MultiFunction two_dims = [&](const std::vector<Tensor>& in) {
        return _fft_c2r(view_as_complex(in[0]), {1, 2}, normalization, n);
      };
      EXPECT_TRUE(autograd::gradcheck(two_dims, {parts}));
    }
  }
}

}  // namespace
}  // namespace loom
