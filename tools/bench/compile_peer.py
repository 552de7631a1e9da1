"""torch.compile beside loom::compile (tools/bench/run-compile-bench.sh): the same 9-op
pointwise chain on 4M float32, softmax + layer_norm + GELU + amax block on 4096x1024, Adam's
update over `loom train`'s MLP and its training step, eager and compiled with inductor on
the CPU, medians of many calls after warm-up; and `--first-call`, the first compiled call of a new process
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


def make_mlp():
    """`loom train`'s MLP, as compile_bench.cc's."""
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))


def adam_update_ms(compiled):
    """Adam's update alone over the MLP's parameters with fixed gradients (compile_bench's
    BM_AdamUpdate*): eager, or torch.compile(optimizer.step)."""
    torch.manual_seed(0)
    net = make_mlp()
    for p in net.parameters():
        p.grad = torch.randn_like(p)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    step = torch.compile(opt.step) if compiled else opt.step
    return median_ms(step, reps=300) * 1e3


def mlp_step_ms(compiled):
    """One training step of the MLP at batch 64 (compile_bench's BM_MlpStep*): forward,
    loss, backward, Adam; compiled: the model and the optimizer's step."""
    torch.manual_seed(0)
    net = make_mlp()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    criterion = torch.nn.CrossEntropyLoss()
    x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
    model = torch.compile(net) if compiled else net
    step = torch.compile(opt.step) if compiled else opt.step

    def one():
        opt.zero_grad()
        criterion(model(x), y).backward()
        step()
    return median_ms(one, reps=300) * 1e3


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
    print(f"torch {torch.__version__} Adam update eager    {adam_update_ms(False):8.1f} us")
    print(f"torch {torch.__version__} Adam update compiled {adam_update_ms(True):8.1f} us")
    print(f"torch {torch.__version__} MLP step eager    {mlp_step_ms(False):8.1f} us")
    print(f"torch {torch.__version__} MLP step compiled {mlp_step_ms(True):8.1f} us")


if __name__ == "__main__":
    main()
