// The peer side of dispatch_bench: a boxed call through libtorch's c10 dispatcher to a
// no-op CPU kernel, and a 1-element add, measured the same way.
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

}  // namespace

BENCHMARK_MAIN();
