// Throughput of the CPU plugin's kernels that split lines, planes, chunks or rows over the
// thread pool (softmax, layer_norm, sort, topk, max_pool2d, batch_norm, var, sum, gather, cat,
// rand), one call per iteration on float32 operands of typical model sizes. The libtorch
// peer runs the same calls (libtorch_peer_bench --benchmark_filter=Kernel). Threads:
// LOOM_NUM_THREADS (tools/bench/run-kernels-bench.sh runs 1 and 2).
#include <benchmark/benchmark.h>

#include "bench_runtime.h"
#include "loom/loom.h"
#include "loom/random.h"

namespace {

using loom::bench::load_runtime;

// Calls body() once per iteration, after one warm-up call.
template <typename Body>
void run(benchmark::State& state, Body body) {
  body();
  for (auto _ : state) benchmark::DoNotOptimize(body());
}

void BM_KernelSoftmax(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::randn({256, 4096});
  run(state, [&] { return loom::softmax(x, 1); });
}
BENCHMARK(BM_KernelSoftmax)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KernelLayerNorm(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::randn({2048, 1024}), w = loom::randn({1024}), b = loom::randn({1024});
  run(state, [&] { return loom::layer_norm(x, {1024}, w, b); });
}
BENCHMARK(BM_KernelLayerNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KernelSort(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::randn({512, 2048});
  run(state, [&] { return std::get<0>(loom::sort(x, 1)); });
}
BENCHMARK(BM_KernelSort)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KernelTopk(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::randn({512, 2048});
  run(state, [&] { return std::get<0>(loom::topk(x, 10, 1)); });
}
BENCHMARK(BM_KernelTopk)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The input of the two benchmarks below: row-major, or channels last when `channels_last`
// (Note [Memory formats]; the peers make theirs the same way).
loom::Tensor activations(std::initializer_list<int64_t> sizes, bool channels_last) {
  loom::Tensor x = loom::randn(sizes);
  return channels_last ? x.contiguous(loom::MemoryFormat::ChannelsLast) : x;
}

// ResNet's stem pooling, 3x3 stride 2 padding 1.
void BM_KernelMaxPool2d(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = activations({8, 64, 112, 112}, state.range(0) == 1);
  run(state, [&] { return loom::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}); });
}
BENCHMARK(BM_KernelMaxPool2d)
    ->ArgName("channels_last")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A 3x3 stride-1 average pooling (an Inception branch's) on [8, 64, 56, 56].
void BM_KernelAvgPool2d(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = activations({8, 64, 56, 56}, state.range(0) == 1);
  run(state, [&] { return loom::avg_pool2d(x, {3, 3}, {1, 1}, {1, 1}); });
}
BENCHMARK(BM_KernelAvgPool2d)
    ->ArgName("channels_last")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A ResNet stage's batch norm on [8, 64, 56, 56]: training (the batch's statistics, running
// statistics updated) and evaluation (the running statistics).
void BM_KernelBatchNorm(benchmark::State& state) {
  load_runtime();
  const bool training = state.range(0) == 1;
  loom::Tensor x = activations({8, 64, 56, 56}, state.range(1) == 1);
  loom::Tensor w = loom::rand({64}), b = loom::randn({64});
  loom::Tensor mean = loom::zeros({64}), var = loom::ones({64});
  run(state, [&] { return loom::batch_norm(x, w, b, mean, var, training, 0.1, 1e-5); });
}
BENCHMARK(BM_KernelBatchNorm)
    ->ArgNames({"training", "channels_last"})
    ->ArgsProduct({{1, 0}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_KernelVar(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::randn({1 << 24});
  run(state, [&] { return loom::var(x); });
}
BENCHMARK(BM_KernelVar)->Unit(benchmark::kMicrosecond)->UseRealTime();

// A convolution bias's gradient: the sum of [64, 32, 28, 28] over all but the channels.
void BM_KernelSumChannels(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::randn({64, 32, 28, 28});
  run(state, [&] { return loom::sum(x, std::vector<int64_t>{0, 2, 3}); });
}
BENCHMARK(BM_KernelSumChannels)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KernelGather(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::randn({1024, 1024});
  loom::Tensor index = loom::randint(0, 1024, {1024, 1024});
  run(state, [&] { return loom::gather(x, 1, index); });
}
BENCHMARK(BM_KernelGather)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KernelCat(benchmark::State& state) {
  load_runtime();
  loom::Tensor a = loom::randn({1024, 1024}), b = loom::randn({1024, 1024});
  run(state, [&] { return loom::cat({a, b}, 1); });
}
BENCHMARK(BM_KernelCat)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KernelRand(benchmark::State& state) {
  load_runtime();
  run(state, [&] { return loom::rand({1 << 22}); });
}
BENCHMARK(BM_KernelRand)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
