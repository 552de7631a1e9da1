// The peer side of dispatch_bench: a boxed call through libtorch's c10 dispatcher to a
// no-op CPU kernel, a 1-element add and the 16M-element float32 adds (new result and
// out=) on 2 intra-op threads, measured the same way; and the peers of linalg_bench
// (matmul, conv2d), kernels_bench (softmax, layer_norm, sort, ...), autograd_bench and
// train_bench (training steps, and `loom train`'s first two epochs on Fashion-MNIST).
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/autograd/profiler_legacy.h>
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

void BM_TorchAddOneElementOperator(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor a = at::ones({1});
  at::Tensor b = at::ones({1});
  for (auto _ : state) {
    at::Tensor c = a + b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
}
BENCHMARK(BM_TorchAddOneElementOperator);

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

// The peers of linalg_bench: float32 matmul and the 3x3 64->64 conv2d on 8x64x56x56.
benchmark::Counter gflops(double flop_per_iteration) {
  return benchmark::Counter(flop_per_iteration * 1e-9,
                            benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TorchMm(benchmark::State& state) {
  at::set_num_threads(2);
  int64_t n = state.range(0);
  at::Tensor a = at::rand({n, n}), b = at::rand({n, n}), c = at::empty({n, n});
  for (auto _ : state) at::mm_out(c, a, b);
  state.counters["GFLOP/s"] = gflops(2.0 * n * n * n);
}
BENCHMARK(BM_TorchMm)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

// The two runs of each convolution benchmark below: /channels_last:0 and :1.
void row_major_and_channels_last(benchmark::internal::Benchmark* b) {
  b->ArgName("channels_last")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
}

// An operand of the convolutions below: row-major, or channels last when the benchmark's
// argument is 1 (linalg_bench's conv_operand).
at::Tensor conv_operand(at::IntArrayRef sizes, const benchmark::State& state) {
  at::Tensor t = at::rand(sizes);
  return state.range(0) != 0 ? t.contiguous(at::MemoryFormat::ChannelsLast) : t;
}

void BM_TorchConv2d3x3(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor x = conv_operand({8, 64, 56, 56}, state), w = conv_operand({64, 64, 3, 3}, state);
  at::conv2d(x, w, {}, 1, 1);  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(at::conv2d(x, w, {}, 1, 1));
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 56 * 56 * 64 * 9);
}
BENCHMARK(BM_TorchConv2d3x3)->Apply(row_major_and_channels_last);

// The two backward ops of that convolution (linalg_bench's BM_LoomConv2d3x3Backward*),
// through convolution_backward with one gradient asked for.
void BM_TorchConv2d3x3BackwardInput(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor grad = conv_operand({8, 64, 56, 56}, state), x = conv_operand({8, 64, 56, 56}, state),
             w = conv_operand({64, 64, 3, 3}, state);
  const auto call = [&] {
    return std::get<0>(at::convolution_backward(grad, x, w, c10::nullopt, {1, 1}, {1, 1}, {1, 1},
                                                false, {0, 0}, 1, {true, false, false}));
  };
  call();  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(call());
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 56 * 56 * 64 * 9);
}
BENCHMARK(BM_TorchConv2d3x3BackwardInput)->Apply(row_major_and_channels_last);

void BM_TorchConv2d3x3BackwardWeight(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor grad = conv_operand({8, 64, 56, 56}, state), x = conv_operand({8, 64, 56, 56}, state),
             w = conv_operand({64, 64, 3, 3}, state);
  const auto call = [&] {
    return std::get<1>(at::convolution_backward(grad, x, w, c10::nullopt, {1, 1}, {1, 1}, {1, 1},
                                                false, {0, 0}, 1, {false, true, false}));
  };
  call();  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(call());
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 56 * 56 * 64 * 9);
}
BENCHMARK(BM_TorchConv2d3x3BackwardWeight)->Apply(row_major_and_channels_last);

void BM_TorchConvTranspose2d(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor x = at::rand({8, 64, 28, 28}), w = at::rand({64, 32, 4, 4});
  at::conv_transpose2d(x, w, {}, 2, 1);  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(at::conv_transpose2d(x, w, {}, 2, 1));
  state.counters["GFLOP/s"] = gflops(2.0 * 8 * 64 * 28 * 28 * 32 * 16);
}
BENCHMARK(BM_TorchConvTranspose2d)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TorchEinsumBatchedMatmul(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor a = at::rand({32, 128, 64}), b = at::rand({32, 64, 128});
  for (auto _ : state) benchmark::DoNotOptimize(at::einsum("bij,bjk->bik", {a, b}));
  state.counters["GFLOP/s"] = gflops(2.0 * 32 * 128 * 64 * 128);
}
BENCHMARK(BM_TorchEinsumBatchedMatmul)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TorchUpsampleBilinear(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor x = at::rand({8, 32, 64, 64});
  for (auto _ : state) {
    benchmark::DoNotOptimize(at::upsample_bilinear2d(x, {128, 128}, false));
  }
}
BENCHMARK(BM_TorchUpsampleBilinear)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TorchEmbeddingBagSum(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor weight = at::rand({100000, 64});
  at::Tensor indices = at::randint(0, 100000, {2048 * 20});
  at::Tensor offsets = at::arange(0, 2048 * 20, 20);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::get<0>(at::embedding_bag(weight, indices, offsets)));
  }
}
BENCHMARK(BM_TorchEmbeddingBagSum)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The peers of kernels_bench, on at::get_num_threads() threads (OMP_NUM_THREADS).
template <typename Body>
void run(benchmark::State& state, Body body) {
  body();
  for (auto _ : state) benchmark::DoNotOptimize(body());
}

void BM_TorchKernelSoftmax(benchmark::State& state) {
  at::Tensor x = at::randn({256, 4096});
  run(state, [&] { return at::softmax(x, 1); });
}
BENCHMARK(BM_TorchKernelSoftmax)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TorchKernelLayerNorm(benchmark::State& state) {
  at::Tensor x = at::randn({2048, 1024}), w = at::randn({1024}), b = at::randn({1024});
  run(state, [&] { return at::layer_norm(x, {1024}, w, b); });
}
BENCHMARK(BM_TorchKernelLayerNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TorchKernelSort(benchmark::State& state) {
  at::Tensor x = at::randn({512, 2048});
  run(state, [&] { return std::get<0>(at::sort(x, 1)); });
}
BENCHMARK(BM_TorchKernelSort)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TorchKernelTopk(benchmark::State& state) {
  at::Tensor x = at::randn({512, 2048});
  run(state, [&] { return std::get<0>(at::topk(x, 10, 1)); });
}
BENCHMARK(BM_TorchKernelTopk)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Row-major, or channels last when `channels_last`, as loom's kernels_bench makes them.
at::Tensor activations(at::IntArrayRef sizes, bool channels_last) {
  at::Tensor x = at::randn(sizes);
  return channels_last ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
}

void BM_TorchKernelMaxPool2d(benchmark::State& state) {
  at::Tensor x = activations({8, 64, 112, 112}, state.range(0) == 1);
  run(state, [&] { return at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}); });
}
BENCHMARK(BM_TorchKernelMaxPool2d)
    ->ArgName("channels_last")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_TorchKernelAvgPool2d(benchmark::State& state) {
  at::Tensor x = activations({8, 64, 56, 56}, state.range(0) == 1);
  run(state, [&] { return at::avg_pool2d(x, {3, 3}, {1, 1}, {1, 1}); });
}
BENCHMARK(BM_TorchKernelAvgPool2d)
    ->ArgName("channels_last")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_TorchKernelBatchNorm(benchmark::State& state) {
  const bool training = state.range(0) == 1;
  at::Tensor x = activations({8, 64, 56, 56}, state.range(1) == 1);
  at::Tensor w = at::rand({64}), b = at::randn({64});
  at::Tensor mean = at::zeros({64}), var = at::ones({64});
  run(state, [&] { return at::batch_norm(x, w, b, mean, var, training, 0.1, 1e-5, false); });
}
BENCHMARK(BM_TorchKernelBatchNorm)
    ->ArgNames({"training", "channels_last"})
    ->ArgsProduct({{1, 0}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_TorchKernelVar(benchmark::State& state) {
  at::Tensor x = at::randn({1 << 24});
  run(state, [&] { return at::var(x); });
}
BENCHMARK(BM_TorchKernelVar)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TorchKernelSumChannels(benchmark::State& state) {
  at::Tensor x = at::randn({64, 32, 28, 28});
  run(state, [&] { return at::sum(x, {0, 2, 3}); });
}
BENCHMARK(BM_TorchKernelSumChannels)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TorchKernelGather(benchmark::State& state) {
  at::Tensor x = at::randn({1024, 1024});
  at::Tensor index = at::randint(0, 1024, {1024, 1024});
  run(state, [&] { return at::gather(x, 1, index); });
}
BENCHMARK(BM_TorchKernelGather)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TorchKernelCat(benchmark::State& state) {
  at::Tensor a = at::randn({1024, 1024}), b = at::randn({1024, 1024});
  run(state, [&] { return at::cat({a, b}, 1); });
}
BENCHMARK(BM_TorchKernelCat)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TorchKernelRand(benchmark::State& state) {
  run(state, [&] { return at::rand({1 << 22}); });
}
BENCHMARK(BM_TorchKernelRand)->Unit(benchmark::kMicrosecond)->UseRealTime();

// --- the peers of autograd_bench ---

void BM_TorchAddOneElementRequiresGrad(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor a = torch::ones({1}).requires_grad_();
  at::Tensor b = torch::ones({1});
  for (auto _ : state) {
    at::Tensor c = a + b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
}
BENCHMARK(BM_TorchAddOneElementRequiresGrad);

void BM_TorchChain100ForwardBackward(benchmark::State& state) {
  at::set_num_threads(2);
  at::Tensor x = torch::ones({1}).requires_grad_();
  at::Tensor factor = torch::full({1}, 1.0001);
  for (auto _ : state) {
    at::Tensor y = x;
    for (int i = 0; i < 50; ++i) y = (y * factor) + factor;
    y.backward();
    x.mutable_grad() = at::Tensor();
  }
  state.counters["per_op_ns"] =
      benchmark::Counter(100.0 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_TorchChain100ForwardBackward);

void BM_TorchMlpForwardBackward(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  at::Tensor x = torch::randn({64, 784});
  at::Tensor target = torch::randint(10, {64});
  at::Tensor w1 = (torch::randn({256, 784}) * 0.03).requires_grad_();
  at::Tensor b1 = torch::zeros({256}).requires_grad_();
  at::Tensor w2 = (torch::randn({10, 256}) * 0.06).requires_grad_();
  at::Tensor b2 = torch::zeros({10}).requires_grad_();
  for (auto _ : state) {
    at::Tensor hidden = torch::relu(torch::linear(x, w1, b1));
    at::Tensor loss = torch::cross_entropy_loss(torch::linear(hidden, w2, b2), target);
    loss.backward();
    for (at::Tensor* p : {&w1, &b1, &w2, &b2}) p->mutable_grad() = at::Tensor();
  }
}
BENCHMARK(BM_TorchMlpForwardBackward);

// The peers of train_bench.cc: one step of the `loom train` models with torch::nn and
// torch::optim::Adam at batch 64.
void run_torch_steps(benchmark::State& state, torch::nn::Sequential& net, const at::Tensor& x) {
  at::Tensor target = torch::randint(10, {64});
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
  for (auto _ : state) {
    adam.zero_grad();
    at::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), target);
    loss.backward();
    adam.step();
  }
}

torch::nn::Sequential make_torch_mlp() {
  return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 256), torch::nn::ReLU(),
                               torch::nn::Linear(256, 10));
}

torch::nn::Sequential make_torch_cnn() {
  namespace tnn = torch::nn;
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 32, 3).padding(1)), tnn::ReLU(),
                         tnn::MaxPool2d(2), tnn::Conv2d(tnn::Conv2dOptions(32, 64, 3).padding(1)),
                         tnn::ReLU(), tnn::MaxPool2d(2), tnn::Flatten(), tnn::Linear(3136, 128),
                         tnn::ReLU(), tnn::Linear(128, 10));
}

void BM_TorchTrainStepMlpAdam(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  torch::nn::Sequential net = make_torch_mlp();
  run_torch_steps(state, net, torch::randn({64, 1, 28, 28}));
}
BENCHMARK(BM_TorchTrainStepMlpAdam)->Unit(benchmark::kMillisecond);

void BM_TorchTrainStepCnnAdam(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  torch::nn::Sequential net = make_torch_cnn();
  run_torch_steps(state, net, torch::randn({64, 1, 28, 28}));
}
BENCHMARK(BM_TorchTrainStepCnnAdam)->Unit(benchmark::kMillisecond);

// --- `loom train`'s epochs on Fashion-MNIST, as a libtorch user writes them ---

// One split of Fashion-MNIST from its gzip IDX files in $LOOM_FASHION_MNIST (default
// Debian's /usr/share/datasets/fashion-mnist), normalised as `loom train` does; undefined
// tensors when the files are missing or malformed.
struct TorchSplit {
  at::Tensor images, labels;
};

std::string gunzip(const std::string& path) {
  std::string bytes;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return bytes;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) bytes.append(buffer, n);
  gzclose(file);
  return bytes;
}

uint32_t big_endian(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

TorchSplit load_torch_split(const char* prefix) {
  const char* dir = std::getenv("LOOM_FASHION_MNIST");
  const std::string base =
      std::string(dir ? dir : "/usr/share/datasets/fashion-mnist") + "/" + prefix;
  std::string images = gunzip(base + "-images-idx3-ubyte.gz");
  std::string labels = gunzip(base + "-labels-idx1-ubyte.gz");
  if (images.size() < 16 || labels.size() < 8 || big_endian(images, 0) != 2051 ||
      big_endian(labels, 0) != 2049) {
    return {};
  }
  const int64_t n = big_endian(images, 4);
  if (big_endian(labels, 4) != n || images.size() != 16 + static_cast<size_t>(n) * 784 ||
      labels.size() != 8 + static_cast<size_t>(n)) {
    return {};
  }
  at::Tensor x = torch::from_blob(images.data() + 16, {n, 1, 28, 28}, torch::kUInt8)
                     .to(torch::kFloat)
                     .div_(255.0)
                     .sub_(0.2860)
                     .div_(0.3530);
  at::Tensor y = torch::from_blob(labels.data() + 8, {n}, torch::kUInt8).to(torch::kLong);
  return {x, y};
}

// Two epochs of `loom train`'s loop (batch 64, shuffled, Adam 1e-3, the loss and
// accuracy of every batch read back) with test accuracy after each, outside the timing,
// as `loom train` prints it. Counters: seconds and test accuracy of each epoch. The seed
// is $LOOM_PEER_SEED (default 0), for the spread of accuracies over seeds.
void run_torch_epochs(benchmark::State& state, torch::nn::Sequential (*make)()) {
  at::set_num_threads(2);
  const TorchSplit train = load_torch_split("train"), test = load_torch_split("t10k");
  if (!train.images.defined() || !test.images.defined()) {
    state.SkipWithError("Fashion-MNIST not found (set LOOM_FASHION_MNIST)");
    return;
  }
  const char* seed = std::getenv("LOOM_PEER_SEED");
  for (auto _ : state) {
    torch::manual_seed(seed ? std::strtoull(seed, nullptr, 10) : 0);
    torch::nn::Sequential net = make();
    torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
    const int64_t n = train.images.size(0);
    for (int epoch = 1; epoch <= 2; ++epoch) {
      const auto start = std::chrono::steady_clock::now();
      const at::Tensor order = torch::randperm(n);
      double loss_sum = 0;
      int64_t correct = 0;
      for (int64_t b = 0; b < n; b += 64) {
        const at::Tensor index = order.slice(0, b, std::min(b + 64, n));
        const at::Tensor x = train.images.index_select(0, index);
        const at::Tensor y = train.labels.index_select(0, index);
        adam.zero_grad();
        const at::Tensor logits = net->forward(x);
        const at::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
        loss.backward();
        adam.step();
        loss_sum += loss.item<double>() * static_cast<double>(y.size(0));
        torch::NoGradGuard no_grad;
        correct += logits.argmax(1).eq(y).sum().item<int64_t>();
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      state.PauseTiming();
      int64_t right = 0;
      {
        torch::NoGradGuard no_grad;
        for (int64_t b = 0; b < test.images.size(0); b += 1000) {
          const at::Tensor logits = net->forward(test.images.slice(0, b, b + 1000));
          right += logits.argmax(1).eq(test.labels.slice(0, b, b + 1000)).sum().item<int64_t>();
        }
      }
      const std::string e = std::to_string(epoch);
      state.counters["epoch" + e + "_s"] = seconds;
      state.counters["epoch" + e + "_test_acc"] =
          100.0 * static_cast<double>(right) / static_cast<double>(test.images.size(0));
      state.counters["epoch" + e + "_train_acc"] =
          100.0 * static_cast<double>(correct) / static_cast<double>(n);
      state.ResumeTiming();
    }
  }
}

void BM_TorchTrainEpochsCnn(benchmark::State& state) {
  run_torch_epochs(state, &make_torch_cnn);
}
BENCHMARK(BM_TorchTrainEpochsCnn)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

void BM_TorchTrainEpochsMlp(benchmark::State& state) {
  run_torch_epochs(state, &make_torch_mlp);
}
BENCHMARK(BM_TorchTrainEpochsMlp)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

// The profiler's cost per op beside loom's (tools/bench/profiler_bench.cc): the 1-element
// add while PyTorch's profiler records, 100,000 adds per repetition (the records of one
// repetition are kept until it ends, as loom's are). Arg 0: the legacy profiler
// (torch.autograd.profiler with use_kineto=False); 1: the Kineto profiler (torch.profiler,
// CPU activities), where the build has Kineto.
void BM_TorchProfilerAddOneElementRecording(benchmark::State& state) {
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  at::set_num_threads(2);
  at::Tensor a = at::ones({1});
  at::Tensor b = at::ones({1});
  const bool kineto = state.range(0) == 1;
  try {
    if (kineto) {
      ProfilerConfig config(ProfilerState::KINETO);
      prof::prepareProfiler(config, {ActivityType::CPU});
      prof::enableProfiler(config, {ActivityType::CPU});
    } else {
      prof::enableProfilerLegacy(ProfilerConfig(ProfilerState::CPU));
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(at::add(a, b));
  if (kineto) {
    prof::disableProfiler();
  } else {
    prof::disableProfilerLegacy();
  }
}
BENCHMARK(BM_TorchProfilerAddOneElementRecording)->Arg(0)->Arg(1)->Iterations(100000);

BENCHMARK_MAIN();
