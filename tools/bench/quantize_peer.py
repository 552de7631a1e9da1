"""PyTorch's side of tools/bench/run-quantize-bench.sh: torch.ao eager-mode static
quantization (the x86 engine) of `loom train`'s CNN with the weights of a loom checkpoint,
measured as `loom quantize --json` measures loom: test accuracy float and int8, model bytes,
median latency of 25 calls after 5 warm-up calls at batch 1 and 64.

  quantize_peer.py --model CKPT.safetensors [--data DIR] [--calibrate N] [--threads N]"""
import argparse
import gzip
import json
import os
import statistics
import struct
import time

import numpy as np
import torch
import torch.ao.quantization as tq
from torch import nn

MEAN, STD = 0.2860, 0.3530


def read_safetensors(path):
    """The float32 tensors of a safetensors file (the format: an 8-byte header length, a
    JSON header, raw little-endian bytes)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        out[name] = torch.from_numpy(
            np.frombuffer(data[begin:end], dtype=np.float32).reshape(entry["shape"]).copy())
    return out


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, count = struct.unpack(">II", raw[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", raw[8:16])
        return np.frombuffer(raw[16:], dtype=np.uint8).reshape(count, 1, rows, cols)
    return np.frombuffer(raw[8:], dtype=np.uint8)


def load(data, split):
    images = read_idx(os.path.join(data, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data, f"{split}-labels-idx1-ubyte.gz"))
    x = (torch.from_numpy(images.astype(np.float32)) / 255 - MEAN) / STD
    return x, torch.from_numpy(labels.astype(np.int64))


class Cnn(nn.Module):
    """loom train's CNN, with the stubs eager-mode quantization needs."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(3136, 128)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = self.relu3(self.fc1(self.flatten(x)))
        return self.dequant(self.fc2(x))


def accuracy(model, x, y):
    with torch.no_grad():
        correct = 0
        for at in range(0, len(x), 1000):
            correct += (model(x[at:at + 1000]).argmax(1) == y[at:at + 1000]).sum().item()
    return correct / len(x)


def latency_ms(model, x):
    with torch.no_grad():
        for _ in range(5):
            model(x)
        times = []
        for _ in range(25):
            start = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def model_bytes(model):
    total = 0
    for value in model.state_dict().values():
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
        elif isinstance(value, tuple):  # packed params: (weight, bias)
            total += sum(v.numel() * v.element_size() for v in value if isinstance(v, torch.Tensor))
    return total


def packed_bytes(model):
    """Bytes of the quantized weights and biases held in the packed parameters."""
    total = 0
    for module in model.modules():
        if hasattr(module, "weight") and callable(module.weight):
            w = module.weight()
            total += w.numel() * w.element_size()
            b = module.bias()
            if b is not None:
                total += b.numel() * b.element_size()
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--calibrate", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.backends.quantized.engine = "x86"

    weights = read_safetensors(args.model)
    model = Cnn()
    # loom's checkpoint names the model's tensors "model.<layer>.<weight|bias>".
    names = {"0": "conv1", "3": "conv2", "7": "fc1", "9": "fc2"}
    model.load_state_dict({f"{names[k.split('.')[1]]}.{k.split('.')[2]}": v
                           for k, v in weights.items()
                           if k.startswith("model.") and k.split(".")[1] in names})
    model.eval()
    train_x, _ = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    float_accuracy = accuracy(model, test_x, test_y)
    float_b1, float_b64 = latency_ms(model, test_x[:1]), latency_ms(model, test_x[:64])
    float_bytes = sum(p.numel() * p.element_size() for p in model.state_dict().values())

    fused = tq.fuse_modules(model, [["conv1", "relu1"], ["conv2", "relu2"], ["fc1", "relu3"]])
    fused.qconfig = tq.get_default_qconfig("x86")
    prepared = tq.prepare(fused)
    with torch.no_grad():
        for at in range(0, args.calibrate, 64):
            prepared(train_x[at:min(at + 64, args.calibrate)])
    quantized = tq.convert(prepared)
    print(json.dumps({
        "peer": f"torch {torch.__version__} x86 engine",
        "float_accuracy": float_accuracy,
        "quantized_accuracy": accuracy(quantized, test_x, test_y),
        "float_bytes": float_bytes,
        "quantized_bytes": packed_bytes(quantized),
        "float_ms_b1": float_b1,
        "quantized_ms_b1": latency_ms(quantized, test_x[:1]),
        "float_ms_b64": float_b64,
        "quantized_ms_b64": latency_ms(quantized, test_x[:64]),
    }))


if __name__ == "__main__":
    main()
