// loom::compile on the CPU (tools/bench/run-compile-bench.sh): a 9-op pointwise chain on
// 4M float32 run eagerly and compiled, and (`--first-call`) the time of a compiled
// function's first call in a new process, which run-compile-bench.sh runs with an empty
// kernel cache (cold) and again with the cache it filled (warm). The PyTorch side is
// tools/bench/compile_peer.py.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "bench_runtime.h"
#include "loom/compile.h"

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
