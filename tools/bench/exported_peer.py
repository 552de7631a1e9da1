#!/usr/bin/env python3
"""PyTorch 2.x eager on the committed exported models (tests/models/*.pt2), the peer of
graph_bench's BM_ExportedModel: torch.export.load, ep.module(), the same input shapes,
median of many calls after warm-up, 2 threads (run by tools/bench/run-exported-bench.sh).
"""
import os
import statistics
import sys
import time

import torch

MODELS = {
    "mlp_batch64": ("mlp", (64, 16)),
    "cnn_batch_norm_batch64": ("cnn_batch_norm", (64, 1, 28, 28)),
    "residual_block": ("residual_block", (2, 8, 12, 12)),
    "transformer_encoder": ("transformer_encoder", (2, 10, 32)),
    "lstm": ("lstm", (3, 7, 8)),
    "spectrum_batch64": ("spectrum", (64, 16)),
}


def median_us(fn, x, seconds=1.0):
    for _ in range(20):
        fn(x)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 50:
        start = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def main(models_dir):
    torch.set_num_threads(int(os.environ.get("LOOM_NUM_THREADS", "2")))
    torch.manual_seed(0)
    for label, (name, shape) in MODELS.items():
        module = torch.export.load(os.path.join(models_dir, f"{name}.pt2")).module()
        x = torch.randn(*shape)
        with torch.no_grad():
            print(f"PyTorch {torch.__version__} eager {label}: {median_us(module, x):.1f} us")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/models")
