#!/usr/bin/env bash
# loom's gloo all_reduce beside PyTorch 2.x's gloo in the same run: 2 and 4 ranks over
# loopback under `loom launch`, float32 sums from 4 KiB to 256 MiB (nccl-tests' table,
# busbw = algbw * 2(n-1)/n), one intra-op thread per rank on both sides. Needs the venv
# of tools/bench/setup-pytorch-peer.sh (and numpy in it).
#   tools/bench/run-distributed-bench.sh [MAX_BYTES]
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target distributed_bench loom_cli >/dev/null
max=${1:-268435456}
export LOOM_NUM_THREADS=1 OMP_NUM_THREADS=1
python=build/pytorch-venv/bin/python
site=$(ls -d build/pytorch-venv/lib/python3*/site-packages)
nvidia=$site/nvidia
torch_libs=$nvidia/nccl/lib:$nvidia/cu13/lib:$nvidia/cusparselt/lib:$nvidia/nvshmem/lib:/usr/local/cuda/lib64
for n in 2 4; do
  build/bin/loom launch --nproc "$n" --master-port 29820 -- build/bin/distributed_bench --max-bytes "$max" | grep '^\[rank 0\]'
  LD_LIBRARY_PATH=$torch_libs:${LD_LIBRARY_PATH:-} build/bin/loom launch --nproc "$n" --master-port 29821 -- \
    "$python" tools/bench/distributed_peer.py --max-bytes "$max" | grep '^\[rank 0\]'
done
