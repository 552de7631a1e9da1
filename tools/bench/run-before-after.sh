#!/usr/bin/env bash
# The no-regression figures of a change, before and after in one run: the 1-element add
# through the operator and through the cpu plugin, a no-op dispatch to a plugin, the
# recorded (requires_grad) add, the kernels table on 2 threads, and the wall time of
# `loom conform --backend cpu`. BEFORE and AFTER are build trees (build/ of two
# revisions, e.g. one from `git worktree add /tmp/old REV`) with dispatch_bench,
# autograd_bench, kernels_bench, loom_cli and the cpu, autograd and test plugins built.
# The two run alternately, ROUNDS times (default 2), so drift of the machine hits both.
#   tools/bench/run-before-after.sh BEFORE AFTER [ROUNDS]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BEFORE_BUILD AFTER_BUILD [ROUNDS]" >&2; exit 2; }
rounds=${3:-2}
for tree in "$1" "$2"; do
  for bin in dispatch_bench autograd_bench kernels_bench loom; do
    [ -x "$tree/bin/$bin" ] || { echo "[run-before-after] $tree/bin/$bin is not built" >&2; exit 2; }
  done
done
dispatch_filter='BM_NoopDispatchToPlugin|BM_AddOneElementOperator|BM_AddOneElementCpuPlugin$'
for round in $(seq "$rounds"); do
  for side in before after; do
    tree=$1
    [ "$side" = after ] && tree=$2
    echo "=== round $round, $side ($tree)"
    export LOOM_PLUGIN_PATH="$tree/lib/loom/plugins"
    "$tree/bin/dispatch_bench" --benchmark_filter="$dispatch_filter" \
      --benchmark_min_time=0.5 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      2>/dev/null | grep -E '_median'
    "$tree/bin/autograd_bench" --benchmark_filter='BM_AddOneElementRequiresGrad' \
      --benchmark_min_time=0.5 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      2>/dev/null | grep -E '_median'
    LOOM_NUM_THREADS=2 "$tree/bin/kernels_bench" --benchmark_min_time=0.2 \
      --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>/dev/null |
      grep -E '_median'
    report=$(mktemp -d)
    start=$(date +%s%N)
    "$tree/bin/loom" conform --backend cpu --jobs 2 --report "$report" > /dev/null
    end=$(date +%s%N)
    rm -rf "$report"
    echo "conform_cpu_wall_ms $(((end - start) / 1000000))"
  done
done
