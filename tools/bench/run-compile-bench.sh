#!/usr/bin/env bash
# loom::compile beside torch.compile (inductor, CPU) in the same run, 2 threads: the
# pointwise chain eager and compiled, and the first call's compile time in a new process
# with an empty kernel cache (cold) and with the cache that call filled (warm). Needs the
# venv of tools/bench/setup-pytorch-peer.sh with torch's Python dependencies (pip install
# sympy networkx jinja2 fsspec filelock numpy, and "cuda-toolkit[cufile,cudart,cufft,
# curand,cusolver,cusparse,nvjitlink,nvtx,cupti]" nvidia-cudnn-cu13 nvidia-cusparselt-cu13
# nvidia-nccl-cu13 nvidia-nvshmem-cu13 for the CUDA wheel's libraries).
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
# the CUDA wheel's libraries, for a machine without them (the peer runs on the CPU)
site=$(ls -d build/pytorch-venv/lib/python3*/site-packages)
nvidia=$site/nvidia
export LD_LIBRARY_PATH=$nvidia/nccl/lib:$nvidia/cu13/lib:$nvidia/cusparselt/lib:$nvidia/nvshmem/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
$python tools/bench/compile_peer.py
echo "torch cold: $(TORCHINDUCTOR_CACHE_DIR=$cache/torch $python tools/bench/compile_peer.py --first-call)"
echo "torch warm: $(TORCHINDUCTOR_CACHE_DIR=$cache/torch $python tools/bench/compile_peer.py --first-call)"
