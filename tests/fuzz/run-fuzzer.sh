#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time on its seeds, with a fresh corpus folder
# (libFuzzer writes new inputs into the first folder it is given, so the seeds in the
# source tree stay untouched). Crashes, aborts and leaks fail it; the failing input is
# left in the working directory (crash-*, leak-*) to reproduce with `FUZZER FILE`.
#   run-fuzzer.sh FUZZER SECONDS DICT|- SEED_DIR...
set -euo pipefail
fuzzer=$1 seconds=$2 dict=$3
shift 3
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
args=(-max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048
      -print_final_stats=1)
[[ $dict != - ]] && args+=(-dict="$dict")
"$fuzzer" "${args[@]}" "$corpus" "$@"
