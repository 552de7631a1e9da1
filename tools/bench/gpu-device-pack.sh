#!/usr/bin/env bash
# Packs what the GPU checks need for a machine with a GPU but none of loom's Debian
# libraries (the device tool's): the built CUDA plugin, its tests, `loom`, gpu_bench, amp_bench, the
# distributed plugin with its gloo and nccl engines, its tests and distributed_bench, the
# core libraries and plugins they load (stripped), the Debian libraries they link (not
# glibc, libstdc++ or CUDA's, which that machine has), and Fashion-MNIST's 10,000 test
# images for a short `loom train --device cuda`. Writes .gpu-pack/loom-gpu.tar.xz, which
# tools/bench/gpu-device-check.sh unpacks there.
#   tools/bench/gpu-device-pack.sh [BUILD_DIR]   (after `cmake --build build`)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build}
pack=.gpu-pack
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

binaries=(bin/cuda_plugin_tests bin/gpu_bench bin/amp_bench bin/loom bin/distributed_tests
          bin/distributed_rank bin/distributed_bench)
libraries=(lib/libloom.so lib/libloom_core.so lib/libloom_dispatcher.so lib/libloom_ops.so
           lib/libloom_schema.so lib/libloom_graph.so)
plugins=(cpu cuda autograd profiler compiler autocast distributed)
engines=(gloo nccl)  # the distributed plugin's engine modules (the nccl step)

mkdir -p "$stage/build/bin" "$stage/build/lib/loom/plugins" "$stage/debian-libs" \
  "$stage/fashion-mnist"
for f in "${binaries[@]}" "${libraries[@]}"; do
  [[ -f $build/$f ]] || { echo "[gpu-device-pack] missing $build/$f: build first" >&2; exit 1; }
  strip --strip-debug -o "$stage/build/$f" "$build/$f"
done
for p in "${plugins[@]}"; do
  f=lib/loom/plugins/libloom_plugin_$p.so
  strip --strip-debug -o "$stage/build/$f" "$build/$f"
done
for e in "${engines[@]}"; do
  f=lib/loom/plugins/libloom_distributed_$e.so
  [[ -f $build/$f ]] || { echo "[gpu-device-pack] missing $build/$f: build first" >&2; exit 1; }
  strip --strip-debug -o "$stage/build/$f" "$build/$f"
done

# The Debian libraries they link, found by ldd, less what every Linux with CUDA has.
for f in "$stage"/build/bin/* "$stage"/build/lib/*.so "$stage"/build/lib/loom/plugins/*.so; do
  LD_LIBRARY_PATH="$stage/build/lib" ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so|/usr/local/cuda' |
  while read -r lib; do cp -L "$lib" "$stage/debian-libs/"; done

# Fashion-MNIST's test split, also as the training split: enough for a short run.
data=/usr/share/datasets/fashion-mnist
if [[ ! -f $data/t10k-images-idx3-ubyte.gz ]]; then
  deb=$(cd "$stage" && apt-get download dataset-fashion-mnist >/dev/null 2>&1 && ls "$stage"/*.deb)
  dpkg-deb -x "$deb" "$stage/root"
  data=$stage/root/usr/share/datasets/fashion-mnist
fi
for kind in images-idx3 labels-idx1; do
  cp "$data/t10k-$kind-ubyte.gz" "$stage/fashion-mnist/t10k-$kind-ubyte.gz"
  cp "$data/t10k-$kind-ubyte.gz" "$stage/fashion-mnist/train-$kind-ubyte.gz"
done

mkdir -p "$pack"
tar -C "$stage" -cf - build debian-libs fashion-mnist | xz -T2 -6 > "$pack/loom-gpu.tar.xz"
ls -la "$pack/loom-gpu.tar.xz"
