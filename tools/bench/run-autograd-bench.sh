#!/usr/bin/env bash
# Builds and runs the autograd benchmark (release build in build/) and, in the same run,
# its libtorch and PyTorch peers when present. Extra arguments go to Google Benchmark.
#   tools/bench/run-autograd-bench.sh [--benchmark_repetitions=5 ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
ci/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target autograd_bench cpu autograd
build/bin/autograd_bench --benchmark_min_time=0.5 "$@"
# The libtorch peer, in the same run, when Debian's libtorch-dev is installed.
if [ -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ]; then
  cmake -S . -B build -DLOOM_BENCH_LIBTORCH=ON >/dev/null
  cmake --build build --target libtorch_peer_bench
  build/bin/libtorch_peer_bench --benchmark_filter='AddOneElementOperator|RequiresGrad|Chain100|Mlp' --benchmark_min_time=0.5 "$@"
  cmake -S . -B build -DLOOM_BENCH_LIBTORCH=OFF >/dev/null
else
  echo "libtorch peer skipped: apt-get install libtorch-dev to compare in the same run"
fi
# PyTorch 2.x from PyPI, when tools/bench/setup-pytorch-peer.sh has built its peer.
if [ -x build/bin/pytorch_peer_bench ]; then
  build/bin/pytorch_peer_bench --benchmark_filter='AddOneElementOperator|RequiresGrad|Chain100|Mlp' --benchmark_min_time=0.5 "$@"
else
  echo "PyTorch 2.x peer skipped: run tools/bench/setup-pytorch-peer.sh to compare in the same run"
fi
# PyTorch's activation checkpointing beside BM_CheckpointedMlp, from the same venv.
if [ -x build/pytorch-venv/bin/python ]; then
  build/pytorch-venv/bin/python tools/bench/checkpoint_peer.py --threads "${LOOM_NUM_THREADS:-2}"
fi
