#!/usr/bin/env bash
# Builds and runs kernels_bench (softmax, layer_norm, sort, topk, max_pool2d, batch_norm, var,
# sum, gather, cat, rand) on 1 and 2 threads, each followed by the libtorch peer's same calls on
# as many threads when Debian's libtorch-dev is installed. Extra arguments go to Google Benchmark.
#   tools/bench/run-kernels-bench.sh [--benchmark_repetitions=3 ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
ci/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target kernels_bench cpu
peer=0
if [ -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ]; then
  cmake -S . -B build -DLOOM_BENCH_LIBTORCH=ON >/dev/null
  cmake --build build --target libtorch_peer_bench
  cmake -S . -B build -DLOOM_BENCH_LIBTORCH=OFF >/dev/null
  peer=1
else
  echo "libtorch peer skipped: apt-get install libtorch-dev to compare in the same run"
fi
for threads in 1 2; do
  echo "== $threads thread(s)"
  LOOM_NUM_THREADS=$threads build/bin/kernels_bench --benchmark_min_time=0.3 "$@"
  if [ "$peer" = 1 ]; then
    OMP_NUM_THREADS=$threads build/bin/libtorch_peer_bench --benchmark_filter=Kernel \
      --benchmark_min_time=0.3 "$@"
  fi
  # PyTorch 2.x from PyPI, when tools/bench/setup-pytorch-peer.sh has built its peer.
  if [ -x build/bin/pytorch_peer_bench ]; then
    OMP_NUM_THREADS=$threads build/bin/pytorch_peer_bench --benchmark_filter=Kernel \
      --benchmark_min_time=0.3 "$@"
  fi
done
