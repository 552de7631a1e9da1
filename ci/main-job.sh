#!/usr/bin/env bash
# The main job: builds the `loom` CLI and the cpu plugin, lists the loaded plugins and
# runs the smoke computation through the cpu plugin (non-zero exit on a wrong result).
#   ci/main-job.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ci/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --target loom_cli cpu
build/bin/loom plugins
build/bin/loom smoke
