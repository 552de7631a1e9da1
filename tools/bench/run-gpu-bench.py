#!/usr/bin/env python3
"""The CUDA plugin beside PyTorch on one GPU, in the same run.

Runs build/bin/gpu_bench (loom) and the same calls through the PyTorch that python3
imports, alternating the two for --rounds rounds, both timed the same way (Note [Timing
queued GPU work] in gpu_bench.cc), and prints one markdown table: each side's best
round median, the ratio PyTorch time / loom time (above 1: loom is faster), and the
achieved bandwidth or TFLOP/s against the device's peak memory bandwidth
(2 x memory clock x bus width, read from the CUDA runtime).

    python3 tools/bench/run-gpu-bench.py [--bench build/bin/gpu_bench] [--rounds 2]
"""
import argparse
import ctypes
import glob
import os
import statistics
import subprocess
import sys
import time

import torch


def peak_bandwidth_bytes_per_s():
    """2 x memory clock x bus width of device 0, or None when the runtime will not say."""
    candidates = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia",
                                        "cu*", "lib", "libcudart.so*"))
    candidates += glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia",
                                         "cuda_runtime", "lib", "libcudart.so*"))
    candidates += ["libcudart.so"]
    for path in candidates:
        try:
            cudart = ctypes.CDLL(path)
        except OSError:
            continue
        clock_khz, bus_bits = ctypes.c_int(0), ctypes.c_int(0)
        memory_clock_rate, global_memory_bus_width = 36, 37  # cudaDeviceAttr values
        if (cudart.cudaDeviceGetAttribute(ctypes.byref(clock_khz), memory_clock_rate, 0) == 0 and
                cudart.cudaDeviceGetAttribute(ctypes.byref(bus_bits), global_memory_bus_width,
                                              0) == 0):
            return 2.0 * clock_khz.value * 1e3 * bus_bits.value / 8
    return None


def median_us_per_call(body, samples):
    for _ in range(3):
        body()
    torch.cuda.synchronize()
    start = time.perf_counter()
    body()
    torch.cuda.synchronize()
    one = time.perf_counter() - start
    calls = min(max(int(2e-3 / max(one, 1e-9)), 1), 1000)
    per_call = []
    for _ in range(samples):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            body()
        torch.cuda.synchronize()
        per_call.append((time.perf_counter() - start) / calls)
    return statistics.median(per_call) * 1e6


def torch_cases():
    """(name, body, bytes moved or None, flops or None), the same as gpu_bench.cc's."""
    dev = torch.device("cuda:0")
    cases = []
    for n in (1 << 20, 1 << 24, 1 << 26):
        a = torch.randn(n, device=dev)
        b = torch.randn(n, device=dev)
        out = torch.empty_like(a)
        ha, hb = a.bfloat16(), b.bfloat16()
        cases += [
            (f"add_f32_{n}", lambda a=a, b=b: a + b, 12 * n, None),
            (f"add_out_f32_{n}", lambda a=a, b=b, out=out: torch.add(a, b, out=out), 12 * n, None),
            (f"copy_f32_{n}", lambda a=a, out=out: out.copy_(a), 8 * n, None),
            (f"add_bf16_{n}", lambda ha=ha, hb=hb: ha + hb, 6 * n, None),
        ]
    # 64 MiB between the device and pinned host memory, non-blocking
    n = 1 << 24
    on_gpu = torch.randn(n, device=dev)
    pinned = torch.empty(n, pin_memory=True)
    cases += [
        (f"h2d_pinned_f32_{n}", lambda g=on_gpu, p=pinned: g.copy_(p, non_blocking=True), None,
         None),
        (f"d2h_pinned_f32_{n}", lambda g=on_gpu, p=pinned: p.copy_(g, non_blocking=True), None,
         None),
    ]
    def chain(x, y):
        return ((x * 2 + 1).sin().exp().tanh() * y + x).relu().sigmoid()
    cx = torch.randn(1 << 22, device=dev)
    cy = torch.randn(1 << 22, device=dev)
    cases.append(("chain_f32_4194304", lambda: chain(cx, cy), 12 * (1 << 22), None))
    try:  # torch.compile needs Triton (in the CUDA wheels of PyTorch)
        compiled = torch.compile(chain)
        compiled(cx, cy)
        cases.append(("chain_compiled_f32_4194304", lambda: compiled(cx, cy), 12 * (1 << 22),
                      None))
    except Exception as e:  # noqa: BLE001 - any failure: the row shows loom alone
        print(f"torch.compile unavailable: {e}", file=sys.stderr)
    x = torch.randn(8192, 8192, device=dev)
    bcast = torch.randn(8192, device=dev)
    xs = x.view(64, 1 << 20)  # 64 long lines
    elems = 8192 * 8192
    cases += [
        ("sum_f32_8192x8192", lambda: x.sum(), 4 * elems, None),
        ("sum_rows_f32_8192x8192", lambda: x.sum(1), 4 * elems, None),
        ("softmax_f32_8192x8192", lambda: x.softmax(1), 8 * elems, None),
        ("mul_bcast_f32_8192x8192", lambda: x * bcast, 8 * elems, None),
        ("sum_columns_f32_8192x8192", lambda: x.sum(0), 4 * elems, None),
        ("amax_rows_f32_8192x8192", lambda: x.amax(1), 4 * elems, None),
        ("var_rows_f32_8192x8192", lambda: x.var(1), 4 * elems, None),
        ("mul_scalar_f32_8192x8192", lambda: x * 2.5, 8 * elems, None),
        ("cumsum_f32_64x1048576", lambda: xs.cumsum(1), 8 * elems, None),
    ]
    for m in (1024, 4096, 8192):
        for dtype, tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
            a = torch.randn(m, m, device=dev).to(dtype)
            b = torch.randn(m, m, device=dev).to(dtype)
            cases.append((f"mm_{tag}_{m}", lambda a=a, b=b: a.mm(b), None, 2.0 * m ** 3))
            # loom's tiled GEMM (gemm: "loom", the ROCm plugin's) beside cuBLAS
            cases.append((f"loom_kernels_mm_{tag}_{m}", lambda a=a, b=b: a.mm(b), None,
                          2.0 * m ** 3))
    for batch in (64, 256):
        cases.append((f"cnn_train_step_b{batch}", cnn_train_step(dev, batch), None, None))
    for mode in ("foreach", "fused"):
        cases.append((f"adam_{mode}_step_100x65536", adam_step(dev, mode), None, None))
    image = torch.randn(8, 64, 56, 56, device=dev)
    kernel = torch.randn(64, 64, 3, 3, device=dev)
    flops = 2.0 * 8 * 64 * 56 * 56 * 64 * 9
    conv = lambda: torch.nn.functional.conv2d(image, kernel, padding=1)  # noqa: E731
    cases.append(("conv2d_3x3_f32_8x64x56x56", conv, None, flops))
    # loom's implicit-GEMM convolution (the ROCm plugin's) beside PyTorch's cuDNN call
    cases.append(("loom_kernels_conv2d_3x3_f32_8x64x56x56", conv, None, flops))
    # a small convolution with bias: host-bound, a call costs its host time (loom's graph
    # plans, and its legacy cuDNN calls, beside PyTorch's cached plans)
    small_image = torch.randn(1, 8, 16, 16, device=dev)
    small_kernel = torch.randn(8, 8, 3, 3, device=dev)
    small_bias = torch.randn(8, device=dev)
    small = lambda: torch.nn.functional.conv2d(small_image, small_kernel, small_bias, padding=1)  # noqa: E731
    cases.append(("conv2d_bias_3x3_f32_1x8x16x16", small, None, None))
    cases.append(("legacy_cudnn_conv2d_bias_3x3_f32_1x8x16x16", small, None, None))
    # the step on loom's implicit-GEMM convolution and tiled GEMM (the ROCm plugin's)
    # beside PyTorch's
    cases.append(("loom_kernels_cnn_train_step_b64", cnn_train_step(dev, 64), None, None))
    for source in ("host", "pinned"):
        for batch in (64, 256):
            cases.append((f"cnn_train_step_{source}_batch_b{batch}",
                          cnn_train_step(dev, batch, source), None, None))
    return cases


def cnn_train_step(dev, batch, source="device"):
    """One training step of `loom train`'s CNN with Adam, as gpu_bench.cc's; source
    "host": the batch is copied from (pageable) host memory at each step; "pinned": from
    pinned memory, non-blocking."""
    nn = torch.nn
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(),
                        nn.Linear(128, 10)).to(dev)
    x = torch.randn(batch, 1, 28, 28, device=dev)
    host_x = x.cpu()
    if source == "pinned":
        host_x = host_x.pin_memory()
    target = torch.randint(0, 10, (batch,), device=dev)
    adam = torch.optim.Adam(net.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()

    def step():
        adam.zero_grad()
        batch_x = x if source == "device" else host_x.to(dev, non_blocking=source == "pinned")
        loss = criterion(net(batch_x), target)
        loss.backward()
        adam.step()
        return loss
    return step


def adam_step(dev, mode):
    """One Adam step over 100 parameters of 65,536 floats with fixed gradients, through
    the foreach ops or the fused op (gpu_bench.cc's adam_*_step cases)."""
    torch.manual_seed(0)
    params = [torch.randn(65536, device=dev, requires_grad=True) for _ in range(100)]
    for p in params:
        p.grad = torch.randn_like(p)
    adam = torch.optim.Adam(params, lr=1e-3, **{mode: True})

    def step():
        adam.step()
        return params[0]
    return step


def run_loom(bench, samples):
    result = subprocess.run([bench, "--samples", str(samples)], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"[run-gpu-bench] {bench} failed ({result.returncode}): {result.stderr}")
    figures = {}
    for line in result.stdout.splitlines():
        name, value = line.split()
        figures[name] = float(value)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bin/gpu_bench")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--samples", type=int, default=25)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("[run-gpu-bench] PyTorch sees no CUDA device: run this on a machine with a GPU")
    # Same numerics on both sides: float32 products and convolutions without TF32 (loom's
    # default; PyTorch's cuDNN default is TF32 on).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cases = torch_cases()
    loom_runs, torch_runs = [], []
    for _ in range(args.rounds):
        loom_runs.append(run_loom(args.bench, args.samples))
        torch_runs.append({name: median_us_per_call(body, args.samples)
                           for name, body, _, _ in cases})
    peak = peak_bandwidth_bytes_per_s()
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; "
          f"peak memory bandwidth "
          f"{'unknown' if peak is None else f'{peak / 1e9:.0f} GB/s'}; "
          f"best of {args.rounds} alternating rounds, each a median of {args.samples} samples")
    print("| case | loom us | PyTorch us | PyTorch/loom | loom | PyTorch |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, _, moved, flops in cases:
        loom_us = min(run.get(name, float("inf")) for run in loom_runs)
        torch_us = min(run[name] for run in torch_runs)

        def rate(us):
            if us == float("inf") or (flops is None and moved is None):
                return "-"
            if flops is not None:
                return f"{flops / us / 1e6:.1f} TFLOP/s"
            text = f"{moved / us / 1e3:.0f} GB/s"
            return text + (f" ({moved / us * 1e6 / peak:.0%})" if peak else "")

        print(f"| {name} | {loom_us:.1f} | {torch_us:.1f} | {torch_us / loom_us:.2f} | "
              f"{rate(loom_us)} | {rate(torch_us)} |")


if __name__ == "__main__":
    main()
