#!/usr/bin/env bash
# The graph interpreter's cost per node and the exported models, loom beside PyTorch 2.x
# eager in the same run, 2 threads. Needs the venv of tools/bench/setup-pytorch-peer.sh
# with torch's Python dependencies (pip install sympy networkx jinja2 fsspec filelock
# numpy) and, for the CUDA wheel on a machine without its libraries, those of nvidia-*.
#   tools/bench/run-exported-bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target graph_bench >/dev/null
export LOOM_NUM_THREADS=2 OMP_NUM_THREADS=2
build/bin/graph_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.5
site=$(ls -d build/pytorch-venv/lib/python3*/site-packages)
nvidia=$site/nvidia
export LD_LIBRARY_PATH=$nvidia/nccl/lib:$nvidia/cu13/lib:$nvidia/cusparselt/lib:$nvidia/nvshmem/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
build/pytorch-venv/bin/python tools/bench/exported_peer.py tests/models
