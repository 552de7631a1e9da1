// Matrix product and convolution throughput of the CPU plugin: float32 loom::mm against
// oneDNN's dnnl_sgemm called directly in the same process, and loom::conv2d (3x3, 64->64
// channels on 8x64x56x56). Reported as GFLOP/s. Thread count: LOOM_NUM_THREADS for
// loom's ops (the cpu plugin also makes it the OpenMP default of the threads that call
// it); OMP_NUM_THREADS for dnnl_sgemm called before the plugin is loaded.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "bench_runtime.h"
#include "loom/loom.h"
#include "loom/random.h"
#include "oneapi/dnnl/dnnl.h"

namespace {

using loom::bench::load_runtime;

benchmark::Counter gflops(double flop_per_iteration) {
  return benchmark::Counter(flop_per_iteration * 1e-9,
                            benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LoomMm(benchmark::State& state) {
  load_runtime();
  int64_t n = state.range(0);
  loom::Tensor a = loom::rand({n, n});
  loom::Tensor b = loom::rand({n, n});
  loom::Tensor c = loom::empty({n, n});
  loom::mm_out(c, a, b);  // warm-up: primitive creation
  for (auto _ : state) loom::mm_out(c, a, b);
  state.counters["GFLOP/s"] = gflops(2.0 * n * n * n);
}
BENCHMARK(BM_LoomMm)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DnnlSgemm(benchmark::State& state) {
  int64_t n = state.range(0);
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = gflops(2.0 * n * n * n);
}
BENCHMARK(BM_DnnlSgemm)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoomConv2d3x3(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::rand({8, 64, 56, 56});
  loom::Tensor w = loom::rand({64, 64, 3, 3});
  loom::conv2d(x, w, std::nullopt, 1, 1);  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(loom::conv2d(x, w, std::nullopt, 1, 1));
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 56 * 56 * 64 * 9);
}
BENCHMARK(BM_LoomConv2d3x3)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
