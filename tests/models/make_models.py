#!/usr/bin/env python3
"""Makes the exported test models of tests/models with PyTorch 2.x from PyPI.

Each model is exported with torch.export, lowered to the Core ATen IR
(run_decompositions) and saved as <name>.pt2; <name>.safetensors holds its inputs
(input_0, ...) and PyTorch's outputs (output_0, ...) for them, in float32. The files are
committed: loom and its tests never need PyTorch. To remake them, in the venv of
tools/bench/setup-pytorch-peer.sh with torch's Python dependencies, and, since PyPI's
wheel is a CUDA build, the CUDA libraries /usr/local/cuda lacks or has older:
  build/pytorch-venv/bin/pip install sympy networkx jinja2 fsspec filelock numpy \
      safetensors "nvidia-cufile==1.17.1.22.*" nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 \
      nvidia-nccl-cu13
  (nv=build/pytorch-venv/lib/python3.11/site-packages/nvidia;
   LD_LIBRARY_PATH=$nv/nccl/lib:$nv/cu13/lib:$nv/cusparselt/lib:$nv/nvshmem/lib:/usr/local/cuda/lib64 \
   build/pytorch-venv/bin/python tests/models/make_models.py tests/models)
"""
import os
import sys

import torch
from safetensors.torch import save_file


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class CnnWithBatchNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.relu(self.bn2(self.conv2(x)))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.log_softmax(self.fc(x), dim=1)


class ResidualBlock(torch.nn.Module):
    def __init__(self, channels=8):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class TransformerEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(
            d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(input_size=8, hidden_size=16, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class Pools3d(torch.nn.Module):
    """The 3-D pools loom builds from 2-D ones: average (padding, ceil mode, no padding in
    the count), maximum with its indices (padding, dilation), adaptive average."""

    def forward(self, x):
        a = torch.nn.functional.avg_pool3d(x, (3, 2, 3), stride=(2, 1, 2), padding=1,
                                           ceil_mode=True, count_include_pad=False)
        m, i = torch.nn.functional.max_pool3d(x, (2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0),
                                              dilation=(2, 1, 1), return_indices=True)
        g = torch.nn.functional.adaptive_avg_pool3d(x, (2, 3, 4))
        return a.sum(dim=(2, 3, 4)) + m.sum(dim=(2, 3, 4)) + g.sum(dim=(2, 3, 4)) + \
            i.to(x.dtype).mean(dim=(2, 3, 4)) * 1e-3


class Spectrum(torch.nn.Module):
    """Spectral features: rfft over time (_fft_r2c), its parts (view_as_real) through a
    linear layer, and the signal back from its spectrum (irfft: _fft_c2r)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2 * 9, 4)

    def forward(self, x):
        z = torch.fft.rfft(x, norm="ortho")
        features = self.fc(torch.view_as_real(z).flatten(1))
        return features, torch.fft.irfft(z, n=16, norm="ortho") - x


def randomize_batch_norm_statistics(model, generator):
    # Fresh running statistics are 0 and 1: give eval mode something to normalise with.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=generator) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=generator) + 0.5)


# name -> (model, example inputs, dynamic batch dimension, inputs to check with)
def models():
    g = torch.Generator().manual_seed(0)
    def randn(*sizes):
        return torch.randn(*sizes, generator=g)
    batch = torch.export.Dim("batch", min=1, max=1024)
    return {
        "mlp": (Mlp(), (randn(4, 16),), batch, (randn(6, 16),)),
        "cnn_batch_norm": (CnnWithBatchNorm(), (randn(2, 1, 28, 28),), batch,
                           (randn(5, 1, 28, 28),)),
        "residual_block": (ResidualBlock(), (randn(2, 8, 12, 12),), None, (randn(2, 8, 12, 12),)),
        "transformer_encoder": (TransformerEncoder(), (randn(2, 10, 32),), None,
                                (randn(2, 10, 32),)),
        "lstm": (Lstm(), (randn(3, 7, 8),), None, (randn(3, 7, 8),)),
        "pools3d": (Pools3d(), (randn(2, 3, 6, 7, 8),), None, (randn(2, 3, 6, 7, 8),)),
        "spectrum": (Spectrum(), (randn(3, 16),), batch, (randn(5, 16),)),
    }


def main(out_dir):
    torch.manual_seed(0)
    os.makedirs(out_dir, exist_ok=True)
    g = torch.Generator().manual_seed(1)
    for name, (model, example, batch, check_inputs) in models().items():
        randomize_batch_norm_statistics(model, g)
        model.eval()
        dynamic = None
        if batch is not None:
            dynamic = ({0: batch},)
        with torch.no_grad():
            ep = torch.export.export(model, example, dynamic_shapes=dynamic)
            ep = ep.run_decompositions()
            torch.export.save(ep, os.path.join(out_dir, f"{name}.pt2"))
            outputs = ep.module()(*check_inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        tensors = {f"input_{i}": t.contiguous() for i, t in enumerate(check_inputs)}
        tensors.update({f"output_{i}": t.contiguous() for i, t in enumerate(outputs)})
        save_file(tensors, os.path.join(out_dir, f"{name}.safetensors"))
        ops = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})
        print(f"{name}: {len(ep.graph.nodes)} nodes; {' '.join(ops)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
