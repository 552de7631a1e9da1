// Autograd costs (tools/bench/run-autograd-bench.sh), each beside the same code in the
// libtorch peer (libtorch_peer_bench.cc, BM_Torch*): a 1-element add where one input
// requires grad (the graph node recorded and freed with the result) and where none does
// (autograd loaded, nothing recorded), forward and backward
// of a chain of 100 1-element ops, a training step's forward and backward of an MLP
// 784-256-10 at batch 64 (cross entropy; gradients cleared each step as optimizers do), and
// a 20-layer MLP with and without activation checkpointing.
#include <benchmark/benchmark.h>

#include "bench_runtime.h"

namespace {

using loom::Tensor;

void BM_AddOneElementRequiresGrad(benchmark::State& state) {
  loom::bench::load_runtime();
  Tensor a = loom::ones({1}).requires_grad_();
  Tensor b = loom::ones({1});
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_AddOneElementRequiresGrad);

// The same add where no input requires grad, with the autograd plugin loaded (as in any
// training app): what autograd costs the ops it does not record.
void BM_AddOneElementNoGrad(benchmark::State& state) {
  loom::bench::load_runtime();
  Tensor a = loom::ones({1});
  Tensor b = loom::ones({1});
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_AddOneElementNoGrad);

// 100 ops alternating mul and add on 1 element, then backward: time / 100 is the
// per-op cost of recording and differentiating.
void BM_Chain100ForwardBackward(benchmark::State& state) {
  loom::bench::load_runtime();
  Tensor x = loom::ones({1}).requires_grad_();
  Tensor factor = loom::full({1}, 1.0001);
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < 50; ++i) y = (y * factor) + factor;
    y.backward();
    x.set_grad(Tensor());
  }
  state.counters["per_op_ns"] =
      benchmark::Counter(100.0 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Chain100ForwardBackward);

void BM_MlpForwardBackward(benchmark::State& state) {
  loom::bench::load_runtime();
  loom::manual_seed(0);
  Tensor x = loom::randn({64, 784});
  Tensor target = loom::randint(10, {64});
  Tensor w1 = (loom::randn({256, 784}) * 0.03).requires_grad_();
  Tensor b1 = loom::zeros({256}).requires_grad_();
  Tensor w2 = (loom::randn({10, 256}) * 0.06).requires_grad_();
  Tensor b2 = loom::zeros({10}).requires_grad_();
  for (auto _ : state) {
    Tensor hidden = loom::relu(loom::linear(x, w1, b1));
    Tensor loss = loom::cross_entropy_loss(loom::linear(hidden, w2, b2), target);
    loss.backward();
    for (const Tensor& p : {w1, b1, w2, b2}) p.set_grad(Tensor());
  }
}
BENCHMARK(BM_MlpForwardBackward);

// Activation checkpointing's cost: forward and backward of a 20-layer MLP (Linear 128 +
// ReLU, batch 1024), plain (arg 0), in 5 checkpoint_sequential segments of the reentrant
// kind (1) and of the non-reentrant kind (2); checkpoint_peer.py times PyTorch's.
void BM_CheckpointedMlp(benchmark::State& state) {
  loom::bench::load_runtime();
  loom::manual_seed(0);
  loom::nn::Sequential net;
  for (int i = 0; i < 20; ++i) {
    net->push_back(loom::nn::Linear(128, 128));
    net->push_back(loom::nn::ReLU());
  }
  Tensor x = loom::randn({1024, 128});
  const int64_t kind = state.range(0);
  for (auto _ : state) {
    Tensor out = kind == 0
                     ? net(x)
                     : loom::nn::checkpoint_sequential(net, 5, x, {.use_reentrant = kind == 1});
    out.pow(2).mean().backward();
    for (Tensor& p : net->parameters()) p.set_grad(Tensor());
  }
}
BENCHMARK(BM_CheckpointedMlp)->ArgName("kind")->Arg(0)->Arg(1)->Arg(2);

}  // namespace

BENCHMARK_MAIN();
