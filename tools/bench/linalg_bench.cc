// Matrix product and convolution throughput of the CPU plugin: float32 loom::mm against
// oneDNN's dnnl_sgemm called directly in the same process, loom::conv2d (3x3, 64->64
// channels on 8x64x56x56) with its two backward ops, and the heavy ops of the op set beside
// libtorch_peer_bench: conv_transpose2d, einsum, bilinear upsampling, embedding_bag. Reported
// as GFLOP/s. Thread count: LOOM_NUM_THREADS for loom's ops (the cpu plugin also makes it the
// OpenMP default of the threads that call it); OMP_NUM_THREADS for dnnl_sgemm called before
// the plugin is loaded.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <initializer_list>
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

// The two runs of each convolution benchmark below: /channels_last:0 and :1.
void row_major_and_channels_last(benchmark::internal::Benchmark* b) {
  b->ArgName("channels_last")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
}

// An operand of the convolutions below: row-major, or channels last when the benchmark's
// argument is 1 (Note [Memory formats]; the peers make theirs the same way).
loom::Tensor conv_operand(std::initializer_list<int64_t> sizes, const benchmark::State& state) {
  loom::Tensor t = loom::rand(sizes);
  return state.range(0) != 0 ? t.contiguous(loom::MemoryFormat::ChannelsLast) : t;
}

void BM_LoomConv2d3x3(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = conv_operand({8, 64, 56, 56}, state);
  loom::Tensor w = conv_operand({64, 64, 3, 3}, state);
  loom::conv2d(x, w, std::nullopt, 1, 1);  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(loom::conv2d(x, w, std::nullopt, 1, 1));
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 56 * 56 * 64 * 9);
}
BENCHMARK(BM_LoomConv2d3x3)->Apply(row_major_and_channels_last);

// The same convolution's two backward ops, as a training step calls them: the gradient of
// the input from the output's gradient and the weight, and the gradient of the weight from
// the output's gradient and the input; each makes a new result.
void BM_LoomConv2d3x3BackwardInput(benchmark::State& state) {
  load_runtime();
  loom::Tensor grad = conv_operand({8, 64, 56, 56}, state);
  loom::Tensor w = conv_operand({64, 64, 3, 3}, state);
  const auto call = [&] {
    return loom::conv2d_backward_input(grad, w, {8, 64, 56, 56}, {1, 1}, {1, 1}, {1, 1}, 1);
  };
  call();  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(call().impl());
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 56 * 56 * 64 * 9);
}
BENCHMARK(BM_LoomConv2d3x3BackwardInput)->Apply(row_major_and_channels_last);

void BM_LoomConv2d3x3BackwardWeight(benchmark::State& state) {
  load_runtime();
  loom::Tensor grad = conv_operand({8, 64, 56, 56}, state);
  loom::Tensor x = conv_operand({8, 64, 56, 56}, state);
  const auto call = [&] {
    return loom::conv2d_backward_weight(grad, x, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
  };
  call();  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(call().impl());
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 56 * 56 * 64 * 9);
}
BENCHMARK(BM_LoomConv2d3x3BackwardWeight)->Apply(row_major_and_channels_last);

// A decoder's upsampling layer: 4x4 transposed convolution, stride 2, padding 1, 64->32
// channels, [8, 64, 28, 28] -> [8, 32, 56, 56] (Note [Transposed convolution]).
void BM_LoomConvTranspose2d(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::rand({8, 64, 28, 28});
  loom::Tensor w = loom::rand({64, 32, 4, 4});
  loom::conv_transpose2d(x, w, std::nullopt, 2, 1);  // warm-up
  for (auto _ : state) {
    benchmark::DoNotOptimize(loom::conv_transpose2d(x, w, std::nullopt, 2, 1).impl());
  }
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 28 * 28 * 32 * 16);
}
BENCHMARK(BM_LoomConvTranspose2d)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

// einsum of a batched matmul (one bmm, Note [einsum]) and bilinear upsampling (a
// decomposition), fresh outputs; the peer runs the same calls in libtorch_peer_bench.
void BM_LoomEinsumBatchedMatmul(benchmark::State& state) {
  load_runtime();
  loom::Tensor a = loom::rand({32, 128, 64});
  loom::Tensor b = loom::rand({32, 64, 128});
  for (auto _ : state) benchmark::DoNotOptimize(loom::einsum("bij,bjk->bik", {a, b}).impl());
  state.counters["GFLOP/s"] = gflops(2.0 * 32 * 128 * 64 * 128);
}
BENCHMARK(BM_LoomEinsumBatchedMatmul)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LoomUpsampleBilinear(benchmark::State& state) {
  load_runtime();
  loom::Tensor x = loom::rand({8, 32, 64, 64});
  for (auto _ : state) {
    benchmark::DoNotOptimize(loom::upsample_bilinear2d(x, {128, 128}, false).impl());
  }
}
BENCHMARK(BM_LoomUpsampleBilinear)->Unit(benchmark::kMillisecond)->UseRealTime();

// embedding_bag, sum mode: 2048 bags of 20 rows from a [100000, 64] table (Note
// [embedding_bag]); the same indices and offsets in the peer.
void BM_LoomEmbeddingBagSum(benchmark::State& state) {
  load_runtime();
  loom::Tensor weight = loom::rand({100000, 64});
  loom::Tensor indices = loom::randint(0, 100000, {2048 * 20});
  loom::Tensor offsets = loom::arange(0, 2048 * 20, 20);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::get<0>(loom::embedding_bag(weight, indices, offsets)).impl());
  }
}
BENCHMARK(BM_LoomEmbeddingBagSum)->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK_MAIN();
