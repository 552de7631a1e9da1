#!/usr/bin/env bash
# The main job: builds the `loom` CLI with the cpu and autograd plugins, lists the loaded
# plugins, runs the smoke computation (non-zero exit on a wrong result), then trains the
# default CNN on Fashion-MNIST for 2 epochs (Debian's dataset-fashion-mnist package,
# installed here when missing) and writes a checkpoint.
#   ci/main-job.sh [loom train options...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ci/install-deps.sh dataset-fashion-mnist
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --target loom_cli cpu autograd
build/bin/loom plugins
build/bin/loom smoke
build/bin/loom train --save build/fashion-mnist-cnn.safetensors "$@"
