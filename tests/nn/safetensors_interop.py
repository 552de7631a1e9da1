#!/usr/bin/env python3
"""safetensors files between loom and an independent reader and writer.

loom writes a file (tests/nn/safetensors_tool.cc) that is read here, and reads a file
written here. The reader and writer are Hugging Face's `safetensors` package when it is
importable (with numpy), and otherwise this file's own, which follows the format's
specification with the standard library only (8-byte little-endian header length, JSON
header, little-endian row-major bytes sorted by offset).

usage: safetensors_interop.py TOOL WORKDIR
"""
import json
import os
import struct
import subprocess
import sys

DTYPES = {"BOOL": ("?", 1), "F16": ("e", 2), "F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8)}


def read_stdlib(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    data = blob[8 + n :]
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        fmt, size = DTYPES[e["dtype"]]
        begin, end = e["data_offsets"]
        count = (end - begin) // size
        out[name] = (e["dtype"], e["shape"], list(struct.unpack("<%d%s" % (count, fmt), data[begin:end])))
    return out, meta


def write_stdlib(path, tensors, meta):
    header, body = {"__metadata__": meta}, b""
    for name, (dtype, shape, values) in sorted(tensors.items()):
        fmt, _ = DTYPES[dtype]
        raw = struct.pack("<%d%s" % (len(values), fmt), *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


def read_package(path):
    from safetensors import safe_open

    out = {}
    with safe_open(path, "np") as f:
        meta = f.metadata() or {}
        for name in f.keys():
            a = f.get_tensor(name)
            code = {"float32": "F32", "float64": "F64", "int64": "I64", "float16": "F16", "bool": "BOOL"}[str(a.dtype)]
            out[name] = (code, list(a.shape), [x.item() for x in a.reshape(-1)])
    return out, meta


def write_package(path, tensors, meta):
    import numpy as np
    from safetensors.numpy import save_file

    types = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "F16": np.float16, "BOOL": np.bool_}
    save_file({n: np.array(v, dtype=types[d]).reshape(s) for n, (d, s, v) in tensors.items()}, path, metadata=meta)


def main():
    tool, workdir = sys.argv[1], sys.argv[2]
    try:
        import numpy  # noqa: F401
        import safetensors  # noqa: F401

        reader, writer, which = read_package, write_package, "the safetensors package"
    except ImportError:
        reader, writer, which = read_stdlib, write_stdlib, "the specification (stdlib reader)"
    os.makedirs(workdir, exist_ok=True)

    from_loom = os.path.join(workdir, "from_loom.safetensors")
    subprocess.run([tool, "write", from_loom], check=True)
    tensors, meta = reader(from_loom)
    expected = {
        "weight": ("F32", [2, 3], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
        "steps": ("I64", [2], [-1, 5]),
        "half": ("F64", [2], [0.5, 0.5]),
        "transposed": ("I64", [3, 2], [0, 3, 1, 4, 2, 5]),
    }
    assert tensors == expected, "loom's file read as %r" % (tensors,)
    assert meta == {"writer": "loom"}, meta

    from_python = os.path.join(workdir, "from_python.safetensors")
    writer(
        from_python,
        {
            "weight": ("F32", [2, 3], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
            "idx": ("I64", [3], [1, 2, 3]),
            "h": ("F16", [2], [1.0, 1.0]),
            "b": ("BOOL", [2], [True, False]),
        },
        {"who": "python"},
    )
    subprocess.run([tool, "check", from_python], check=True)
    print("safetensors interop with %s: both directions agree" % which)


if __name__ == "__main__":
    main()
