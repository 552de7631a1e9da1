// The CUDA plugin's throughput on a GPU, one line per case: "<case> <median microseconds
// per call>". tools/bench/run-gpu-bench.py runs it beside PyTorch's same calls in one run
// and prints the comparison (Note [Timing queued GPU work]).
//   gpu_bench [--filter SUBSTRING] [--samples N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/compile.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/manifest.h"
#include "loom/loom.h"
#include "loom/nn.h"
#include "loom/optim.h"

// Note [Timing queued GPU work]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel launch returns before the kernel ends, so a sample is the wall time of `calls`
// calls queued back to back between two device synchronisations, divided by `calls`: the
// throughput the device sustains once launches overlap kernels, as a training loop sees
// it. `calls` is chosen after the warm-up so a sample lasts about 2 ms (a few calls for
// the large cases); the figure is the median of the samples. Outputs come from the
// plugin's caching allocator, as PyTorch's do from its own: both sides reuse cached
// blocks, neither pays cudaMalloc per call. The PyTorch side in run-gpu-bench.py times
// exactly this way.

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string filter;
  int samples = 25;
};

loom::Device cuda() {
  return loom::parse_device("cuda:0");
}

double median_us_per_call(const std::function<loom::Tensor()>& body, int samples) {
  for (int i = 0; i < 3; ++i) body();
  loom::synchronize(cuda());
  auto start = Clock::now();
  body();
  loom::synchronize(cuda());
  double one = std::chrono::duration<double>(Clock::now() - start).count();
  int calls = std::clamp(static_cast<int>(2e-3 / std::max(one, 1e-9)), 1, 1000);
  std::vector<double> per_call;
  for (int s = 0; s < samples; ++s) {
    loom::synchronize(cuda());
    start = Clock::now();
    for (int c = 0; c < calls; ++c) body();
    loom::synchronize(cuda());
    per_call.push_back(std::chrono::duration<double>(Clock::now() - start).count() / calls);
  }
  std::nth_element(per_call.begin(), per_call.begin() + samples / 2, per_call.end());
  return per_call[samples / 2] * 1e6;
}

loom::Tensor randn_on_gpu(std::vector<int64_t> shape, loom::ScalarType dtype) {
  return loom::randn(shape, loom::TensorOptions().device(cuda())).to(dtype);
}

void run_case(const Options& options, const std::string& name,
              const std::function<loom::Tensor()>& body) {
  if (name.find(options.filter) == std::string::npos) return;
  std::printf("%s %.3f\n", name.c_str(), median_us_per_call(body, options.samples));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--filter" && i + 1 < argc) {
      options.filter = argv[++i];
    } else if (arg == "--samples" && i + 1 < argc) {
      options.samples = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "[gpu_bench] unknown argument '%s'; expected --filter S, --samples N\n",
                   arg.c_str());
      return 2;
    }
  }
  try {
    auto manifest = [](const std::string& cuda_options) {
      return loom::dispatch::parse_manifest(
          std::string("search_dirs: \"") + LOOM_PLUGIN_DIR +
              "\"\nplugins { name: \"cpu\" }\nplugins { name: \"autograd\" }\n"
              "plugins { name: \"compiler\" optional: true }\n"
              "plugins { name: \"cuda\" " +
              cuda_options + " }\n",
          "<bench>");
    };
    std::optional<loom::Runtime> runtime = loom::Runtime::load(manifest(""));
    using loom::ScalarType;
    // A 3x3 convolution 64 -> 64 on [8, 64, 56, 56] (linalg_bench's on the CPU): cuDNN,
    // then ("loom_kernels_") loom's implicit-GEMM kernels, the ROCm plugin's (conv: "loom").
    auto conv_case = [&](const std::string& prefix) {
      loom::Tensor x = randn_on_gpu({8, 64, 56, 56}, ScalarType::Float32);
      loom::Tensor w = randn_on_gpu({64, 64, 3, 3}, ScalarType::Float32);
      run_case(options, prefix + "conv2d_3x3_f32_8x64x56x56",
               [&] { return loom::conv2d(x, w, std::nullopt, 1, 1); });
    };
    conv_case("");
    // A small convolution with bias, [1, 8, 16, 16]: the device's part is a few
    // microseconds, so a call costs its host time (Note [cuDNN graph plans]); with the
    // prefix "legacy_cudnn_", cuDNN's legacy calls (cudnn: "legacy").
    auto small_conv_case = [&](const std::string& prefix) {
      loom::Tensor x = randn_on_gpu({1, 8, 16, 16}, ScalarType::Float32);
      loom::Tensor w = randn_on_gpu({8, 8, 3, 3}, ScalarType::Float32);
      loom::Tensor b = randn_on_gpu({8}, ScalarType::Float32);
      run_case(options, prefix + "conv2d_bias_3x3_f32_1x8x16x16",
               [&] { return loom::conv2d(x, w, b, 1, 1); });
    };
    small_conv_case("");
    for (int64_t n : {int64_t{1} << 20, int64_t{1} << 24, int64_t{1} << 26}) {
      const std::string size = std::to_string(n);
      loom::Tensor a = randn_on_gpu({n}, ScalarType::Float32);
      loom::Tensor b = randn_on_gpu({n}, ScalarType::Float32);
      loom::Tensor out = loom::empty_like(a);
      run_case(options, "add_f32_" + size, [&] { return a + b; });
      run_case(options, "add_out_f32_" + size, [&] { return loom::add_out(out, a, b); });
      run_case(options, "copy_f32_" + size, [&] { return out.copy_(a); });
      loom::Tensor ha = a.to(ScalarType::BFloat16), hb = b.to(ScalarType::BFloat16);
      run_case(options, "add_bf16_" + size, [&] { return ha + hb; });
    }
    {
      // 64 MiB between the device and pinned host memory, non-blocking (Note [Pinned host
      // memory]): bound by the host link, not the device's memory.
      const int64_t n = int64_t{1} << 24;
      loom::Tensor on_gpu = randn_on_gpu({n}, ScalarType::Float32);
      loom::Tensor pinned = loom::empty({n}, loom::TensorOptions().pinned_memory(true));
      run_case(options, "h2d_pinned_f32_16777216", [&] { return on_gpu.copy_(pinned, true); });
      run_case(options, "d2h_pinned_f32_16777216", [&] { return pinned.copy_(on_gpu, true); });
    }
    {
      // issue #44's 9-op pointwise chain on 4M floats: eager (9 kernels) and compiled
      // (one CUDA kernel built by NVRTC)
      auto chain = [](const loom::Tensor& x, const loom::Tensor& y) {
        return ((x * 2 + 1).sin().exp().tanh() * y + x).relu().sigmoid();
      };
      loom::Tensor x = randn_on_gpu({int64_t{1} << 22}, ScalarType::Float32);
      loom::Tensor y = randn_on_gpu({int64_t{1} << 22}, ScalarType::Float32);
      run_case(options, "chain_f32_4194304", [&] { return chain(x, y); });
      auto compiled = loom::compile(chain);
      run_case(options, "chain_compiled_f32_4194304", [&] { return compiled(x, y); });
    }
    {
      loom::Tensor x = randn_on_gpu({8192, 8192}, ScalarType::Float32);
      run_case(options, "sum_f32_8192x8192", [&] { return x.sum(); });
      run_case(options, "sum_rows_f32_8192x8192", [&] { return x.sum({1}); });
      run_case(options, "softmax_f32_8192x8192", [&] { return x.softmax(1); });
      loom::Tensor bcast = randn_on_gpu({8192}, ScalarType::Float32);
      run_case(options, "mul_bcast_f32_8192x8192", [&] { return x * bcast; });
      run_case(options, "sum_columns_f32_8192x8192", [&] { return x.sum({0}); });
      run_case(options, "amax_rows_f32_8192x8192", [&] { return x.amax({1}); });
      run_case(options, "var_rows_f32_8192x8192", [&] { return x.var({1}); });
      run_case(options, "mul_scalar_f32_8192x8192", [&] { return x * 2.5; });
      loom::Tensor lines = x.view({64, int64_t{1} << 20});  // 64 long lines
      run_case(options, "cumsum_f32_64x1048576", [&] { return lines.cumsum(1); });
    }
    // Square products on cuBLAS; with the prefix "loom_kernels_", on loom's tiled GEMM (the
    // ROCm plugin's, Note [Tiled GEMM]).
    auto mm_cases = [&](const std::string& prefix) {
      for (int64_t m : {1024, 4096, 8192}) {
        const std::string size = std::to_string(m);
        for (ScalarType dtype : {ScalarType::Float32, ScalarType::BFloat16}) {
          loom::Tensor a = randn_on_gpu({m, m}, dtype), b = randn_on_gpu({m, m}, dtype);
          const char* tag = dtype == ScalarType::Float32 ? "f32" : "bf16";
          run_case(options, prefix + "mm_" + tag + "_" + size, [&] { return a.mm(b); });
        }
      }
    };
    mm_cases("");
    // One Adam step over 100 parameters of 65,536 floats with fixed gradients: the foreach
    // ops, or the fused op (Note [Fused Adam]: one launch per table of chunks).
    for (const bool fused : {false, true}) {
      loom::manual_seed(0);
      std::vector<loom::Tensor> params;
      for (int i = 0; i < 100; ++i) {
        loom::Tensor p = randn_on_gpu({65536}, ScalarType::Float32).requires_grad_();
        p.set_grad(randn_on_gpu({65536}, ScalarType::Float32));
        params.push_back(p);
      }
      loom::optim::Adam adam(params, loom::optim::AdamOptions(1e-3).foreach(!fused).fused(fused));
      run_case(options, fused ? "adam_fused_step_100x65536" : "adam_foreach_step_100x65536", [&] {
        adam.step();
        return params[0];
      });
    }
    // One training step of `loom train`'s CNN (zero_grad, forward, cross entropy,
    // backward, Adam step) on a fixed batch, as tools/bench/train_bench.cc on the CPU;
    // "host_batch": the batch is copied from host memory at each step, as a data loader's
    // (Note [Pinned staging]); "pinned_batch": from pinned memory, non-blocking, as a
    // data loader's with pin_memory (Note [Pinned host memory]).
    enum class Batch { OnDevice, Host, Pinned };
    auto cnn_step_case = [&](const std::string& prefix, int64_t batch, Batch source) {
      namespace nn = loom::nn;
      loom::manual_seed(0);
      nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                         nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                         nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(3136, 128),
                         nn::ReLU(), nn::Linear(128, 10));
      net->to("cuda:0");
      loom::Tensor x = randn_on_gpu({batch, 1, 28, 28}, ScalarType::Float32);
      loom::Tensor host_x = x.to(loom::parse_device("cpu"));
      if (source == Batch::Pinned) host_x = host_x.pin_memory();
      loom::Tensor target = loom::randint(10, {batch}).to(cuda());
      loom::optim::Adam adam(net->parameters(), loom::optim::AdamOptions(1e-3));
      nn::CrossEntropyLoss criterion;
      const std::string name = source == Batch::Host     ? "cnn_train_step_host_batch_b"
                               : source == Batch::Pinned ? "cnn_train_step_pinned_batch_b"
                                                         : "cnn_train_step_b";
      run_case(options, prefix + name + std::to_string(batch), [&] {
        adam.zero_grad();
        loom::Tensor input =
            source == Batch::OnDevice ? x : host_x.to(cuda(), /*non_blocking=*/true);
        loom::Tensor loss = criterion(net(input), target);
        loss.backward();
        adam.step();
        return loss;
      });
    };
    for (Batch source : {Batch::OnDevice, Batch::Host, Batch::Pinned}) {
      for (int64_t batch : {64, 256}) cnn_step_case("", batch, source);
    }
    runtime.reset();  // every tensor of the cases above is gone
    loom::dispatch::PluginHost::instance().unload("cuda");  // to load it with other options
    runtime = loom::Runtime::load(manifest(
        "options { key: \"conv\" value: \"loom\" } options { key: \"gemm\" value: \"loom\" }"));
    conv_case("loom_kernels_");
    cnn_step_case("loom_kernels_", 64, Batch::OnDevice);
    mm_cases("loom_kernels_");
    runtime.reset();
    loom::dispatch::PluginHost::instance().unload("cuda");
    runtime = loom::Runtime::load(manifest("options { key: \"cudnn\" value: \"legacy\" }"));
    small_conv_case("legacy_cudnn_");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
