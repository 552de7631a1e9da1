#!/usr/bin/env bash
# Builds everything with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/
# (LOOM_SANITIZE=ON) and runs the test suite there. The tests that build the example
# plugin out of tree (unsanitized) and check plugin isolation are left to ci/test.sh.
#   ci/test-sanitizers.sh
#
# Note [LeakSanitizer and OpenMP workers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# With GCC 12's sanitizer runtime, the leak check at exit crashes ("Tracer caught signal
# 11") in a process where libgomp worker threads ran oneDNN primitives (conv): the
# runtime reads a bogus dynamic-TLS range for those threads (LSAN_OPTIONS=verbosity=1
# shows "DTLS 12 at 0x0001000004ab-0x0025000015ad"). It is the runtime's bookkeeping, not
# a leak: with use_tls=0 the only reports are glibc's dlerror buffers, which live in TLS.
# So the suite runs with LOOM_NUM_THREADS=1 (no workers), keeping the TLS scan; the
# cpu_parallel_threads_2/3 tests and the child processes of CpuParallelProcesses set
# their own thread counts, so the pool's parallel paths still run under both sanitizers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ci/install-deps.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DLOOM_SANITIZE=ON -DLOOM_BUILD_BENCHMARKS=OFF
cmake --build build-asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LOOM_NUM_THREADS=1
ctest --test-dir build-asan --output-on-failure -j2 \
  -E 'sdk_example_out_of_tree_build|example_plugin_end_to_end|plugin_isolation'
