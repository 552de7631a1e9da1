#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang in build-fuzz/ and runs each for
# SECONDS (default 30) on its seeds: the schema parser, the manifest parser and the plugin
# file inspector. Only the libraries they need are built (core, schema, dispatcher).
#   ci/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-30}

ci/install-deps.sh clang libclang-rt-14-dev  # libFuzzer is only a Recommends of clang
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DLOOM_BUILD_FUZZERS=ON -DLOOM_BUILD_TESTS=OFF -DLOOM_BUILD_BENCHMARKS=OFF \
  -DLOOM_FUZZ_SECONDS="$seconds"
cmake --build build-fuzz --target loom_fuzzers
ctest --test-dir build-fuzz --output-on-failure -L fuzz -j2
