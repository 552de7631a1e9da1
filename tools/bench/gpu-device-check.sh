#!/usr/bin/env bash
# The GPU checks in one run, on a machine with an NVIDIA GPU and PyTorch but none of
# loom's Debian libraries (the device tool's): unpacks .gpu-pack/loom-gpu.tar.xz (made
# here by tools/bench/gpu-device-pack.sh) where the build's paths expect it, then runs the
# CUDA plugin's tests, `loom conform --backend cuda`, conform of the products and
# convolutions on loom's own kernels (the ROCm plugin's, through the options gemm and conv:
# "loom"), a short `loom train --device cuda`, gpu_bench beside PyTorch, amp_bench beside
# PyTorch's autocast (run-amp-bench.sh), and the nccl engine: its single-rank test and
# distributed_bench --backend nccl beside PyTorch's nccl (distributed_peer.py). Each step
# has its own time limit and its log goes to $OUT (or /tmp/loom-gpu-out); a failing step
# does not stop the next.
#   tools/bench/gpu-device-check.sh [STEP...]   (steps: tests conform loom-kernels train
#                                                 profile bench amp nccl;
#                                                 default: all; GTEST_FILTER is honoured)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
out=${OUT:-/tmp/loom-gpu-out}
mkdir -p "$out"
steps=("$@")
[[ ${#steps[@]} -gt 0 ]] || steps=(tests conform loom-kernels train profile bench amp nccl)

# The build's absolute paths (plugin directories compiled into the tests) must resolve.
built_at=/work/main
if [[ $(readlink -f "$built_at" 2>/dev/null) != "$root" ]]; then
  mkdir -p "$(dirname "$built_at")"
  [[ -e $built_at ]] && { echo "[gpu-device-check] $built_at exists and is not this repo" >&2; exit 1; }
  ln -s "$root" "$built_at"
fi
xz -dc .gpu-pack/loom-gpu.tar.xz | tar -C "$root" -xf - || exit 1
lib_dirs=$root/debian-libs
# NCCL: the toolkit's, else the one PyTorch's wheel brings (nvidia/nccl/lib).
wheel_dirs=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
for name in libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
  # shellcheck disable=SC2086
  found=$(find /usr/local/cuda/ /usr/lib/x86_64-linux-gnu /opt $wheel_dirs -name "$name" 2>/dev/null | head -1)
  [[ -n $found ]] && lib_dirs+=:$(dirname "$found")
done
export LD_LIBRARY_PATH=$lib_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L
ldd build/lib/loom/plugins/libloom_plugin_cuda.so | grep -E 'not found|cublas|cudnn'

manifest=$out/manifest.textproto
cat > "$manifest" <<EOF
search_dirs: "$root/build/lib/loom/plugins"
plugins { name: "cpu" }
plugins { name: "autograd" }
plugins { name: "profiler" }
plugins { name: "autocast" }
plugins { name: "cuda" }
EOF
loom_manifest=$out/manifest-loom-kernels.textproto
sed 's/plugins { name: "cuda" }/plugins { name: "cuda" options { key: "gemm" value: "loom" } options { key: "conv" value: "loom" } }/' \
  "$manifest" > "$loom_manifest"

run_step() {  # name, seconds, command...
  local name=$1 seconds=$2
  shift 2
  local start=$SECONDS
  timeout "$seconds" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - start)) s"
  tail -n "${TAIL_LINES:-25}" "$out/$name.log"
}

for step in "${steps[@]}"; do
  case $step in
    tests) run_step tests 120 build/bin/cuda_plugin_tests --gtest_filter="${GTEST_FILTER:-*}" ;;
    conform)
      run_step conform 100 build/bin/loom --manifest "$manifest" conform --backend cuda \
        --jobs 8 --timeout 60 --report /tmp/conform
      cp /tmp/conform/coverage.md "$out/conform-coverage.md" 2>/dev/null ;;
    loom-kernels)
      run_step loom-kernels 100 build/bin/loom --manifest "$loom_manifest" conform --backend cuda \
        --ops '(loom::)?(conv.*|mm|bmm|addmm|baddbmm|matmul|linear)' --jobs 8 --timeout 60 \
        --report /tmp/conform-loom-kernels
      run_step loom-kernels-train 60 build/bin/loom --manifest "$loom_manifest" train \
        --device cuda --epochs 1 --data "$root/fashion-mnist" ;;
    train)
      run_step train 60 build/bin/loom --manifest "$manifest" train --device cuda --epochs 2 \
        --data "$root/fashion-mnist" ;;
    profile)
      run_step profile 60 build/bin/loom --manifest "$manifest" train --device cuda --epochs 1 \
        --limit 2560 --data "$root/fashion-mnist" --profile "$out/cnn-step-trace.json" ;;
    bench) run_step bench 150 python3 tools/bench/run-gpu-bench.py --bench build/bin/gpu_bench --rounds 3 ;;
    amp)  # issue #47: float16 autocast beside float32 and PyTorch's autocast
      PYTHON=python3 AMP_BENCH=build/bin/amp_bench run_step amp 150 \
        tools/bench/run-amp-bench.sh --device cuda --dtype float16 3 ;;
    nccl)  # issue #48: one rank on the GPU (one GPU: no multi-GPU bandwidth to measure)
      run_step nccl-test 60 build/bin/distributed_tests --gtest_filter='DistributedNccl.*'
      run_step nccl-bench 60 build/bin/loom launch --nproc 1 --master-port 29830 -- \
        build/bin/distributed_bench --backend nccl --max-bytes 67108864
      run_step nccl-bench-pytorch 60 build/bin/loom launch --nproc 1 --master-port 29831 -- \
        python3 tools/bench/distributed_peer.py --backend nccl --max-bytes 67108864 ;;
    *) echo "[gpu-device-check] unknown step '$step': expected tests, conform, loom-kernels, train, profile, bench, amp or nccl" ;;
  esac
done
