// all_reduce bandwidth in the style of nccl-tests, one rank of a job started by `loom
// launch` (tools/bench/run-distributed-bench.sh runs it beside PyTorch's gloo, whose
// rank is tools/bench/distributed_peer.py): float32 sums from 4 KiB to 256 MiB, the same
// tensor each time (no fresh outputs, so no page faults), the median of many calls after
// warm-up. algbw = bytes / time, busbw = algbw * 2(n-1)/n (nccl-tests' formula). Rank 0
// prints the table.
//   distributed_bench [--max-bytes B] [--no-fingerprints-baseline]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/loom.h"

namespace dist = loom::distributed;

int main(int argc, char** argv) {
  int64_t max_bytes = int64_t{256} << 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--max-bytes") max_bytes = std::atoll(argv[i + 1]);
  }
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 0);
  loom::Runtime runtime = loom::Runtime::load_default();
  dist::init_process_group({.backend = "gloo"});
  const int rank = dist::get_rank(), n = dist::get_world_size();
  if (rank == 0) {
    std::printf("# loom gloo all_reduce, %d ranks, float32 sum (median of N calls)\n", n);
    std::printf("%12s %10s %6s %11s %10s %10s\n", "size(B)", "count", "N", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)");
  }
  for (int64_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    const int64_t count = bytes / 4;
    const int iters = bytes <= (1 << 20) ? 200 : bytes <= (16 << 20) ? 20 : 5;
    loom::Tensor t = loom::ones({count});
    for (int w = 0; w < 3; ++w) dist::all_reduce(t);
    dist::barrier();
    std::vector<double> us;
    for (int i = 0; i < iters; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      dist::all_reduce(t);
      auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    const double median = us[us.size() / 2];
    const double algbw = static_cast<double>(bytes) / median / 1e3;
    if (rank == 0) {
      std::printf("%12lld %10lld %6d %11.1f %10.3f %10.3f\n", static_cast<long long>(bytes),
                  static_cast<long long>(count), iters, median, algbw, algbw * 2.0 * (n - 1) / n);
    }
  }
  dist::destroy_process_group();
  return 0;
}
