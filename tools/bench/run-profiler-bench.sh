#!/usr/bin/env bash
# Builds and runs the profiler benchmark (release build in build/): the 1-element add
# without the plugin, with it loaded and idle, and while it records; then, in the same
# run, the same loop under the libtorch 1.13 and PyTorch 2.x profilers when present.
#   tools/bench/run-profiler-bench.sh [--benchmark_repetitions=5 ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
ci/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target profiler_bench cpu autograd profiler
LOOM_BENCH_WITHOUT_PROFILER=1 build/bin/profiler_bench --benchmark_filter='/0$' \
  --benchmark_min_time=0.5 "$@"
build/bin/profiler_bench --benchmark_min_time=0.5 "$@"
filter='AddOneElement$|ProfilerAddOneElementRecording'
if [ -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ]; then
  cmake -S . -B build -DLOOM_BENCH_LIBTORCH=ON >/dev/null
  cmake --build build --target libtorch_peer_bench
  build/bin/libtorch_peer_bench --benchmark_filter="$filter" --benchmark_min_time=0.5 "$@"
  cmake -S . -B build -DLOOM_BENCH_LIBTORCH=OFF >/dev/null
else
  echo "libtorch peer skipped: apt-get install libtorch-dev to compare in the same run"
fi
if [ -x build/bin/pytorch_peer_bench ]; then
  cmake --build build --target pytorch_peer_bench
  build/bin/pytorch_peer_bench --benchmark_filter="$filter" --benchmark_min_time=0.5 "$@"
else
  echo "PyTorch 2.x peer skipped: run tools/bench/setup-pytorch-peer.sh to compare in the same run"
fi
