#!/usr/bin/env bash
# Builds and runs linalg_bench (float32 mm vs dnnl_sgemm, conv2d 3x3 64->64 on 8x64x56x56,
# conv_transpose2d, einsum, bilinear upsampling) with 2 threads, then the same calls in
# the peers: libtorch 1.13 when Debian's libtorch-dev is installed, PyTorch 2.x when
# tools/bench/setup-pytorch-peer.sh has built its peer. Extra arguments go to Google
# Benchmark.
#   tools/bench/run-linalg-bench.sh [--benchmark_repetitions=5 ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
ci/install-deps.sh
export LOOM_NUM_THREADS=${LOOM_NUM_THREADS:-2} OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target linalg_bench cpu
build/bin/linalg_bench --benchmark_min_time=0.5 "$@"
if [ -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ]; then
  cmake -S . -B build -DLOOM_BENCH_LIBTORCH=ON >/dev/null
  cmake --build build --target libtorch_peer_bench
  build/bin/libtorch_peer_bench --benchmark_filter='Mm|Conv|Einsum|Upsample|EmbeddingBag' --benchmark_min_time=0.5 "$@"
  cmake -S . -B build -DLOOM_BENCH_LIBTORCH=OFF >/dev/null
else
  echo "libtorch peer skipped: apt-get install libtorch-dev to compare in the same run"
fi
# PyTorch 2.x from PyPI, when tools/bench/setup-pytorch-peer.sh has built its peer.
if [ -x build/bin/pytorch_peer_bench ]; then
  build/bin/pytorch_peer_bench --benchmark_filter='Mm|Conv|Einsum|Upsample|EmbeddingBag' --benchmark_min_time=0.5 "$@"
else
  echo "PyTorch 2.x peer skipped: run tools/bench/setup-pytorch-peer.sh to compare in the same run"
fi
