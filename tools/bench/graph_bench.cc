// The graph interpreter's cost per node (tools/bench/run-exported-bench.sh): a chain of
// 256 adds of 1-element tensors run by the interpreter beside the same adds called
// eagerly through the typed API (both reach the dispatcher's boxed call), and the
// committed exported models run by loom (the PyTorch side is tools/bench/exported_peer.py).
#include <benchmark/benchmark.h>

#include "bench_runtime.h"
#include "loom/exported_program.h"
#include "loom/graph.h"
#include "loom/graph_interpreter.h"

namespace {

using namespace loom;
using namespace loom::graph;

constexpr int kChain = 256;

// x -> add(x, y) -> add(_, y) -> ... kChain times.
Graph add_chain() {
  Graph g;
  ValueId x = g.add_value("x", ValueType::Tensor);
  ValueId y = g.add_value("y", ValueType::Tensor);
  g.add_input(x, InputRole::UserInput);
  g.add_input(y, InputRole::UserInput);
  ValueId last = x;
  for (int i = 0; i < kChain; ++i) {
    ValueId out = g.add_value("add_" + std::to_string(i), ValueType::Tensor);
    g.add_node(Node{"loom::add.Tensor",
                    "",
                    {Argument::of_value("self", last), Argument::of_value("other", y),
                     Argument::of_constant("alpha", int64_t{1})},
                    {out},
                    false});
    last = out;
  }
  g.add_output(last);
  return g;
}

void BM_InterpreterAddChain(benchmark::State& state) {
  bench::load_runtime();
  Graph g = add_chain();
  Interpreter run(g, Device{});
  std::vector<Tensor> inputs = {ones({1}), ones({1})};
  for (auto _ : state) benchmark::DoNotOptimize(run(inputs));
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(kChain),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_InterpreterAddChain);

void BM_EagerAddChain(benchmark::State& state) {
  bench::load_runtime();
  Tensor x = ones({1}), y = ones({1});
  for (auto _ : state) {
    Tensor t = x;
    for (int i = 0; i < kChain; ++i) t = add(t, y);
    benchmark::DoNotOptimize(t);
  }
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(kChain),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_EagerAddChain);

void BM_ExportedModel(benchmark::State& state, const char* name, std::vector<int64_t> shape) {
  bench::load_runtime();
  ExportedProgram ep =
      load_exported(std::string(LOOM_SOURCE_DIR) + "/tests/models/" + name + ".pt2");
  manual_seed(0);
  std::vector<Tensor> inputs = {randn(shape)};
  for (auto _ : state) benchmark::DoNotOptimize(ep(inputs));
  state.counters["nodes"] = static_cast<double>(ep.graph().nodes().size());
}
BENCHMARK_CAPTURE(BM_ExportedModel, mlp_batch64, "mlp", {64, 16});
BENCHMARK_CAPTURE(BM_ExportedModel, cnn_batch_norm_batch64, "cnn_batch_norm", {64, 1, 28, 28});
BENCHMARK_CAPTURE(BM_ExportedModel, residual_block, "residual_block", {2, 8, 12, 12});
BENCHMARK_CAPTURE(BM_ExportedModel, transformer_encoder, "transformer_encoder", {2, 10, 32});
BENCHMARK_CAPTURE(BM_ExportedModel, lstm, "lstm", {3, 7, 8});
BENCHMARK_CAPTURE(BM_ExportedModel, spectrum_batch64, "spectrum", {64, 16});

}  // namespace

BENCHMARK_MAIN();
