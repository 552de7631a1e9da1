#!/usr/bin/env bash
# Builds everything in build/ and runs the whole test suite (ctest labels: core,
# dispatcher, host, cpu, ops, frontend, sdk), including the out-of-tree SDK example build
# and the plugin isolation check.
#   ci/test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ci/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build
ctest --test-dir build --output-on-failure -j2
