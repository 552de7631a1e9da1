#!/usr/bin/env bash
# loom::compile beside torch.compile (inductor, CPU) in the same run, 2 threads: the
# pointwise chain eager and compiled, and the first call's compile time in a new process
# with an empty kernel cache (cold) and with the cache that call filled (warm). Needs the
# venv of tools/bench/setup-pytorch-peer.sh (torch's Python dependencies included).
#   tools/bench/run-compile-bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target compile_bench >/dev/null
export LOOM_NUM_THREADS=2 OMP_NUM_THREADS=2
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
build/bin/compile_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=1
echo "loom cold: $(LOOM_CACHE_DIR=$cache/loom build/bin/compile_bench --first-call)"
echo "loom warm: $(LOOM_CACHE_DIR=$cache/loom build/bin/compile_bench --first-call)"
python=build/pytorch-venv/bin/python
$python tools/bench/compile_peer.py
echo "torch cold: $(TORCHINDUCTOR_CACHE_DIR=$cache/torch $python tools/bench/compile_peer.py --first-call)"
echo "torch warm: $(TORCHINDUCTOR_CACHE_DIR=$cache/torch $python tools/bench/compile_peer.py --first-call)"
