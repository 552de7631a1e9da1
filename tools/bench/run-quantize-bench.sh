#!/usr/bin/env bash
# Quantization beside PyTorch 2.x in the same run (issue #45): `loom train`'s CNN trained
# for 2 epochs (seed 0), then, in alternating rounds, `loom quantize --method static` and
# torch.ao's eager static quantization with the x86 engine on the same weights
# (tools/bench/quantize_peer.py): accuracy, bytes, batch-1 and batch-64 latency, 2
# threads each; then loom's QAT, and the batch-1 linear layers of quantized_linear_bench.
# Needs the venv of tools/bench/setup-pytorch-peer.sh.
#   tools/bench/run-quantize-bench.sh [CHECKPOINT] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target loom_cli quantization quantized_linear_bench >/dev/null
ckpt=${1:-/tmp/loom-quantize-bench-cnn.safetensors}
rounds=${2:-3}
export LOOM_NUM_THREADS=2 OMP_NUM_THREADS=2
python=build/pytorch-venv/bin/python
site=$(ls -d build/pytorch-venv/lib/python3*/site-packages)
nvidia=$site/nvidia
torch_libs=$nvidia/nccl/lib:$nvidia/cu13/lib:$nvidia/cusparselt/lib:$nvidia/nvshmem/lib:/usr/local/cuda/lib64
if [[ ! -f $ckpt ]]; then
  build/bin/loom train --epochs 2 --seed 0 --save "$ckpt" | tail -2
fi
for round in $(seq "$rounds"); do
  echo "round $round"
  echo "loom:    $(build/bin/loom --threads 2 quantize --model "$ckpt" --method static --json)"
  echo "pytorch: $(LD_LIBRARY_PATH=$torch_libs:${LD_LIBRARY_PATH:-} "$python" tools/bench/quantize_peer.py \
    --model "$ckpt" --threads 2 2>/dev/null)"
done
echo "loom qat: $(build/bin/loom --threads 2 quantize --model "$ckpt" --method qat --json)"
build/bin/quantized_linear_bench
