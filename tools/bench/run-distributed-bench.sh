#!/usr/bin/env bash
# loom's gloo all_reduce (or reduce_scatter) beside PyTorch 2.x's gloo in the same run:
# 2 and 4 ranks over loopback under `loom launch`, float32 sums from 4 KiB to 256 MiB
# (nccl-tests' table and busbw), one intra-op thread per rank on both sides. Needs the
# venv of tools/bench/setup-pytorch-peer.sh (and numpy in it).
#   tools/bench/run-distributed-bench.sh [--op all_reduce|reduce_scatter]
#                                        [MAX_BYTES [ROUNDS [RANKS...]]]
# Each round runs loom then PyTorch; with more than one round, a last table gives each
# side's median over the rounds of its per-round medians, and PyTorch's time over loom's.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target distributed_bench loom_cli >/dev/null
op=all_reduce
if [ "${1:-}" = --op ]; then
  op=$2
  shift 2
fi
max=${1:-268435456}
rounds=${2:-1}
shift $(($# > 2 ? 2 : $#))
ranks=("$@")
((${#ranks[@]} > 0)) || ranks=(2 4)
export LOOM_NUM_THREADS=1 OMP_NUM_THREADS=1
python=build/pytorch-venv/bin/python
site=$(ls -d build/pytorch-venv/lib/python3*/site-packages)
nvidia=$site/nvidia
torch_libs=$nvidia/nccl/lib:$nvidia/cu13/lib:$nvidia/cusparselt/lib:$nvidia/nvshmem/lib:/usr/local/cuda/lib64
times=$(mktemp)
trap 'rm -f "$times"' EXIT
# Prints a run's table and keeps its times: "RANKS SIDE SIZE MICROSECONDS" lines.
keep() {
  local table
  table=$(grep '^\[rank 0\]')
  echo "$table"
  awk -v n="$1" -v side="$2" '$3 ~ /^[0-9]+$/ {print n, side, $3, $6}' <<<"$table" >>"$times"
}
for n in "${ranks[@]}"; do
  for ((round = 1; round <= rounds; ++round)); do
    build/bin/loom launch --nproc "$n" --master-port 29820 -- build/bin/distributed_bench \
      --op "$op" --max-bytes "$max" | keep "$n" loom
    LD_LIBRARY_PATH=$torch_libs:${LD_LIBRARY_PATH:-} build/bin/loom launch --nproc "$n" \
      --master-port 29821 -- "$python" tools/bench/distributed_peer.py --op "$op" --max-bytes "$max" |
      keep "$n" torch
  done
done
if ((rounds > 1)); then
  python3 - "$times" "$rounds" <<'EOF'
import collections, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    n, side, size, us = line.split()
    times[(int(n), int(size), side)].append(float(us))
print(f"# median over {sys.argv[2]} rounds of each round's median time (us)")
print(f"{'ranks':>5} {'size(B)':>11} {'loom':>10} {'PyTorch':>10} {'PyTorch/loom':>13}")
for n, size in sorted({(k[0], k[1]) for k in times}):
    loom = statistics.median(times[(n, size, "loom")])
    torch = statistics.median(times[(n, size, "torch")])
    print(f"{n:>5} {size:>11} {loom:>10.1f} {torch:>10.1f} {torch / loom:>12.2f}x")
EOF
fi
