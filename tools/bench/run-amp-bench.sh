#!/usr/bin/env bash
# Mixed precision beside PyTorch 2.x in the same run (issue #47): tools/bench/amp_bench.cc
# and tools/bench/amp_peer.py (torch.autocast, torch.amp.GradScaler) in alternating rounds,
# each printing its float32 and autocast step times of the 4096-wide MLP (batch 1024) and
# the widened CNN (batch 512); then the table: loom's speedup over its float32 and its
# ratio to PyTorch's autocast step (medians over the rounds).
#   tools/bench/run-amp-bench.sh [--device cuda|cpu] [--dtype float16|bfloat16] [ROUNDS]
#     (extra flags after ROUNDS go to both programs: --mlp-width 1024 ... for a CPU run)
# PYTHON (default build/pytorch-venv/bin/python) and AMP_BENCH (default build/bin/amp_bench)
# locate the programs; on the GPU machine gpu-device-check.sh sets them.
set -uo pipefail
cd "$(dirname "$0")/../.."
device=cuda dtype=float16
while [[ $# -gt 0 && $1 == --* && ($1 == --device || $1 == --dtype) ]]; do
  [[ $1 == --device ]] && device=$2
  [[ $1 == --dtype ]] && dtype=$2
  shift 2
done
rounds=${1:-3}
shift || true
python=${PYTHON:-build/pytorch-venv/bin/python}
bench=${AMP_BENCH:-build/bin/amp_bench}
export LOOM_NUM_THREADS=${LOOM_NUM_THREADS:-2} OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
  "$bench" --device "$device" --dtype "$dtype" "$@" | sed 's/^/loom /' >> "$results"
  "$python" tools/bench/amp_peer.py --device "$device" --dtype "$dtype" --threads 2 "$@" \
    2>/dev/null | sed 's/^/torch /' >> "$results"
done
cat "$results"
python3 - "$results" "$dtype" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    who, case, ms = line.split()
    rows.setdefault((who, case), []).append(float(ms))
med = {k: statistics.median(v) for k, v in rows.items()}
dtype = sys.argv[2]
print(f"| model | loom float32 ms | loom {dtype} ms | speedup | PyTorch {dtype} ms | loom / PyTorch |")
print("|---|---|---|---|---|---|")
for model in ("mlp", "cnn"):
    f32, amp = med.get(("loom", f"{model}_float32")), med.get(("loom", f"{model}_{dtype}"))
    peer = med.get(("torch", f"{model}_{dtype}"))
    if f32 is None or amp is None:
        print(f"| {model} | (no loom figure) |")
        continue
    ratio = f"{peer / amp:.2f}x" if peer else "-"
    print(f"| {model} | {f32:.2f} | {amp:.2f} | {f32 / amp:.2f}x | {peer if peer else '-'} | {ratio} |")
PY
