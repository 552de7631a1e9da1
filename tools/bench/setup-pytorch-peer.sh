#!/usr/bin/env bash
# Sets up PyTorch 2.x from PyPI as a benchmark peer and builds pytorch_peer_bench (the
# source of libtorch_peer_bench) against the wheel's C++ libraries. The venv lives in
# build/pytorch-venv; it is never a dependency of loom or of .ci/run. `--no-deps`: the
# benchmark links libtorch_cpu and libc10 only, which need none of the CUDA wheels.
#   tools/bench/setup-pytorch-peer.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ci/install-deps.sh python3-venv
venv=build/pytorch-venv
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
"$venv/bin/pip" show torch >/dev/null 2>&1 || "$venv/bin/pip" install --no-deps torch
# find_spec does not import torch (its Python dependencies are not installed).
wheel=$("$venv/bin/python" -c \
  'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("torch").origin))')
echo "PyTorch peer: $("$venv/bin/pip" show torch | sed -n 's/^Version: //p') in $wheel"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLOOM_BENCH_PYTORCH_WHEEL="$wheel" >/dev/null
cmake --build build --target pytorch_peer_bench
