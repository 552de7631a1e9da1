// Autocast on the autocast plugin (loom/autocast.h): the lower-precision, float32 and
// promote lists on cpu, float64 left alone, regions that nest and restore, gradients
// through the casts, one cast of a parameter per region, every device type covered with
// no code from its plugin, compiled functions that follow each call's region, and the
// refusals.
#include <gtest/gtest.h>

#include <optional>

#include "../frontend/frontend_test_util.h"
#include "loom/autocast.h"
#include "loom/compile.h"

namespace loom {
namespace {

using test::expect_error;

constexpr ScalarType kF32 = ScalarType::Float32;
constexpr ScalarType kBF16 = ScalarType::BFloat16;
constexpr ScalarType kF16 = ScalarType::Float16;

double max_difference(const Tensor& a, const Tensor& b) {
  return (a - b).abs().max().item<double>();
}

class Autocast : public test::LoadedRuntimeTest {
 protected:
  void SetUp() override {
    if (!autocast::is_available()) GTEST_SKIP() << "the autocast plugin is not built";
    manual_seed(3);
  }
};

TEST_F(Autocast, ProductsAndConvolutionsRunInTheLowerDtype) {
  const Tensor x = randn({4, 8}), w = randn({3, 8}), b = randn({3});
  const Tensor image = randn({1, 2, 5, 5}), kernel = randn({4, 2, 3, 3});
  {
    autocast::Guard amp("cpu");  // bfloat16 by default on cpu
    EXPECT_TRUE(autocast::is_enabled("cpu"));
    EXPECT_EQ(autocast::lower_dtype("cpu"), kBF16);
    const Tensor y = linear(x, w, b);
    EXPECT_EQ(y.dtype(), kBF16);
    EXPECT_EQ(mm(x, w.t()).dtype(), kBF16);
    EXPECT_EQ(matmul(x, w.t()).dtype(), kBF16);
    EXPECT_EQ(conv2d(image, kernel).dtype(), kBF16);
    EXPECT_EQ(mm(x.to(kF16), w.t()).dtype(), kBF16);  // every floating type but float64
    // The values: the float op on inputs rounded to bfloat16, within bfloat16's rounding.
    const Tensor want = linear(x.to(kBF16).to(kF32), w.to(kBF16).to(kF32), b.to(kBF16).to(kF32));
    EXPECT_LT(max_difference(y.to(kF32), want), 0.1);
  }
  EXPECT_FALSE(autocast::is_enabled("cpu"));
  EXPECT_EQ(linear(x, w, b).dtype(), kF32);
}

TEST_F(Autocast, AccuracySensitiveOpsRunInFloat32AndMixedInputsPromote) {
  const Tensor low = randn({2, 5}).to(kBF16), wide = randn({2, 5});
  autocast::Guard amp("cpu", kBF16);
  EXPECT_EQ(softmax(low, 1).dtype(), kF32);
  EXPECT_EQ(log_softmax(low, 1).dtype(), kF32);
  EXPECT_EQ(exp(low).dtype(), kF32);
  EXPECT_EQ(low.sum().dtype(), kF32);
  EXPECT_EQ(mse_loss(low, low).dtype(), kF32);
  EXPECT_EQ(cat({low, wide}).dtype(), kF32);
  EXPECT_EQ(stack({low, wide}).dtype(), kF32);
  EXPECT_EQ(where(wide > 0, low, wide).dtype(), kF32);
  // Ops on no list run as given; float64 is never cast.
  EXPECT_EQ(relu(low).dtype(), kBF16);
  const Tensor d = randn({3, 3}, TensorOptions().dtype(ScalarType::Float64));
  EXPECT_EQ(mm(d, d).dtype(), ScalarType::Float64);
}

TEST_F(Autocast, OpsThatWriteTheirArgumentsAreNeverCast) {
  const Tensor a = randn({3, 3}), b = randn({3, 3});
  Tensor out = empty({3, 3});
  {
    autocast::Guard amp("cpu");
    mm_out(out, a, b);  // the out= variant writes the caller's float32 tensor, in float32
  }
  EXPECT_LT(max_difference(out, mm(a, b)), 1e-5);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::mm.out"), autocast::Cast::Keep);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::sum.dim_IntList_out"), autocast::Cast::Keep);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::index_put_"), autocast::Cast::Keep);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::index_put"), autocast::Cast::Promote);
}

TEST_F(Autocast, RegionsNestAndRestoreTheirState) {
  const Tensor a = randn({2, 2});
  {
    autocast::Guard outer("cpu", kBF16);
    {
      autocast::Guard off("cpu", std::nullopt, /*enabled=*/false);
      EXPECT_FALSE(autocast::is_enabled("cpu"));
      EXPECT_EQ(mm(a, a).dtype(), kF32);
      {
        autocast::Guard half("cpu", kF16);
        EXPECT_EQ(autocast::lower_dtype("cpu"), kF16);
        EXPECT_EQ(mm(a, a).dtype(), kF16);
      }
      EXPECT_EQ(mm(a, a).dtype(), kF32);
    }
    EXPECT_TRUE(autocast::is_enabled("cpu"));
    EXPECT_EQ(mm(a, a).dtype(), kBF16);
  }
  EXPECT_EQ(mm(a, a).dtype(), kF32);
}

TEST_F(Autocast, GradientsFlowBackThroughTheCastsInTheParametersDtype) {
  Tensor w = randn({3, 4});
  w.requires_grad_();
  const Tensor x = randn({5, 4});
  Tensor loss;
  {
    autocast::Guard amp("cpu");
    Tensor y = linear(x, w);
    EXPECT_EQ(y.dtype(), kBF16);
    loss = y.pow(2).sum();  // pow and sum in float32
    EXPECT_EQ(loss.dtype(), kF32);
  }
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kF32);
  // d/dw sum((x w^T)^2) = 2 (x w^T)^T x, at bfloat16's precision.
  const Tensor want = 2 * matmul(matmul(x, w.detach().t()).t(), x);
  EXPECT_LT(max_difference(w.grad(), want) / want.abs().max().item<double>(), 2e-2);
}

TEST_F(Autocast, AParameterIsCastOncePerRegion) {
  Tensor w = randn({4, 4});
  w.requires_grad_();
  const Tensor x = randn({2, 4});
  auto casts_of_two_uses = [&](bool cache) {
    profiler::Profiler p;
    {
      autocast::Guard amp("cpu", kBF16, true, cache);
      Tensor y = mm(mm(x, w), w);
    }
    p.stop();
    int casts = 0;
    for (const profiler::Event& e : p.events()) {
      if (e.kind == profiler::EventKind::Op && e.name == "loom::to") ++casts;
    }
    return casts;
  };
  // Two uses of w and one of x (the second product's left side is already bfloat16).
  EXPECT_EQ(casts_of_two_uses(true), 2);
  EXPECT_EQ(casts_of_two_uses(false), 3);
}

TEST_F(Autocast, EveryDeviceTypeHasTheDefaultPolicyWithNoCodeOfItsOwn) {
  EXPECT_EQ(autocast::cast_of("cpu", "loom::mm"), autocast::Cast::Lower);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::softmax.int"), autocast::Cast::Float32);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::cat"), autocast::Cast::Promote);
  EXPECT_EQ(autocast::cast_of("cpu", "loom::relu"), autocast::Cast::Keep);
  // A device type of a test plugin that knows nothing of autocast: float16 by default.
  Runtime runtime =
      test::load_plugins({"cpu", "autograd", "autocast"},
                         {std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_test_device.so"});
  EXPECT_EQ(autocast::cast_of("testdev", "loom::linear"), autocast::Cast::Lower);
  EXPECT_EQ(autocast::lower_dtype("testdev"), kF16);
  autocast::Guard amp("testdev");
  EXPECT_TRUE(autocast::is_enabled("testdev"));
  EXPECT_FALSE(autocast::is_enabled("cpu"));
}

TEST_F(Autocast, BadRegionsAreRefused) {
  expect_error([] { autocast::Guard g("nope"); }, "autocast", {"device type 'nope' is not loaded"});
  expect_error([] { autocast::Guard g("cpu", kF32); }, "autocast",
               {"expected float16 or bfloat16 as the lower dtype for cpu, found float32"});
  expect_error([] { autocast::Guard g("cpu", ScalarType::Int8); }, "autocast", {"found int8"});
  // A refused region changes nothing.
  EXPECT_FALSE(autocast::is_enabled("cpu"));
  EXPECT_EQ(mm(randn({2, 2}), randn({2, 2})).dtype(), kF32);
}

// Note [Autocast guards]: a compiled function follows the autocast region of each call,
// compiled first outside a region or first inside one, and keeps one graph per state.
TEST_F(Autocast, CompiledFunctionsFollowTheRegionOfEachCall) {
  const Tensor x = randn({4, 8}), w = randn({8, 3});
  const auto body = [](const Tensor& a, const Tensor& b) { return mm(a, b).relu() * 2; };
  const Tensor eager_f32 = body(x, w);
  Tensor eager_bf16;
  {
    autocast::Guard amp("cpu");
    eager_bf16 = body(x, w);
  }
  for (bool first_inside : {false, true}) {
    auto f = compile(body);
    for (int call = 0; call < 4; ++call) {
      const bool inside = (call % 2 == 0) == first_inside;
      std::optional<autocast::Guard> amp;
      if (inside) amp.emplace("cpu");
      const Tensor y = f(x, w);
      ASSERT_EQ(y.dtype(), inside ? kBF16 : kF32) << "call " << call;
      const Tensor& want = inside ? eager_bf16 : eager_f32;
      EXPECT_LT(max_difference(y.to(kF32), want.to(kF32)), inside ? 0.05 : 1e-5) << call;
    }
    const compiler::Explanation e = f.explanation();
    EXPECT_EQ(e.compiles, 2);  // one graph outside a region, one inside: both reused
    ASSERT_EQ(e.recompiles.size(), 1u);
    EXPECT_EQ(e.recompiles[0], first_inside ? "autocast is off, expected cpu in bfloat16"
                                            : "autocast is cpu in bfloat16, expected off");
  }
}

// A compiled training step under autocast: its backward graph gives eager autocast's
// gradients (the casts' backward returns them in the parameters' dtype).
TEST_F(Autocast, ACompiledStepUnderAutocastGivesEagerGradients) {
  const Tensor x = randn({16, 8}), target = randn({16, 3});
  const Tensor w = randn({8, 3}).requires_grad_();
  const auto loss_of = [](const Tensor& a, const Tensor& b, const Tensor& t) {
    return mse_loss(mm(a, b).relu(), t);
  };
  Tensor eager_loss;
  {
    autocast::Guard amp("cpu");
    eager_loss = loss_of(x, w, target);
  }
  eager_loss.backward();
  const Tensor eager_grad = w.grad().clone();
  w.set_grad(Tensor());
  auto f = compile(loss_of);
  for (int step = 0; step < 2; ++step) {
    Tensor loss;
    {
      autocast::Guard amp("cpu");
      loss = f(x, w, target);
    }
    EXPECT_EQ(loss.dtype(), kF32);  // mse_loss is on the float32 list
    loss.backward();
    ASSERT_TRUE(w.grad().defined());
    EXPECT_EQ(w.grad().dtype(), kF32);
    EXPECT_LT(max_difference(w.grad(), eager_grad), 0.02 * eager_grad.abs().max().item<double>());
    w.set_grad(Tensor());
  }
  const compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 1);
  EXPECT_FALSE(e.backward_graph.empty());
}

}  // namespace
}  // namespace loom
