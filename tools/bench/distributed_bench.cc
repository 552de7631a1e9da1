// all_reduce (or reduce_scatter) bandwidth in the style of nccl-tests, one rank of a job
// started by `loom launch` (tools/bench/run-distributed-bench.sh runs it beside PyTorch's
// gloo, whose rank is tools/bench/distributed_peer.py): float32 sums from 4 KiB to 256 MiB,
// the same tensors each time (no fresh outputs, so no page faults), the median of many
// calls after warm-up. algbw = bytes / time, busbw = algbw * 2(n-1)/n for all_reduce and
// algbw * (n-1)/n for reduce_scatter, whose bytes are its input's (nccl-tests' formulas).
// Rank 0 prints the table. With --backend nccl the tensor is on the rank's GPU and each call is
// timed to the end of its work on the device (tools/bench/gpu-device-check.sh's nccl step,
// one rank on one GPU: there busbw is 0 by the formula and algbw is what it measures).
//   distributed_bench [--max-bytes B] [--backend gloo|nccl] [--op all_reduce|reduce_scatter]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/loom.h"

namespace dist = loom::distributed;

namespace {

int run(int argc, char** argv) {
  int64_t max_bytes = int64_t{256} << 20;
  std::string backend = "gloo", op = "all_reduce";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--max-bytes") max_bytes = std::atoll(argv[i + 1]);
    if (std::string(argv[i]) == "--backend") backend = argv[i + 1];
    if (std::string(argv[i]) == "--op") op = argv[i + 1];
  }
  if (op != "all_reduce" && op != "reduce_scatter") {
    std::fprintf(stderr,
                 "[distributed_bench] --op: expected all_reduce or reduce_scatter, found %s\n",
                 op.c_str());
    return 2;
  }
  if (backend != "gloo" && backend != "nccl") {
    std::fprintf(stderr, "[distributed_bench] --backend: expected gloo or nccl, found %s\n",
                 backend.c_str());
    return 2;
  }
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 0);
  loom::dispatch::DeploymentManifest manifest = loom::dispatch::default_manifest();
  if (backend == "nccl") {
    loom::dispatch::PluginRequest cuda;
    cuda.name = "cuda";
    manifest.plugins.push_back(cuda);
  }
  loom::Runtime runtime = loom::Runtime::load(manifest);
  dist::init_process_group({.backend = backend.c_str()});
  const int rank = dist::get_rank(), n = dist::get_world_size();
  loom::Device device = loom::parse_device("cpu");
  if (backend == "nccl") {
    const char* local = std::getenv("LOOM_LOCAL_RANK");  // the engine's device (torchrun's)
    const int64_t index = (local != nullptr ? std::atoll(local) : 0) % loom::device_count("cuda");
    device = loom::parse_device("cuda:" + std::to_string(index));
  }
  if (rank == 0) {
    std::printf("# loom %s %s, %d ranks, float32 sum (median of N calls)\n", backend.c_str(),
                op.c_str(), n);
    std::printf("%12s %10s %6s %11s %10s %10s\n", "size(B)", "count", "N", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)");
  }
  for (int64_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    // reduce_scatter: blocks of count / n elements (sizes the ranks do not divide lose a few)
    const int64_t count = op == "all_reduce" ? bytes / 4 : bytes / 4 / n * n;
    const int iters = bytes <= (1 << 20) ? 200 : bytes <= (16 << 20) ? 20 : 5;
    loom::Tensor t = loom::ones({count}, loom::TensorOptions().device(device));
    loom::Tensor block = loom::empty({count / n}, loom::TensorOptions().device(device));
    const auto call = [&] {
      if (op == "all_reduce") {
        dist::all_reduce(t);
      } else {
        dist::reduce_scatter_tensor(block, t);
      }
    };
    for (int w = 0; w < 3; ++w) call();
    loom::synchronize(device);
    dist::barrier();
    std::vector<double> us;
    for (int i = 0; i < iters; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      call();
      loom::synchronize(device);  // the CPU's: nothing to wait for
      auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    const double median = us[us.size() / 2];
    const double algbw = static_cast<double>(bytes) / median / 1e3;
    if (rank == 0) {
      std::printf("%12lld %10lld %6d %11.1f %10.3f %10.3f\n", static_cast<long long>(bytes),
                  static_cast<long long>(count), iters, median, algbw,
                  algbw * (op == "all_reduce" ? 2.0 : 1.0) * (n - 1) / n);
    }
  }
  dist::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
