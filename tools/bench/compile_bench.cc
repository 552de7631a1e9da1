// loom::compile on the CPU (tools/bench/run-compile-bench.sh): a 9-op pointwise chain on
// 4M float32 run eagerly and compiled; a training step (forward, loss, backward, Adam) of
// `loom train`'s MLP and CNN at batch 64, eager and with the forward and loss compiled
// (their backward with them); and (`--first-call`) the time of a compiled
// function's first call in a new process, which run-compile-bench.sh runs with an empty
// kernel cache (cold) and again with the cache it filled (warm). The PyTorch side is
// tools/bench/compile_peer.py.
#include <benchmark/benchmark.h>
#include <optional>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "bench_runtime.h"
#include "loom/compile.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace {

using namespace loom;

constexpr int64_t kElements = int64_t{4} << 20;

Tensor chain(const Tensor& x, const Tensor& y) {
  return ((x * 2 + 1).sin().exp().tanh() * y + x).relu().sigmoid();
}

struct Inputs {
  Tensor x, y;
};
const Inputs& inputs() {
  static const Inputs in = [] {
    bench::load_runtime();
    manual_seed(0);
    return Inputs{randn({kElements}), randn({kElements})};
  }();
  return in;
}

void BM_ChainEager(benchmark::State& state) {
  const Inputs& in = inputs();
  for (auto _ : state) benchmark::DoNotOptimize(chain(in.x, in.y));
}
BENCHMARK(BM_ChainEager)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ChainCompiled(benchmark::State& state) {
  const Inputs& in = inputs();
  auto f = compile(chain);
  f(in.x, in.y);  // capture and build outside the timing
  for (auto _ : state) benchmark::DoNotOptimize(f(in.x, in.y));
  state.counters["kernels"] = f.explanation().kernels;
}
BENCHMARK(BM_ChainCompiled)->Unit(benchmark::kMillisecond)->UseRealTime();

// softmax, layer_norm, GELU and a reduction over rows of 1024 (Note [Row kernels]).
Tensor norm_block(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor h = gelu(layer_norm(softmax(x, -1) + x, {x.size(-1)}, w, b, 1e-5), "tanh");
  return h + amax(h, {-1}, true);
}

struct BlockInputs {
  Tensor x, w, b;
};
const BlockInputs& block_inputs() {
  static const BlockInputs in = [] {
    bench::load_runtime();
    manual_seed(0);
    return BlockInputs{randn({4096, 1024}), randn({1024}), randn({1024})};
  }();
  return in;
}

void BM_NormBlockEager(benchmark::State& state) {
  const BlockInputs& in = block_inputs();
  for (auto _ : state) benchmark::DoNotOptimize(norm_block(in.x, in.w, in.b));
}
BENCHMARK(BM_NormBlockEager)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_NormBlockCompiled(benchmark::State& state) {
  const BlockInputs& in = block_inputs();
  auto f = compile(norm_block);
  f(in.x, in.w, in.b);
  for (auto _ : state) benchmark::DoNotOptimize(f(in.x, in.w, in.b));
  state.counters["kernels"] = f.explanation().kernels;
}
BENCHMARK(BM_NormBlockCompiled)->Unit(benchmark::kMillisecond)->UseRealTime();

// The CNN's first convolution and its relu (batch 64): conv2d then relu, and the fused
// epilogue loom::compile makes of them (Note [Fused epilogues]).
struct ConvInputs {
  Tensor x, w, b;
};
const ConvInputs& conv_inputs() {
  static const ConvInputs in = [] {
    bench::load_runtime();
    manual_seed(0);
    return ConvInputs{randn({64, 1, 28, 28}), randn({32, 1, 3, 3}), randn({32})};
  }();
  return in;
}
void BM_ConvReluSeparate(benchmark::State& state) {
  const ConvInputs& in = conv_inputs();
  for (auto _ : state) benchmark::DoNotOptimize(relu(conv2d(in.x, in.w, in.b, 1, 1)));
}
void BM_ConvReluFused(benchmark::State& state) {
  const ConvInputs& in = conv_inputs();
  for (auto _ : state) benchmark::DoNotOptimize(_conv2d_activation(in.x, in.w, in.b, 1, 1));
}
BENCHMARK(BM_ConvReluSeparate)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvReluFused)->Unit(benchmark::kMicrosecond)->UseRealTime();

// `loom train`'s models (tools/loom/train.cc).
nn::Sequential make_mlp() {
  return nn::Sequential(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
}
nn::Sequential make_cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(3136, 128),
                        nn::ReLU(), nn::Linear(128, 10));
}

// One training step per iteration; `compiled`: the forward and loss, and the optimizer's
// step (a capturable Adam), through loom::compile.
void training_step(benchmark::State& state, nn::Sequential net, bool compiled) {
  bench::load_runtime();
  manual_seed(0);
  optim::Adam optimizer(net->parameters(), optim::AdamOptions(1e-3).capturable(compiled));
  nn::CrossEntropyLoss criterion;
  Tensor x = randn({64, 1, 28, 28});
  Tensor y = randint(0, 10, {64});
  auto eager = [&](const Tensor& x, const Tensor& y) { return criterion(net(x), y); };
  auto forward = compile(eager);
  std::optional<compiler::CompiledStep> update;
  if (compiled) update.emplace(optimizer, CompileOptions{});
  for (auto _ : state) {
    optimizer.zero_grad();
    Tensor loss = compiled ? forward(x, y) : eager(x, y);
    loss.backward();
    if (compiled) {
      (*update)();
    } else {
      optimizer.step();
    }
  }
  if (compiled) {
    state.counters["kernels"] = forward.explanation().kernels + update->explanation().kernels;
  }
}
// Adam's update alone over the MLP's parameters (fixed gradients): eager (per-parameter
// ops), eager with capturable(true), and compiled (the capturable update, fused).
void adam_update(benchmark::State& state, bool capturable, bool compiled) {
  bench::load_runtime();
  manual_seed(0);
  nn::Sequential net = make_mlp();
  for (const Tensor& p : net->parameters()) p.set_grad(randn_like(p));
  optim::Adam optimizer(net->parameters(), optim::AdamOptions(1e-3).capturable(capturable));
  std::optional<compiler::CompiledStep> update;
  if (compiled) update.emplace(optimizer, CompileOptions{});
  for (auto _ : state) {
    if (compiled) {
      (*update)();
    } else {
      optimizer.step();
    }
  }
}
void BM_AdamUpdateEager(benchmark::State& state) {
  adam_update(state, false, false);
}
void BM_AdamUpdateCapturableEager(benchmark::State& state) {
  adam_update(state, true, false);
}
void BM_AdamUpdateCompiled(benchmark::State& state) {
  adam_update(state, true, true);
}
BENCHMARK(BM_AdamUpdateEager)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AdamUpdateCapturableEager)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AdamUpdateCompiled)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_MlpStepEager(benchmark::State& state) {
  bench::load_runtime();
  training_step(state, make_mlp(), false);
}
void BM_MlpStepCompiled(benchmark::State& state) {
  bench::load_runtime();
  training_step(state, make_mlp(), true);
}
void BM_CnnStepEager(benchmark::State& state) {
  bench::load_runtime();
  training_step(state, make_cnn(), false);
}
void BM_CnnStepCompiled(benchmark::State& state) {
  bench::load_runtime();
  training_step(state, make_cnn(), true);
}
BENCHMARK(BM_MlpStepEager)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MlpStepCompiled)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_CnnStepEager)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_CnnStepCompiled)->Unit(benchmark::kMicrosecond)->UseRealTime();

// One eager call, then the compiled function's first call, in this (new) process.
int first_call() {
  const Inputs& in = inputs();
  chain(in.x, in.y);  // warm the allocator and the kernels' first-touch costs
  auto t0 = std::chrono::steady_clock::now();
  chain(in.x, in.y);
  auto t1 = std::chrono::steady_clock::now();
  auto f = compile(chain);
  f(in.x, in.y);
  auto t2 = std::chrono::steady_clock::now();
  const double eager_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double first_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  std::printf("first call %.1f ms, one eager call %.1f ms, compile %.1f ms\n", first_ms, eager_ms,
              first_ms - eager_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--first-call") == 0) return first_call();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
