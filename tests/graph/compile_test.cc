// loom::compile (loom/compile.h) and the passes it runs (loom/graph_passes.h): results
// equal to eager code, fused kernels, guards and recompiles, automatic dynamic shapes,
// graph breaks, host reads, modules and training through a compiled forward, the kernel
// cache, and each kind of bad input with its message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../frontend/frontend_test_util.h"
#include "compile_test_util.h"
#include "loom/compile.h"
#include "loom/compiler_api.h"
#include "loom/core/read_section.h"
#include "loom/dispatcher/extensions.h"
#include "loom/graph_interpreter.h"
#include "loom/graph_passes.h"
#include "loom/graph_proto.h"
#include "loom/loom.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace loom {
namespace {

using test::expect_error;
using test::expect_near;
using test::values;

class CompileTest : public test::CompileCacheTest {};

Tensor chain(const Tensor& x, const Tensor& y) {
  return ((x * 2 + 1).sin().exp().tanh() * y + x).relu().sigmoid();
}

TEST_F(CompileTest, PointwiseChainMatchesEagerAndRunsOneKernel) {
  manual_seed(0);
  Tensor x = randn({1000, 37}), y = randn({1000, 37});
  auto f = compile(chain);
  expect_near(f(x, y), chain(x, y));  // the capturing call
  Tensor x2 = randn({1000, 37}), y2 = randn({1000, 37});
  expect_near(f(x2, y2), chain(x2, y2));  // a compiled run
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 1);
  EXPECT_EQ(e.kernels, 1) << e.to_string();
  EXPECT_EQ(e.ops, 9);
  EXPECT_NE(e.graph.find("compiled::kernel_"), std::string::npos) << e.graph;
  EXPECT_EQ(e.graph.find("loom::sin"), std::string::npos) << e.graph;
}

TEST_F(CompileTest, FusedKernelsBroadcastMixDtypesAndKeepNaNs) {
  Tensor x = randn({4, 1, 5});
  Tensor y = randn({3, 1});  // broadcasts: a strided input
  Tensor n = full({4, 3, 5}, std::nan(""));
  auto f = compile([](const Tensor& x, const Tensor& y, const Tensor& n) {
    Tensor m = maximum(x + y, n);             // NaN propagates
    Tensor c = (x > 0.5).logical_and(y < 0);  // bool
    Tensor w = where(c, x * 3, y - 1);
    return std::vector<Tensor>{m, w, clamp(x, -0.5, 0.5).abs() + 1};
  });
  for (int i = 0; i < 2; ++i) {
    std::vector<Tensor> got = f(x, y, n);
    expect_near(got[0], maximum(x + y, n));
    expect_near(got[1], where((x > 0.5).logical_and(y < 0), x * 3, y - 1));
    expect_near(got[2], clamp(x, -0.5, 0.5).abs() + 1);
  }
  EXPECT_GE(f.explanation().kernels, 1);

  Tensor i = arange(12).view({3, 4});  // int64 arithmetic
  auto g = compile([](const Tensor& i) { return (i * 3 - 7).relu() + i.neg(); });
  g(i);
  std::vector<double> got = values(g(i)), want = values((i * 3 - 7).relu() + i.neg());
  EXPECT_EQ(got, want);
  EXPECT_EQ(g(i).dtype(), ScalarType::Int64);
}

// softmax, layer_norm, GELU and a sum over the last dimension: one row kernel
// (Note [Row kernels]), inputs broadcast (the affine weight) and one-element.
Tensor norm_block(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& s) {
  Tensor h = layer_norm(softmax(x * s, -1) + x, {x.size(-1)}, w, b, 1e-5);
  h = gelu(h, "tanh") * 2;
  return amax(h, {-1}, true) + sum(h, std::vector<int64_t>{-1}, true) + h;
}

TEST_F(CompileTest, SoftmaxLayerNormAndReductionsFuseIntoARowKernel) {
  manual_seed(6);
  Tensor x = randn({6, 5, 33}), w = randn({33}), b = randn({33}), s = full({}, 0.7);
  auto f = compile(norm_block);
  for (int i = 0; i < 2; ++i) expect_near(f(x, w, b, s), norm_block(x, w, b, s), 1e-4);
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.kernels, 1) << e.graph;
  EXPECT_EQ(e.graph.find("layer_norm"), std::string::npos) << e.graph;
  // a reduction without keepdim can end a run, not feed it
  auto g = compile([](const Tensor& x) {
    return (log_softmax(x.exp(), -1) * 3).mean(std::vector<int64_t>{-1});
  });
  for (int i = 0; i < 2; ++i) {
    expect_near(g(x), (log_softmax(x.exp(), -1) * 3).mean(std::vector<int64_t>{-1}), 1e-4);
  }
  EXPECT_EQ(g.explanation().kernels, 1) << g.explanation().graph;
}

TEST_F(CompileTest, GuardsRecompileWithTheirReason) {
  auto f = compile([](const Tensor& x) { return (x + 1) * 2; });
  Tensor x = randn({8});
  f(x);
  f(x);
  EXPECT_EQ(f.explanation().compiles, 1);
  Tensor d = x.to(ScalarType::Float64);
  expect_near(f(d), (d + 1) * 2);
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 2);
  ASSERT_EQ(e.recompiles.size(), 1u);
  EXPECT_NE(e.recompiles[0].find("dtype is float64, expected float32"), std::string::npos)
      << e.recompiles[0];
  Tensor t = randn({8, 2}).t();  // strides change: a new layout
  expect_near(f(t), (t + 1) * 2);
  EXPECT_EQ(f.explanation().compiles, 3);
  f(x);  // the first specialisation still holds
  f(d);
  EXPECT_EQ(f.explanation().compiles, 3);
}

TEST_F(CompileTest, TenBatchSizesCompileAtMostTwice) {
  auto f = compile([](const Tensor& x) {
    Tensor flat = x.view({x.size(0), -1});
    return (flat * 2).sigmoid() + flat.sum(1, true);
  });
  for (int64_t batch : {64, 32, 17, 100, 5, 8, 256, 3, 64, 90}) {
    Tensor x = randn({batch, 3, 4});
    Tensor flat = x.view({batch, -1});
    expect_near(f(x), (flat * 2).sigmoid() + flat.sum(1, true));
  }
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 2) << e.to_string();
  EXPECT_NE(e.guards[0].find("s(>=2)"), std::string::npos) << e.guards[0];
  // a size of 1 changes broadcasting: specialised again
  Tensor one = randn({1, 3, 4});
  expect_near(f(one), (one.view({1, -1}) * 2).sigmoid() + one.view({1, -1}).sum(1, true));
  EXPECT_EQ(f.explanation().compiles, 3);
}

TEST_F(CompileTest, DynamicFalseSpecialisesEverySize) {
  CompileOptions o;
  o.dynamic = false;
  auto f = compile([](const Tensor& x) { return x * 2; }, o);
  for (int64_t n : {4, 5, 6}) f(randn({n}));
  EXPECT_EQ(f.explanation().compiles, 3);
}

TEST_F(CompileTest, TheRecompileLimitFallsBackToEager) {
  CompileOptions o;
  o.recompile_limit = 2;
  o.dynamic = false;
  auto f = compile([](const Tensor& x) { return x + 1; }, o);
  for (int64_t n : {2, 3, 4, 5}) {
    Tensor x = randn({n});
    expect_near(f(x), x + 1);
  }
  compiler::Explanation e = f.explanation();
  EXPECT_TRUE(e.eager);
  EXPECT_NE(e.eager_reason.find("recompile limit (2)"), std::string::npos) << e.eager_reason;
  EXPECT_EQ(e.compiles, 2);
}

TEST_F(CompileTest, DataDependentShapesBreakTheGraph) {
  auto fn = [](const Tensor& x) {
    Tensor idx = nonzero(x > 0);
    return (x * 2 + 1).sum() + idx.to(ScalarType::Float32).sum();
  };
  Tensor x = randn({50});
  auto f = compile(fn);
  for (int i = 0; i < 3; ++i) {
    Tensor xi = randn({50});
    expect_near(f(xi), fn(xi));
  }
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 1);
  ASSERT_EQ(e.breaks.size(), 1u);
  EXPECT_EQ(e.breaks[0].op, "loom::nonzero");
  EXPECT_EQ(e.graphs, 2);

  CompileOptions full;
  full.fullgraph = true;
  auto g = compile(fn, full);
  expect_error([&] { g(x); }, "compile",
               {"fullgraph=true", "loom::nonzero", "depends on the input's values"});
}

TEST_F(CompileTest, HostReadsAreGuardedByValue) {
  auto fn = [](const Tensor& x) {
    if (x.sum().item<double>() > 0) return x * 2;
    return x * 3;
  };
  auto f = compile(fn);
  Tensor pos = full({4}, 1.0), neg = full({4}, -1.0);
  expect_near(f(pos), pos * 2);
  expect_near(f(pos), pos * 2);
  expect_near(f(neg), neg * 3);  // the read value changed: captured again
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 2);
  ASSERT_EQ(e.recompiles.size(), 1u);
  EXPECT_NE(e.recompiles[0].find("read on the host"), std::string::npos) << e.recompiles[0];
}

TEST_F(CompileTest, ModulesReadTheirParametersAtEachCall) {
  manual_seed(1);
  nn::Sequential net(nn::Linear(6, 5), nn::ReLU(), nn::Linear(5, 3));
  auto f = compile(net);
  Tensor x = randn({4, 6});
  expect_near(f(x), net->forward(x));
  {
    NoGradGuard no_grad;
    for (auto& [name, p] : net->named_parameters()) p.mul_(0.5);
  }
  expect_near(f(x), net->forward(x));  // updated in place: the graph reads them
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 1);
  EXPECT_NE(e.graph.find("%0_weight: float32[5, 6] parameter"), std::string::npos) << e.graph;
  net->eval();
  f(x);
  EXPECT_EQ(f.explanation().compiles, 2);  // the training mode is guarded
}

TEST_F(CompileTest, GradientsFlowThroughACompiledForward) {
  manual_seed(2);
  Tensor w = randn({5});
  w.requires_grad_();
  auto fn = [&w](const Tensor& x) { return ((x * w).tanh() * 3 + 1).sum(); };
  auto f = compile(fn);
  Tensor x = randn({5});
  for (int step = 0; step < 2; ++step) {
    w.set_grad(Tensor());
    f(x).backward();
    Tensor compiled_grad = w.grad().clone();
    w.set_grad(Tensor());
    fn(x).backward();
    expect_near(compiled_grad, w.grad());
  }
  EXPECT_EQ(f.explanation().compiles, 1);
}

TEST_F(CompileTest, TrainingCompilesForwardAndBackward) {
  manual_seed(3);
  nn::Sequential net(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 4));
  auto loss_of = [](const Tensor& out, const Tensor& target) {
    return ((out - target) * (out - target)).sigmoid().mean();
  };
  auto step = compile(
      [&](const Tensor& x, const Tensor& target) { return loss_of(net->forward(x), target); });
  Tensor x = randn({5, 8}), target = randn({5, 4});
  for (int i = 0; i < 3; ++i) {
    for (auto& [name, p] : net->named_parameters()) p.set_grad(Tensor());
    Tensor compiled_loss = step(x, target);
    compiled_loss.backward();
    std::vector<Tensor> compiled_grads;
    for (auto& [name, p] : net->named_parameters()) compiled_grads.push_back(p.grad().clone());
    for (auto& [name, p] : net->named_parameters()) p.set_grad(Tensor());
    Tensor eager_loss = loss_of(net->forward(x), target);
    eager_loss.backward();
    expect_near(compiled_loss, eager_loss);
    size_t k = 0;
    for (auto& [name, p] : net->named_parameters()) {
      SCOPED_TRACE(name);
      expect_near(compiled_grads[k++], p.grad(), 1e-4);
    }
  }
  compiler::Explanation e = step.explanation();
  EXPECT_EQ(e.compiles, 1);
  EXPECT_GE(e.kernels, 2) << e.to_string();  // forward and backward pointwise runs fused
  EXPECT_NE(e.backward_graph.find("loom::mm"), std::string::npos) << e.backward_graph;
  auto forward = compile([&](const Tensor& x) { return net->forward(x); });
  EXPECT_EQ(forward(x).grad_fn_name(), "AddmmBackward0");  // the capturing call runs eagerly
  EXPECT_EQ(forward(x).grad_fn_name(), "CompiledFunctionBackward");
}

// The `loom train --compile` loop: forward and loss compiled, backward, an Adam step.
TEST_F(CompileTest, TrainingStepsFollowTheEagerLossCurve) {
  auto make = [] {
    manual_seed(4);
    return nn::Sequential(nn::Flatten(), nn::Linear(12, 16), nn::ReLU(), nn::Linear(16, 3));
  };
  nn::Sequential eager_net = make(), compiled_net = make();
  nn::CrossEntropyLoss criterion;
  optim::Adam eager_opt(eager_net->parameters(), optim::AdamOptions(0.01));
  optim::Adam compiled_opt(compiled_net->parameters(), optim::AdamOptions(0.01));
  auto step = compile([&](const Tensor& x, const Tensor& y) {
    Tensor logits = compiled_net->forward(x);
    return std::tuple<Tensor, Tensor>(logits, criterion(logits, y));
  });
  manual_seed(5);
  for (int i = 0; i < 6; ++i) {
    Tensor x = randn({8, 3, 4});
    Tensor y = randint(0, 3, {8});
    eager_opt.zero_grad();
    Tensor eager_loss = criterion(eager_net->forward(x), y);
    eager_loss.backward();
    eager_opt.step();
    compiled_opt.zero_grad();
    auto [logits, loss] = step(x, y);
    loss.backward();
    compiled_opt.step();
    SCOPED_TRACE("step " + std::to_string(i));
    expect_near(loss, eager_loss, 1e-4);
  }
  EXPECT_EQ(step.explanation().compiles, 1);
}

TEST_F(CompileTest, ACapturedGraphSavesLoadsAndRunsWithoutItsSource) {
  manual_seed(7);
  nn::Sequential net(nn::Linear(4, 3), nn::GELU());
  auto f = compile(net);
  Tensor x = randn({2, 4});
  Tensor want = f(x);
  graph::Graph g = graph::parse_graph(graph::serialize_graph(f.captured_graph()));
  std::vector<Tensor> inputs = {x};
  for (auto& [name, t] : f.captured_state()) inputs.push_back(t);
  EXPECT_EQ(f.captured_state().front().first, "0.weight");
  graph::Interpreter run(g, Device{});
  expect_near(run(inputs).at(0), want);
}

TEST_F(CompileTest, ExportedProgramsCompile) {
  ExportedProgram ep =
      load_exported(std::string(LOOM_SOURCE_DIR) + "/tests/models/cnn_batch_norm.pt2");
  auto f = compile(ep);
  manual_seed(8);
  Tensor x = randn({8, 1, 28, 28});
  for (int i = 0; i < 2; ++i) expect_near(f(std::vector<Tensor>{x}).at(0), ep({x}).at(0), 1e-4);
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 1);
  EXPECT_GE(e.kernels, 1) << e.graph;
}

TEST_F(CompileTest, ACompiledFunctionInsideAnotherIsPartOfItsGraph) {
  auto inner = compile([](const Tensor& x) { return (x * 3).exp(); });
  auto outer = compile([&inner](const Tensor& x) { return inner(x + 1).sigmoid(); });
  Tensor x = randn({16});
  for (int i = 0; i < 2; ++i) expect_near(outer(x), ((x + 1) * 3).exp().sigmoid());
  EXPECT_EQ(outer.explanation().kernels, 1) << outer.explanation().graph;  // one run of 4 ops
  EXPECT_EQ(inner.explanation().compiles, 0);  // it ran inside the outer capture only
}

TEST_F(CompileTest, InPlaceWritesHappenOnReplay) {
  auto f = compile([](const Tensor& x) {
    x.add_(1);
    return x * 2;
  });
  Tensor x = zeros({3});
  f(x);
  Tensor y = f(x);
  EXPECT_EQ(values(x), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{4, 4, 4}));
}

// Note [In-place ops in fused kernels]: writes to held tensors join the fused run.
TEST_F(CompileTest, InPlaceOpsOnHeldTensorsFuseIntoTheKernel) {
  Tensor dense = ones({64});
  Tensor strided = zeros({8, 4}).t();  // [4, 8], not contiguous: written back by copy_
  auto f = compile([&](const Tensor& x) {
    dense.mul_(0.5).add_(x);
    strided.add_(x.narrow(0, 0, 32).reshape({4, 8})).mul_(2);
    return dense * 3;
  });
  Tensor x = randn({64});
  Tensor want_dense = ones({64}), want_strided = zeros({4, 8});
  for (int i = 0; i < 3; ++i) {
    Tensor y = f(x);
    want_dense = want_dense * 0.5 + x;
    want_strided = (want_strided + x.narrow(0, 0, 32).reshape({4, 8})) * 2;
    SCOPED_TRACE("call " + std::to_string(i));
    expect_near(dense, want_dense);
    expect_near(strided, want_strided);
    expect_near(y, want_dense * 3);
  }
  compiler::Explanation e = f.explanation();
  EXPECT_EQ(e.compiles, 1);
  EXPECT_EQ(e.kernels, 2) << e.graph;
  // the dense tensor is written by its kernel, the strided one by one copy_ after it
  const size_t copy = e.graph.find("loom::copy_");
  EXPECT_NE(copy, std::string::npos) << e.graph;
  EXPECT_EQ(e.graph.find("loom::copy_", copy + 1), std::string::npos) << e.graph;
}

// A kernel that writes into a tensor bumps that tensor's version only: a tensor it just
// reads may be saved for a backward that checks its version.
TEST_F(CompileTest, FusedWritesBumpOnlyTheWrittenTensorsVersion) {
  Tensor w = randn({16}).requires_grad_();
  Tensor state = zeros({16});
  auto f = compile([&](const Tensor& x) {
    state.mul_(0.5).add_(w.detach() * x);
    return state * 1;
  });
  Tensor y = (w * w).sum();  // saves w
  Tensor x = randn({16});
  {
    NoGradGuard no_grad;
    f(x);
    f(x);  // the kernel: writes state, reads w
  }
  EXPECT_GE(f.explanation().kernels, 1) << f.explanation().graph;
  y.backward();  // w's version is the one saved
  expect_near(w.grad(), w.detach() * 2);
  expect_near(state, (w.detach() * x) * 1.5);
}

// A tensor read through a view after a write must see the write: such a tensor stays with
// its in-place ops, unfused.
TEST_F(CompileTest, WritesToATensorReadThroughAViewAreNotFused) {
  Tensor base = zeros({8});
  Tensor view = base.view({2, 4});
  auto f = compile([&](const Tensor& x) {
    base.add_(x).mul_(2);
    return view * 1 + 1;
  });
  Tensor x = ones({8});
  f(x);
  Tensor y = f(x);
  EXPECT_EQ(values(base), std::vector<double>(8, 6));  // (0 + 1) * 2, then (2 + 1) * 2
  EXPECT_EQ(values(y), std::vector<double>(8, 7));
  EXPECT_NE(f.explanation().graph.find("loom::add_.Tensor"), std::string::npos)
      << f.explanation().graph;
}

// compile(optimizer): the update fused, equal to the eager update step after step,
// across a learning-rate change and a loaded state.
TEST_F(CompileTest, ACompiledOptimizerStepFollowsTheEagerOne) {
  auto make = [] {
    manual_seed(11);
    return nn::Sequential(nn::Linear(6, 5), nn::Tanh(), nn::Linear(5, 2));
  };
  nn::Sequential eager_net = make(), compiled_net = make();
  auto options = optim::AdamOptions(0.05).capturable(true).weight_decay(0.1);
  optim::AdamW eager_opt(eager_net->parameters(), options);
  optim::AdamW compiled_opt(compiled_net->parameters(), options);
  auto step = compile(compiled_opt);
  manual_seed(12);
  auto train = [&](int steps) {
    for (int i = 0; i < steps; ++i) {
      Tensor x = randn({4, 6});
      for (auto [net, opt] : {std::pair<nn::Sequential*, optim::Optimizer*>{&eager_net, &eager_opt},
                              {&compiled_net, &compiled_opt}}) {
        opt->zero_grad();
        (*net)->forward(x).pow(2).sum().backward();
      }
      eager_opt.step();
      step();
      std::vector<Tensor> want = eager_net->parameters(), got = compiled_net->parameters();
      for (size_t p = 0; p < want.size(); ++p) expect_near(got[p], want[p], 1e-5);
    }
  };
  train(4);
  compiler::Explanation e = step.explanation();
  EXPECT_EQ(e.compiles, 1);
  EXPECT_EQ(e.kernels, 8) << e.graph;  // per parameter: the bias corrections, the update
  EXPECT_EQ(e.graph.find("loom::lerp_"), std::string::npos) << e.graph;
  for (auto& [key, t] : compiled_opt.state_dict()) {
    if (key == "state.0.0.step") {
      EXPECT_EQ(t.item<double>(), 4);  // the step tensor's count
    }
  }
  eager_opt.set_lr(0.01);
  compiled_opt.set_lr(0.01);
  train(2);
  EXPECT_EQ(step.explanation().compiles, 2);
  EXPECT_NE(step.explanation().recompiles.back().find("number argument 0 is 0.01"),
            std::string::npos)
      << step.explanation().recompiles.back();
  compiled_opt.load_state_dict(eager_opt.state_dict());
  train(2);  // an eager step makes the state, then a capture
  EXPECT_EQ(step.explanation().compiles, 3);
}

TEST_F(CompileTest, OptimizersThatCountStepsOnTheHostAreRefused) {
  nn::Linear net(3, 2);
  optim::Adam adam(net->parameters());
  expect_error([&] { compile(adam); }, "compile", {"counts steps on the host", "capturable(true)"});
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  auto step = compile(sgd);
  Tensor x = randn({2, 3});
  Tensor before = net->weight.clone();
  for (int i = 0; i < 3; ++i) {
    sgd.zero_grad();
    net->forward(x).sum().backward();
    step();
  }
  EXPECT_EQ(step.explanation().compiles, 1);
  EXPECT_GT(values((before - net->weight).abs().sum())[0], 0);
}

// Note [Buffer reuse]
TEST_F(CompileTest, KernelsWriteIntoInputsThatDieThere) {
  const std::filesystem::path debug = cache_ / "debug";
  setenv("LOOM_COMPILE_DEBUG", debug.c_str(), 1);
  auto f = compile([](const Tensor& x) {
    Tensor u = (x + 1.25).exp().cumsum(0);  // cumsum is not fused: it ends the first run
    return (u * 0.01).tanh();               // u dies in the second run
  });
  Tensor x = randn({16, 8});
  f(x);
  Tensor y = f(x);
  unsetenv("LOOM_COMPILE_DEBUG");
  expect_near(y, ((x + 1.25).exp().cumsum(0) * 0.01).tanh());
  std::vector<std::string> reusing;
  for (const auto& entry : std::filesystem::directory_iterator(debug)) {
    if (entry.path().extension() != ".program") continue;
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find(" into ") != std::string::npos) reusing.push_back(text);
  }
  ASSERT_EQ(reusing.size(), 1u);  // the second kernel; the first reads x, which lives on
  EXPECT_NE(reusing[0].find("loom::tanh"), std::string::npos) << reusing[0];
}

// Note [Constant folding]
TEST_F(CompileTest, ConstantsFoldOnceAndNeitherLeakNorAccumulate) {
  auto f = compile([](const Tensor& x) {
    Tensor mask = ones({4, 4}).triu();  // the same at every call: folded
    Tensor sum = zeros({4, 4});         // written: made at every call
    sum.add_(x * mask);
    return std::tuple<Tensor, Tensor>(sum, ones({2}));  // returned: made at every call
  });
  Tensor x = randn({4, 4});
  auto [a, first] = f(x);
  auto [b, second] = f(x);
  expect_near(b, x * ones({4, 4}).triu());  // not twice x: the zeros were made again
  expect_near(a, b);
  EXPECT_NE(first.data_ptr(), second.data_ptr());
  const std::string g = f.explanation().graph;
  EXPECT_EQ(g.find("loom::triu"), std::string::npos) << g;
  EXPECT_NE(g.find("_folded_0"), std::string::npos) << g;
  EXPECT_NE(g.find("loom::fill_.Scalar(self=%empty_1, value=0)"), std::string::npos) << g;
}

TEST_F(CompileTest, TheEagerBackendNeedsNoKernels) {
  CompileOptions o;
  o.backend = "eager";
  auto f = compile(chain, o);
  Tensor x = randn({10}), y = randn({10});
  f(x, y);
  expect_near(f(x, y), chain(x, y));
  EXPECT_EQ(f.explanation().kernels, 0);
}

TEST_F(CompileTest, BadOptionsAndResultsAreRefused) {
  auto id = [](const Tensor& x) { return x; };
  CompileOptions o;
  o.backend = "inductor";
  expect_error([&] { compile(id, o); }, "compile", {"unknown backend 'inductor'", "loom or eager"});
  o = {};
  o.mode = "fast";
  expect_error([&] { compile(id, o); }, "compile", {"unknown mode 'fast'", "reduce-overhead"});
  o = {};
  o.recompile_limit = 0;
  expect_error([&] { compile(id, o); }, "compile",
               std::vector<std::string>{"recompile_limit must be at least 1, found 0"});
  auto undefined = compile([](const Tensor&) { return Tensor(); });
  expect_error([&] { undefined(zeros({2})); }, "compile",
               std::vector<std::string>{"returned an undefined tensor as output 0"});
}

TEST_F(CompileTest, AMissingCompilerIsNamedAndEagerKeepsWorking) {
  setenv("LOOM_CXX", "/nonexistent/c++", 1);
  auto f = compile(chain);
  Tensor x = randn({8}), y = randn({8});
  expect_error([&] { f(x, y); }, "compiler",
               {"no C++ compiler found", "LOOM_CXX='/nonexistent/c++'"});
  unsetenv("LOOM_CXX");
  expect_near(chain(x, y), chain(x, y));  // eager ops still run
  auto g = compile(chain);
  expect_near(g(x, y), chain(x, y));
}

TEST_F(CompileTest, AnUnwritableCacheDirectoryIsNamed) {
  setenv("LOOM_CACHE_DIR", "/proc/loom-kernel-cache", 1);  // cannot be created
  // a kernel no other test builds (this process may have built theirs already)
  auto fn = [](const Tensor& x) { return (x * 7.25).cos().abs(); };
  auto f = compile(fn);
  Tensor x = randn({8});
  expect_error(
      [&] { f(x); }, "compiler",
      {"the kernel cache directory '/proc/loom-kernel-cache' cannot be created", "LOOM_CACHE_DIR"});
  expect_near(fn(x), (x * 7.25).cos().abs());  // eager ops still run
}

// The passes on hand-made graphs.
TEST_F(CompileTest, DeadCodeAndCommonSubexpressionsGo) {
  auto f = [](const Tensor& x) {
    Tensor a = x.exp();
    Tensor b = x.exp();  // the same call
    Tensor unused = x.cos();
    (void)unused;
    return a + b;
  };
  CompileOptions o;
  o.backend = "eager";
  auto c = compile(f, o);
  Tensor x = randn({4});
  expect_near(c(x), f(x));
  compiler::Explanation e = c.explanation();
  EXPECT_EQ(e.ops, 4);
  EXPECT_EQ(e.graph.find("loom::cos"), std::string::npos) << e.graph;
  size_t first = e.graph.find("loom::exp");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(e.graph.find("loom::exp", first + 1), std::string::npos) << e.graph;
}

const char* kProbeProgram =
    "loom-kernel 1\nin a0 float32 dense\nv0 float32 float32 = loom::mul.Tensor a0 #3\n"
    "v1 float32 float32 = loom::add.Tensor v0 #1 #1\nout v1\n";

// kProbeProgram for a CUDA GPU: built by NVRTC, cached as KEY.cuda.
const std::string kCudaProbeProgram =
    std::string("loom-kernel 1\ntarget cuda\n") + (kProbeProgram + std::strlen("loom-kernel 1\n"));

// Builds kProbeProgram (or, `cuda`, kCudaProbeProgram) into `dir`; returns where it came
// from (0 built, 1 this process, 2 the disk cache).
int build_probe(const std::string& dir, bool cuda = false) {
  LoomKernelBuildArgs args{};
  args.struct_size = sizeof(args);
  args.program = cuda ? kCudaProbeProgram.c_str() : kProbeProgram;
  args.cache_dir = dir.c_str();
  ReadSection section;
  const auto* api =
      static_cast<const LoomCompilerApi*>(dispatch::find_extension(LOOM_COMPILER_EXTENSION_NAME));
  dispatch::check_table_error(api->build_kernel(&args), "compiler");
  return args.out_source;
}

// Run by CacheEntriesAreCheckedInANewProcess in a process of its own (a process keeps
// every kernel it built, so only a new one reads the disk cache).
TEST_F(CompileTest, CacheProbe) {
  const char* dir = std::getenv("LOOM_COMPILE_PROBE_DIR");
  const char* expect = std::getenv("LOOM_COMPILE_PROBE_EXPECT");
  if (dir == nullptr || expect == nullptr) {
    GTEST_SKIP() << "run by CacheEntriesAreCheckedInANewProcess in a process of its own";
  }
  EXPECT_EQ(build_probe(dir, std::getenv("LOOM_COMPILE_PROBE_CUDA") != nullptr), std::atoi(expect));
}

// Runs CacheProbe in a new process, expecting `expect` from build_probe.
int probe_in_new_process(const std::string& dir, int expect, bool cuda = false) {
  std::string command =
      "LOOM_COMPILE_PROBE_DIR='" + dir + "' LOOM_COMPILE_PROBE_EXPECT=" + std::to_string(expect) +
      (cuda ? " LOOM_COMPILE_PROBE_CUDA=1" : "") + " LOOM_PLUGIN_PATH='" LOOM_PLUGIN_DIR "' " +
      std::filesystem::read_symlink("/proc/self/exe").string() +
      " --gtest_filter=CompileTest.CacheProbe > /dev/null 2>&1";
  return std::system(command.c_str());
}

TEST_F(CompileTest, CacheEntriesAreCheckedInANewProcess) {
  const std::string dir = (cache_ / "kernels").string();
  EXPECT_EQ(build_probe(dir), 0);  // built
  EXPECT_EQ(build_probe(dir), 1);  // this process has it
  auto probe = [&](int expect) { return probe_in_new_process(dir, expect); };
  EXPECT_EQ(probe(2), 0);  // a new process loads the entry from disk
  std::filesystem::path so;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".so") so = entry.path();
  }
  ASSERT_FALSE(so.empty());
  {  // truncated: a new file renamed over the entry (this process has the old one mapped)
    std::filesystem::path part = so;
    part += ".part";
    std::filesystem::copy_file(so, part);
    std::filesystem::resize_file(part, 100);
    std::filesystem::rename(part, so);
  }
  EXPECT_EQ(probe(0), 0);  // detected and built again
  EXPECT_EQ(probe(2), 0);  // and sound again
  {
    std::ofstream meta(so.replace_extension(".meta"), std::ios::trunc);
    meta << "loom-kernel-cache 1\nkey nonsense\n";  // a meta that does not match
  }
  EXPECT_EQ(probe(0), 0);
}

// CUDA images have disk entries too (KEY.cuda and KEY.meta), checked the same way.
TEST_F(CompileTest, CudaCacheEntriesAreCheckedInANewProcess) {
  const std::string dir = (cache_ / "kernels").string();
  try {
    EXPECT_EQ(build_probe(dir, true), 0);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Unimplemented) GTEST_SKIP() << e.what();  // no NVRTC here
    throw;
  }
  EXPECT_EQ(probe_in_new_process(dir, 2, true), 0);  // loaded from disk
  std::filesystem::path image;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".cuda") image = entry.path();
  }
  ASSERT_FALSE(image.empty());
  std::filesystem::resize_file(image, 10);           // truncated
  EXPECT_EQ(probe_in_new_process(dir, 0, true), 0);  // detected and built again
  EXPECT_EQ(probe_in_new_process(dir, 2, true), 0);
}

// A `target cuda` program becomes CUDA C++ that NVRTC compiles, and a `target hip` one the
// same source that hiprtc compiles, GPU or not (the kernels run in the GPU plugins' tests,
// tests/gpu/cuda/compile_test.cc, where there is a GPU). Each is skipped where its runtime
// compiler is missing.
TEST_F(CompileTest, GpuKernelProgramsBuildWithNvrtcAndHiprtc) {
  int built = 0;
  std::string missing;
  for (const std::string target : {"cuda", "hip"}) {
    SCOPED_TRACE(target);
    const std::filesystem::path debug = cache_ / ("debug-" + target);
    const std::string program =
        "loom-kernel 1\ntarget " + target +
        "\nin a0 float32 dense\nin a1 float32 strided\nin a2 float32 scalar\n"
        "in a3 bool strided\n"
        "v0 float32 float32 = loom::sin a0\n"
        "v1 float32 float32 = loom::add.Tensor v0 a1 #2\n"
        "v2 float32 float32 = loom::remainder.Tensor v1 a2\n"
        "v3 float32 float32 = loom::where.self a3 v2 #nan\n"
        "v4 float32 float32 = loom::clamp v3 #-inf #1.5\n"
        "v5 bool float32 = loom::isnan v4\n"
        "v6 int64 int64 = loom::mul.Tensor a0 #3\n"
        "out v4 into a0\nout v5\nout v6\n";
    LoomKernelBuildArgs args{};
    args.struct_size = sizeof(args);
    args.cache_dir = "";
    args.program = program.c_str();
    const std::string debug_dir = debug.string();
    args.debug_dir = debug_dir.c_str();
    ReadSection section;
    const auto* api =
        static_cast<const LoomCompilerApi*>(dispatch::find_extension(LOOM_COMPILER_EXTENSION_NAME));
    try {
      dispatch::check_table_error(api->build_kernel(&args), "compiler");
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Unimplemented) throw;
      missing += std::string(e.what()) + "; ";  // no NVRTC or hiprtc here
      continue;
    }
    ++built;
    const std::string op = dispatch::OperatorHandle::from_abi(args.out_op).name();
    ASSERT_EQ(op.rfind("compiled::kernel_", 0), 0u) << op;
    std::ifstream source(debug / (op.substr(std::string("compiled::").size()) + ".cu"));
    std::string text((std::istreambuf_iterator<char>(source)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("__global__ void loom_cuda_kernel"), std::string::npos) << op;
    EXPECT_NE(text.find("__int_as_float(0x7fc00000)"), std::string::npos) << text;  // the NaN
    EXPECT_NE(text.find("float* q0"), std::string::npos) << text;  // written into a0: aliased
  }
  if (built == 0) GTEST_SKIP() << missing;
}

TEST_F(CompileTest, KernelProgramsAreChecked) {
  auto build = [](const std::string& program) {
    LoomKernelBuildArgs args{};
    args.cache_dir = "";
    args.struct_size = sizeof(args);
    args.program = program.c_str();
    ReadSection section;
    const auto* api =
        static_cast<const LoomCompilerApi*>(dispatch::find_extension(LOOM_COMPILER_EXTENSION_NAME));
    dispatch::check_table_error(api->build_kernel(&args), "compiler");
  };
  expect_error([&] { build("kernel 2\n"); }, "compiler", {"line 1", "loom-kernel 1"});
  expect_error([&] { build("loom-kernel 1\nin a0 float99 dense\n"); }, "compiler",
               {"line 2", "expected a dtype", "float99"});
  expect_error([&] { build("loom-kernel 1\nin a0 float32 dense\nout v3\n"); }, "compiler",
               {"line 3", "'v3' is not defined"});
  expect_error(
      [&] {
        build("loom-kernel 1\nin a0 float32 dense\nv0 float32 float32 = loom::mm a0 a0\nout v0\n");
      },
      "compiler", std::vector<std::string>{"'loom::mm' cannot be fused"});
  expect_error([&] { build("loom-kernel 1\nin a0 float32 dense\n"); }, "compiler",
               std::vector<std::string>{"no 'out' line"});
  const std::string add =
      "loom-kernel 1\nin a0 float32 dense\nin a1 float32 scalar\n"
      "v0 float32 float32 = loom::add.Tensor a0 a1 #1\n";
  expect_error([&] { build(add + "out v0 into a1\n"); }, "compiler",
               {"line 5", "expected a dense input"});
  expect_error([&] { build(add + "out v0 into v0\n"); }, "compiler",
               std::vector<std::string>{"expected an input, found a statement's value"});
  expect_error([&] { build(add + "out v0 into a0\nout v0 into a0\n"); }, "compiler",
               std::vector<std::string>{"input a0 is written into twice"});
  expect_error([&] { build(add + "out v0 onto a0\n"); }, "compiler",
               std::vector<std::string>{"'out NAME into INPUT'"});
  expect_error([&] { build("loom-kernel 1\ntarget tpu\n"); }, "compiler",
               {"line 2", "expected 'target cpu', 'target cuda' or 'target hip'"});
  expect_error([&] { build("loom-kernel 1\nin a0 float32 dense\ntarget cuda\n"); }, "compiler",
               std::vector<std::string>{"the 'target' line must come before the inputs"});
}

}  // namespace
}  // namespace loom
