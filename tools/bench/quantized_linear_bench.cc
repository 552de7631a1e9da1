// The linear layers of LLM-style quantization at batch 1 (tools/bench/run-quantize-bench.sh):
// a 4096 x 4096 float32 layer (loom::linear, oneDNN) against the weight-only int4 layer
// (group sizes 32 and 128), the weight-only int8 layer and the dynamic int8 layer on the
// same weights; the median of 200 calls after 20 warm-up calls, the same input and outputs
// allocated per call on both sides (glibc's allocator regime for every row alike), and the
// weights' bytes.
//   quantized_linear_bench [--features N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "loom/loom.h"

namespace {

double median_us(const std::function<loom::Tensor()>& call) {
  for (int i = 0; i < 20; ++i) call();
  std::vector<double> times;
  for (int i = 0; i < 200; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    times.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

int64_t bytes(const loom::Tensor& t) {
  return t.numel() * static_cast<int64_t>(loom::element_size(t.dtype()));
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 4096;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--features") n = std::atoll(argv[i + 1]);
  }
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 0);
  loom::Runtime runtime = loom::Runtime::load_default();
  loom::NoGradGuard no_grad;
  loom::manual_seed(0);
  const loom::Tensor w = loom::randn({n, n}) * 0.02, x = loom::randn({1, n});
  const double float_us = median_us([&] { return loom::linear(x, w); });
  std::printf("# batch 1, %lld x %lld, median of 200 calls (us); weights in bytes\n",
              static_cast<long long>(n), static_cast<long long>(n));
  std::printf("%-28s %10s %8s %14s %8s\n", "layer", "time(us)", "speedup", "weights(B)", "of f32");
  auto row = [&](const char* name, double us, int64_t weight_bytes) {
    std::printf("%-28s %10.1f %7.2fx %14lld %7.3fx\n", name, us, float_us / us,
                static_cast<long long>(weight_bytes),
                static_cast<double>(weight_bytes) / static_cast<double>(bytes(w)));
  };
  row("float32 (oneDNN)", float_us, bytes(w));
  for (int64_t bits : {4, 8}) {
    for (int64_t group : {32, 128}) {
      auto [packed, scales] = loom::pack_weight_only(w, bits, group);
      const double us = median_us(
          [&] { return loom::weight_only_linear(x, packed, scales, std::nullopt, bits, group); });
      const std::string name =
          "weight-only int" + std::to_string(bits) + ", group " + std::to_string(group);
      row(name.c_str(), us, bytes(packed) + bytes(scales));
    }
  }
  const loom::Tensor scales = (w.abs().amax({1}) / 127.5).to(loom::ScalarType::Float64);
  const loom::Tensor qw = loom::quantize_per_channel(
      w, scales, loom::zeros({n}, loom::TensorOptions().dtype(loom::ScalarType::Int64)), 0,
      loom::ScalarType::QInt8);
  const double dynamic_us =
      median_us([&] { return loom::dynamic_quantized_linear(x, qw, std::nullopt); });
  row("dynamic int8 (per channel)", dynamic_us, bytes(qw) + bytes(scales));
  return 0;
}
