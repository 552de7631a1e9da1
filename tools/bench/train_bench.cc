// One training step (zero_grad, forward, cross entropy, backward, Adam step) of the
// `loom train` models at batch 64 on fixed random inputs (tools/bench/run-train-bench.sh),
// each beside the same step in the libtorch peers (libtorch_peer_bench.cc,
// BM_TorchTrainStep*): the MLP 784-256-10 and the CNN (conv 1->32 3x3, relu, maxpool;
// conv 32->64 3x3, relu, maxpool; fc 3136->128, relu; fc 128->10). Threads: set
// LOOM_NUM_THREADS (the script uses 2, as the peers' at::set_num_threads(2)). Also loom's
// Adam with the foreach ops beside its per-parameter loop (no peer).
#include <benchmark/benchmark.h>

#include <optional>

#include "bench_runtime.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace {

using loom::Tensor;
namespace nn = loom::nn;

void run_steps(benchmark::State& state, nn::Sequential& net, const Tensor& x,
               std::optional<bool> foreach = std::nullopt) {
  loom::Tensor target = loom::randint(10, {64});
  loom::optim::Adam adam(net->parameters(), loom::optim::AdamOptions(1e-3).foreach(foreach));
  nn::CrossEntropyLoss criterion;
  for (auto _ : state) {
    adam.zero_grad();
    Tensor loss = criterion(net(x), target);
    loss.backward();
    adam.step();
  }
}

void BM_TrainStepMlpAdam(benchmark::State& state) {
  loom::bench::load_runtime();
  loom::manual_seed(0);
  nn::Sequential net(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  run_steps(state, net, loom::randn({64, 1, 28, 28}));
}
BENCHMARK(BM_TrainStepMlpAdam)->Unit(benchmark::kMillisecond);

// The same step with Adam's foreach ops (on the CPU the default is the per-parameter loop).
void BM_TrainStepMlpAdamForeach(benchmark::State& state) {
  loom::bench::load_runtime();
  loom::manual_seed(0);
  nn::Sequential net(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  run_steps(state, net, loom::randn({64, 1, 28, 28}), true);
}
BENCHMARK(BM_TrainStepMlpAdamForeach)->Unit(benchmark::kMillisecond);

void BM_TrainStepCnnAdam(benchmark::State& state) {
  loom::bench::load_runtime();
  loom::manual_seed(0);
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                     nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                     nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(3136, 128), nn::ReLU(),
                     nn::Linear(128, 10));
  run_steps(state, net, loom::randn({64, 1, 28, 28}));
}
BENCHMARK(BM_TrainStepCnnAdam)->Unit(benchmark::kMillisecond);

// Adam's step alone over 200 parameters of 4,096 elements (a deep model's many small
// tensors), with the foreach ops (arg 1) and with the per-parameter loop (arg 0).
void BM_AdamStepManySmallParameters(benchmark::State& state) {
  loom::bench::load_runtime();
  loom::manual_seed(0);
  std::vector<Tensor> params;
  for (int i = 0; i < 200; ++i) {
    Tensor p = loom::randn({64, 64}).requires_grad_();
    (p * p).sum().backward();
    params.push_back(p);
  }
  loom::optim::Adam adam(params, loom::optim::AdamOptions(1e-3).foreach(state.range(0) != 0));
  for (auto _ : state) adam.step();
}
BENCHMARK(BM_AdamStepManySmallParameters)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
