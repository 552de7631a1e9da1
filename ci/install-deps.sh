#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing loom needs. Idempotent: when
# every package is already installed it does nothing (no apt-get update). Run as root; as
# another user it only reports what is missing.
#   ci/install-deps.sh [EXTRA_PACKAGE...]   (e.g. clang, for ci/fuzz.sh)
set -euo pipefail

packages=(
  g++ cmake ninja-build make binutils
  libgloo-dev libopenmpi-dev openmpi-bin  # the distributed plugin's gloo and mpi engines
  libboost-dev libboost-filesystem-dev libboost-system-dev
  libboost-context-dev  # the GPU emulator's fibers (plugins/gpu/emulator)
  libabsl-dev libprotobuf-dev protobuf-compiler libdlpack-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev zlib1g-dev nlohmann-json3-dev libunwind-dev pkg-config libzip-dev libfftw3-dev libxxhash-dev
  python3
  ca-certificates
  hipcc  # the ROCm plugin (plugins/gpu); the CUDA one builds when /usr/local/cuda has nvcc
)
packages+=("$@")

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [ "$status" != "install ok installed" ]; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install them as root with:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends ${packages[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"
