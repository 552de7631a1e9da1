"""PyTorch's activation checkpointing beside loom's BM_CheckpointedMlp (autograd_bench.cc):
forward and backward of a 20-layer MLP (Linear 128 + ReLU, batch 1024), plain and in 5
checkpoint_sequential segments of the reentrant and the non-reentrant kind; the median of
many calls after warm-up, one thread unless --threads says otherwise.

  build/pytorch-venv/bin/python tools/bench/checkpoint_peer.py [--threads N] [--calls N]
"""
import argparse
import statistics
import time

import torch
from torch.utils.checkpoint import checkpoint_sequential


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    layers = []
    for _ in range(20):
        layers += [torch.nn.Linear(128, 128), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers)
    x = torch.randn(1024, 128)
    print(f"PyTorch {torch.__version__}, {args.threads} thread(s)")
    for kind, name in [(0, "plain"), (1, "reentrant"), (2, "non-reentrant")]:
        def step():
            if kind == 0:
                out = net(x)
            else:
                # the reentrant kind needs an input that requires grad to record anything
                inp = x.detach().requires_grad_(kind == 1)
                out = checkpoint_sequential(net, 5, inp, use_reentrant=kind == 1)
            out.pow(2).mean().backward()
            for p in net.parameters():
                p.grad = None

        for _ in range(5):
            step()
        times = []
        for _ in range(args.calls):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        print(f"BM_TorchCheckpointedMlp/kind:{kind} ({name}): median "
              f"{statistics.median(times) * 1e3:.2f} ms over {args.calls} calls")


if __name__ == "__main__":
    main()
