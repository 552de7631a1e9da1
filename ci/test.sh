#!/usr/bin/env bash
# Builds everything in build/ and runs the whole test suite (ctest labels: core,
# dispatcher, host, cpu, ops, frontend, sdk, autograd, train, profiler, conform, gpu),
# including the out-of-tree SDK example build and the plugin isolation check.
#   ci/test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ci/install-deps.sh
# The ROCm kernels are compiled for one AMD target here (Note [Building the ROCm plugin]):
# no test runs them without an AMD GPU, and each further target costs minutes of hipcc.
# A build for AMD GPUs names its own: -DLOOM_ROCM_ARCHITECTURES="gfx90a;gfx940;gfx1030".
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_ROCM_ARCHITECTURES=gfx90a
cmake --build build
ctest --test-dir build --output-on-failure -j2
