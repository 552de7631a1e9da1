// The profiler's cost per op (tools/bench/run-profiler-bench.sh): the 1-element add with
// the profiler plugin loaded and idle, and while it records (plain, with shapes), beside
// the same loop under PyTorch's profilers (libtorch_peer_bench.cc,
// BM_TorchProfilerAddOneElementRecording). LOOM_BENCH_WITHOUT_PROFILER=1 loads the
// runtime without the plugin, for the "not loaded" baseline.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/manifest.h"
#include "loom/loom.h"

namespace {

using loom::Tensor;

void load_runtime() {
  static const bool loaded = [] {
    const char* without = std::getenv("LOOM_BENCH_WITHOUT_PROFILER");
    std::string manifest = std::string("search_dirs: \"") + LOOM_PLUGIN_DIR +
                           "\"\nplugins { name: \"cpu\" }\nplugins { name: \"autograd\" }\n";
    if (without == nullptr || std::string(without) != "1") {
      manifest += "plugins { name: \"profiler\" }\n";
    }
    loom::Runtime::load(loom::dispatch::parse_manifest(manifest, "<profiler_bench>"));
    return true;
  }();
  (void)loaded;
}

// Arg 0: idle (loaded, or not loaded under LOOM_BENCH_WITHOUT_PROFILER=1); 1: recording;
// 2: recording with record_shapes. Recording runs 100,000 adds per repetition.
void BM_ProfilerAddOneElement(benchmark::State& state) {
  load_runtime();
  Tensor a = loom::ones({1});
  Tensor b = loom::ones({1});
  std::unique_ptr<loom::profiler::Profiler> profiler;
  if (state.range(0) > 0) {
    if (!loom::profiler::Profiler::is_available()) {
      state.SkipWithError("the profiler plugin is not loaded");
      return;
    }
    loom::profiler::ProfilerOptions options;
    options.record_shapes = state.range(0) == 2;
    profiler = std::make_unique<loom::profiler::Profiler>(options);
  }
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
  profiler.reset();  // after the timed loop: stopping and reading are not counted
}
BENCHMARK(BM_ProfilerAddOneElement)->Arg(0);
BENCHMARK(BM_ProfilerAddOneElement)->Arg(1)->Arg(2)->Iterations(100000);

}  // namespace

BENCHMARK_MAIN();
