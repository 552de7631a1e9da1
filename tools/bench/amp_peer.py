"""PyTorch's side of tools/bench/amp_bench.cc: the same models and steps (zero_grad,
forward and cross entropy under torch.autocast for the amp cases, backward of the
GradScaler-scaled loss for float16, SGD with momentum, a device synchronisation), the
median milliseconds of --steps steps after --warmup, one "<case> <ms>" line per case."""
import argparse
import statistics
import time

import torch
import torch.nn as nn


def mlp(width):
    layers = []
    for _ in range(4):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def wide_cnn():
    return nn.Sequential(nn.Conv2d(1, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(256 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_step_ms(net, x, y, args, amp):
    dtype = torch.float16 if args.dtype == "float16" else torch.bfloat16
    sgd = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler(args.device, enabled=amp and dtype == torch.float16)
    criterion = nn.CrossEntropyLoss()
    times = []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        sgd.zero_grad()
        with torch.autocast(args.device, dtype=dtype, enabled=amp):
            loss = criterion(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(sgd)
        scaler.update()
        sync(x.device)
        if step >= args.warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--mlp-width", type=int, default=4096)
    p.add_argument("--mlp-batch", type=int, default=1024)
    p.add_argument("--cnn-batch", type=int, default=512)
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 as loom computes it
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    torch.manual_seed(0)
    cases = [("mlp", lambda: mlp(args.mlp_width), torch.randn(args.mlp_batch, args.mlp_width),
              torch.randint(10, (args.mlp_batch,))),
             ("cnn", wide_cnn, torch.randn(args.cnn_batch, 1, 28, 28),
              torch.randint(10, (args.cnn_batch,)))]
    for name, make, x, y in cases:
        net = make().to(device)
        x, y = x.to(device), y.to(device)
        f32 = median_step_ms(net, x, y, args, False)
        amp = median_step_ms(net, x, y, args, True)
        print(f"{name}_float32 {f32:.3f}\n{name}_{args.dtype} {amp:.3f}", flush=True)


if __name__ == "__main__":
    main()
