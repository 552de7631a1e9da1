#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz/: the schema parser, the manifest parser, the
# plugin file inspector and the .pt2 reader) for SECONDS each (default 30) on their seeds,
# built in the clang sanitizer build build-asan/ (ci/configure-sanitizer-build.sh; after
# ci/test-sanitizers.sh there is nothing left to build).
#   ci/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-30}

ci/configure-sanitizer-build.sh -DLOOM_FUZZ_SECONDS="$seconds" > /dev/null
cmake --build build-asan --target loom_fuzzers
# The four at once: each runs for SECONDS whatever its share of the two cores.
ctest --test-dir build-asan --output-on-failure -L fuzz -j4
