#!/usr/bin/env bash
# Builds everything with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/
# (LOOM_SANITIZE=ON) and runs the test suite there. The tests that build the example
# plugin out of tree (unsanitized) and check plugin isolation are left to ci/test.sh.
#   ci/test-sanitizers.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ci/install-deps.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DLOOM_SANITIZE=ON -DLOOM_BUILD_BENCHMARKS=OFF
cmake --build build-asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j2 \
  -E 'sdk_example_out_of_tree_build|example_plugin_end_to_end|plugin_isolation'
