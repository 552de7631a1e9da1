#!/usr/bin/env python3
"""Writes tests/ops/core_aten_ir.txt: the schemas of PyTorch's Core ATen IR, the
operators native_functions.yaml tags `core`, which core_aten_test.cc checks loom against.
The yaml ships in the PyTorch wheel (torchgen/packaged); PyYAML reads it:
  python3 tests/ops/make_core_aten_list.py build/pytorch-venv/lib/python3.*/site-packages
"""
import glob
import os
import sys

import yaml


def main(site_packages):
    path = glob.glob(os.path.join(site_packages, "torchgen/packaged/ATen/native/native_functions.yaml"))[0]
    version = "unknown"
    for meta in glob.glob(os.path.join(site_packages, "torch-*.dist-info/METADATA")):
        for line in open(meta):
            if line.startswith("Version: "):
                version = line.split(": ", 1)[1].strip()
    schemas = []
    for entry in yaml.safe_load(open(path)):
        tags = entry.get("tags") or []
        if isinstance(tags, str):
            tags = [tags]
        if "core" in tags:
            schemas.append(entry["func"])
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_aten_ir.txt")
    with open(out, "w") as f:
        f.write(f"# PyTorch {version}: the {len(schemas)} schemas tagged core in native_functions.yaml\n")
        f.write("# (made by tests/ops/make_core_aten_list.py; read by tests/ops/core_aten_test.cc)\n")
        for s in schemas:
            f.write(s + "\n")
    print(f"{out}: {len(schemas)} schemas of PyTorch {version}")


if __name__ == "__main__":
    main(sys.argv[1])
