"""Run a checkpoint converter written by `patchgen new` on a real (tiny) checkpoint, with numpy.

The converter is VeOmni-shaped: it imports `torch` and, relatively, `ConvertedCheckpointTensor`.
Both are faked here (numpy stack/concatenate/axis swap; a dataclass), the converter module is
loaded at the package depth its relative import needs, and every tensor of SRC is streamed
through it as VeOmni's loader does (`can_handle`, `convert`, then `finalize`). The result is
compared with DST (what `patchgen moe convert` wrote for the same checkpoint), names mapped by
`--rename OLD NEW` (the recipe's renamings, which `moe convert` leaves to transformers): the
same names, dtypes, shapes and bytes. The converter's index mapping must give the same names.

usage: converter_check.py CONVERTER SRC DST [--rename OLD NEW]... [--expect-error TEXT]
"""

import argparse
import dataclasses
import importlib.util
import json
import os
import re
import sys
import types

import numpy as np
from safetensors import safe_open


class Tensor(np.ndarray):
    """numpy with the two torch methods the converters call."""

    def transpose(self, a, b):  # noqa: D102 - torch semantics: swap two axes
        return np.swapaxes(np.asarray(self), a, b).view(Tensor)

    def contiguous(self):
        return np.ascontiguousarray(self).view(Tensor)


def fake_torch():
    torch = types.ModuleType("torch")
    torch.stack = lambda ts, dim=0: np.stack([np.asarray(t) for t in ts], axis=dim).view(Tensor)
    torch.cat = lambda ts, dim=0: np.concatenate([np.asarray(t) for t in ts], axis=dim).view(Tensor)
    torch.Tensor = Tensor
    return torch


@dataclasses.dataclass
class ConvertedCheckpointTensor:
    name: str
    tensor: object


def load_converter(path):
    text = open(path).read()
    m = re.search(r"^from (\.+)(\S*) import ConvertedCheckpointTensor$", text, re.M)
    if not m:
        sys.exit(f"{path}: no relative `from ... import ConvertedCheckpointTensor`")
    level, target = len(m.group(1)), m.group(2)
    packages = [f"p{i}" for i in range(level)]
    for i in range(level):
        name = ".".join(packages[: i + 1])
        pkg = types.ModuleType(name)
        pkg.__path__ = []
        sys.modules[name] = pkg
    # `level` dots from a module of package p0...p{level-1} name p0.
    base = packages[0]
    holder = types.ModuleType(f"{base}.{target}")
    holder.ConvertedCheckpointTensor = ConvertedCheckpointTensor
    sys.modules[f"{base}.{target}"] = holder
    sys.modules["torch"] = fake_torch()
    name = ".".join(packages) + ".checkpoint_tensor_converter"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def namespace(value):
    if isinstance(value, dict):
        return types.SimpleNamespace(**{k: namespace(v) for k, v in value.items()})
    return value


def read(d):
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        weight_map = json.load(open(index))["weight_map"]
        files = sorted(set(weight_map.values()))
    else:
        files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    out, shard_of = {}, {}
    for i, f in enumerate(files):
        with safe_open(os.path.join(d, f), framework="np") as h:
            for k in h.keys():
                out[k] = h.get_tensor(k)
                shard_of[k] = i + 1
    return out, shard_of


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("converter")
    ap.add_argument("src")
    ap.add_argument("dst", nargs="?")
    ap.add_argument("--rename", nargs=2, action="append", default=[])
    ap.add_argument("--expect-error")
    a = ap.parse_args()
    module = load_converter(a.converter)
    factories = [n for n in dir(module) if n.startswith("create_") and n.endswith("_checkpoint_tensor_converter")]
    mappings = [n for n in dir(module) if n.startswith("convert_") and n.endswith("_fqn_to_index_mapping")]
    assert len(factories) == 1 and len(mappings) == 1, (factories, mappings)
    config = namespace(json.load(open(os.path.join(a.src, "config.json"))))
    converter = getattr(module, factories[0])(types.SimpleNamespace(config=config))

    src, shard_of = read(a.src)
    got = {}
    try:
        for name, tensor in src.items():
            tensor = tensor.view(Tensor)
            if converter.can_handle(name):
                r = converter.convert(name, tensor)
                if r is not None:
                    got[r.name] = np.asarray(r.tensor)
            else:
                got[name] = np.asarray(tensor)
        for r in converter.finalize():
            got[r.name] = np.asarray(r.tensor)
    except RuntimeError as e:
        if a.expect_error and a.expect_error in str(e):
            print(f"raised as expected: {e}")
            return
        raise
    if a.expect_error:
        sys.exit(f"expected an error containing {a.expect_error!r}, got none")

    def renamed(n):
        for old, new in a.rename:
            n = n.replace(old, new)
        return n

    want, _ = read(a.dst)
    want = {renamed(k): v for k, v in want.items()}
    problems = []
    if set(got) != set(want):
        problems.append(f"names: only converter {sorted(set(got) - set(want))}, only moe convert {sorted(set(want) - set(got))}")
    for k in sorted(set(got) & set(want)):
        g, w = got[k], want[k]
        if g.dtype != w.dtype or g.shape != w.shape or g.tobytes() != w.tobytes():
            problems.append(f"{k}: converter {g.dtype}{list(g.shape)}, moe convert {w.dtype}{list(w.shape)}")
    index = getattr(module, mappings[0])(shard_of)
    if set(index) != set(want):
        problems.append(f"index mapping names: only mapping {sorted(set(index) - set(want))}, only moe convert {sorted(set(want) - set(index))}")
    if problems:
        sys.exit("\n".join(problems))
    converted = sum(1 for k in got if k not in src or got[k].tobytes() != np.asarray(src[k]).tobytes())
    print(f"ok: {len(got)} tensors ({converted} converted) equal to moe convert's")


if __name__ == "__main__":
    main()
