# PyTorch's gloo all_reduce (or reduce_scatter_tensor with --op reduce_scatter), measured
# as tools/bench/distributed_bench.cc measures loom's:
# one rank of a job started by `loom launch` (LOOM_RANK, LOOM_WORLD_SIZE,
# LOOM_MASTER_ADDR, LOOM_MASTER_PORT), float32 sums from 4 KiB to 256 MiB on the same
# tensor, the median of many calls after warm-up, nccl-tests' busbw. With --backend nccl
# the tensor is on the rank's GPU (LOOM_LOCAL_RANK) and each call is timed to the end of
# its work on the device, as distributed_bench --backend nccl times loom's.
import os
import sys
import time

import torch
import torch.distributed as dist

max_bytes = 256 << 20
if "--max-bytes" in sys.argv:
    max_bytes = int(sys.argv[sys.argv.index("--max-bytes") + 1])
backend = "gloo"
if "--backend" in sys.argv:
    backend = sys.argv[sys.argv.index("--backend") + 1]
if backend not in ("gloo", "nccl"):
    sys.exit(f"[distributed_peer] --backend: expected gloo or nccl, found {backend}")
op = "all_reduce"
if "--op" in sys.argv:
    op = sys.argv[sys.argv.index("--op") + 1]
if op not in ("all_reduce", "reduce_scatter"):
    sys.exit(f"[distributed_peer] --op: expected all_reduce or reduce_scatter, found {op}")
device = torch.device("cpu")
if backend == "nccl":
    device = torch.device("cuda", int(os.environ.get("LOOM_LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(device)


def synchronize():
    if device.type == "cuda":
        torch.cuda.synchronize(device)

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
rank, n = int(os.environ["LOOM_RANK"]), int(os.environ["LOOM_WORLD_SIZE"])
dist.init_process_group(
    backend,
    init_method=f"tcp://{os.environ['LOOM_MASTER_ADDR']}:{os.environ['LOOM_MASTER_PORT']}",
    rank=rank,
    world_size=n,
)
if rank == 0:
    print(f"# torch {torch.__version__} {backend} {op}, {n} ranks, float32 sum (median of N calls)")
    print(f"{'size(B)':>12} {'count':>10} {'N':>6} {'time(us)':>11} {'algbw(GB/s)':>10} {'busbw(GB/s)':>10}")
size = 4096
while size <= max_bytes:
    # reduce_scatter: blocks of count / n elements (sizes the ranks do not divide lose a few)
    count = size // 4 if op == "all_reduce" else size // 4 // n * n
    iters = 200 if size <= (1 << 20) else 20 if size <= (16 << 20) else 5
    t = torch.ones(count, device=device)
    block = torch.empty(count // n, device=device)

    def call():
        if op == "all_reduce":
            dist.all_reduce(t)
        else:
            dist.reduce_scatter_tensor(block, t)

    for _ in range(3):
        call()
    synchronize()
    dist.barrier()
    us = []
    for _ in range(iters):
        t0 = time.perf_counter()
        call()
        synchronize()
        us.append((time.perf_counter() - t0) * 1e6)
    us.sort()
    median = us[len(us) // 2]
    algbw = size / median / 1e3
    if rank == 0:
        print(f"{size:>12} {count:>10} {iters:>6} {median:>11.1f} {algbw:>10.3f} {algbw * (2 if op == 'all_reduce' else 1) * (n - 1) / n:>10.3f}")
    size *= 4
dist.destroy_process_group()
