"""torch.compile beside loom::compile (tools/bench/run-compile-bench.sh): the same 9-op
pointwise chain on 4M float32 and softmax + layer_norm + GELU + amax block on 4096x1024,
eager and compiled with inductor on the CPU, medians of
many calls after warm-up; and `--first-call`, the first compiled call of a new process
(run with an empty TORCHINDUCTOR_CACHE_DIR for a cold compile, then again for a warm one)."""
import statistics
import sys
import time

import torch


def chain(x, y):
    return ((x * 2 + 1).sin().exp().tanh() * y + x).relu().sigmoid()


def norm_block(x, w, b):
    h = torch.nn.functional.gelu(
        torch.nn.functional.layer_norm(x.softmax(-1) + x, (x.shape[-1],), w, b, 1e-5),
        approximate="tanh")
    return h + h.amax(-1, keepdim=True)


def median_ms(fn, *args, reps=30):
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    torch.set_num_threads(2)
    torch.manual_seed(0)
    x, y = torch.randn(4 << 20), torch.randn(4 << 20)
    if "--first-call" in sys.argv:
        chain(x, y)
        t0 = time.perf_counter()
        chain(x, y)
        t1 = time.perf_counter()
        f = torch.compile(chain)
        f(x, y)
        t2 = time.perf_counter()
        eager, first = (t1 - t0) * 1e3, (t2 - t1) * 1e3
        print(f"torch {torch.__version__}: first call {first:.1f} ms, one eager call "
              f"{eager:.1f} ms, compile {first - eager:.1f} ms")
        return
    f = torch.compile(chain)
    print(f"torch {torch.__version__} chain eager    {median_ms(chain, x, y):8.2f} ms")
    print(f"torch {torch.__version__} chain compiled {median_ms(f, x, y):8.2f} ms")
    bx, bw, bb = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024)
    g = torch.compile(norm_block)
    print(f"torch {torch.__version__} norm block eager    {median_ms(norm_block, bx, bw, bb):8.2f} ms")
    print(f"torch {torch.__version__} norm block compiled {median_ms(g, bx, bw, bb):8.2f} ms")


if __name__ == "__main__":
    main()
