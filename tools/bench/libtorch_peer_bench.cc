// The peer side of dispatch_bench: a boxed call through libtorch's c10 dispatcher to a
// no-op CPU kernel, a 1-element add, and the 16M-element float32 adds (new result and
// out=) on 2 intra-op threads, measured the same way.
#include <benchmark/benchmark.h>
#include <torch/library.h>
#include <torch/torch.h>

namespace {

void noop(const at::Tensor&) {}

TORCH_LIBRARY(loom_bench, m) {
  m.def("noop(Tensor self) -> ()");
}
TORCH_LIBRARY_IMPL(loom_bench, CPU, m) {
  m.impl("noop", &noop);
}

void BM_TorchNoopBoxedDispatch(benchmark::State& state) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("loom_bench::noop", "");
  at::Tensor t = at::empty({1});
  torch::jit::Stack stack;
  stack.reserve(4);
  for (auto _ : state) {
    stack.emplace_back(t);
    op.callBoxed(&stack);
    stack.clear();
  }
}
BENCHMARK(BM_TorchNoopBoxedDispatch);

void BM_TorchNoopTypedDispatch(benchmark::State& state) {
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("loom_bench::noop", "")
                .typed<void(const at::Tensor&)>();
  at::Tensor t = at::empty({1});
  for (auto _ : state) op.call(t);
}
BENCHMARK(BM_TorchNoopTypedDispatch);

void BM_TorchAddOneElement(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor a = at::ones({1});
  at::Tensor b = at::ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(at::add(a, b));
}
BENCHMARK(BM_TorchAddOneElement);

// 16M float32 elements: 64 MiB per operand.
constexpr int64_t kLargeNumel = int64_t{1} << 24;

void BM_TorchAddLarge(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor a = at::ones({kLargeNumel});
  at::Tensor b = at::ones({kLargeNumel});
  for (auto _ : state) benchmark::DoNotOptimize(at::add(a, b));
  state.SetBytesProcessed(state.iterations() * 3 * kLargeNumel * int64_t{sizeof(float)});
}
BENCHMARK(BM_TorchAddLarge)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_TorchAddLargeOut(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor a = at::ones({kLargeNumel});
  at::Tensor b = at::ones({kLargeNumel});
  at::Tensor out = at::empty({kLargeNumel});
  for (auto _ : state) at::add_out(out, a, b);
  state.SetBytesProcessed(state.iterations() * 3 * kLargeNumel * int64_t{sizeof(float)});
}
BENCHMARK(BM_TorchAddLargeOut)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
