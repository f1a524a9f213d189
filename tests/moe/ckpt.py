"""Synthetic MoE checkpoints and the independent check of `patchgen moe convert`.

Built with numpy + safetensors (the reference implementation), never with
patchgen. Dims are pairwise distinct by default (hidden=8, I=6, E=4), so a
transposed or swapped matrix cannot pass for the right one.

usage:
  ckpt.py make FAMILY DIR [--hidden H] [--inter I] [--experts E] [--shards K] [--drop S]... [--quant]
  ckpt.py check SRC DST FAMILY TO       compare every DST tensor with numpy's result
  ckpt.py same A B                      every tensor of A and B byte-identical
  ckpt.py hf-format DIR                 shard names, headers and index as HF writes them
FAMILY: qwen3_moe deepseek_v3 qwen3_vl_moe gpt_oss mixtral qwen3_omni_moe stacked fused
"""

import argparse
import json
import os
import sys
import zlib

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

FAMILIES = {
    # name: (layer stack, module, per-layer layout, names, model_type)
    "qwen3_moe": ("model.layers", "mlp", "per_expert", ("gate_proj", "up_proj", "down_proj"), "qwen3_moe"),
    "deepseek_v3": ("model.layers", "mlp", "per_expert", ("gate_proj", "up_proj", "down_proj"), "deepseek_v3"),
    "qwen3_omni_moe": ("thinker.model.layers", "mlp", "per_expert", ("gate_proj", "up_proj", "down_proj"), "qwen3_omni_moe"),
    "mixtral": ("model.layers", "block_sparse_moe", "per_expert", ("w1", "w3", "w2"), "mixtral"),
    "qwen3_vl_moe": ("model.language_model.layers", "mlp", "transposed", None, "qwen3_vl_moe"),
    "gpt_oss": ("model.layers", "mlp", "gpt_oss", None, "gpt_oss"),
    "stacked": ("model.layers", "mlp", "stacked", None, "qwen3_moe"),
    "fused": ("model.layers", "mlp", "fused", None, "qwen3_5_moe"),
}
LAYERS = 4


def rng_array(rng, shape, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-100, 100, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def config_for(family, h, i, e):
    stack, module, layout, names, model_type = FAMILIES[family]
    text = {"hidden_size": h, "num_hidden_layers": LAYERS, "intermediate_size": 20}
    if family in ("mixtral", "gpt_oss"):
        text.update({"num_local_experts": e, "intermediate_size": i})
    elif family == "deepseek_v3":
        text.update({"n_routed_experts": e, "moe_intermediate_size": i, "first_k_dense_replace": 1})
    else:
        text.update({"num_experts": e, "moe_intermediate_size": i, "decoder_sparse_step": 1, "mlp_only_layers": [0] if family == "qwen3_moe" else []})
    if family == "qwen3_omni_moe":
        return {"model_type": model_type, "thinker_config": {"text_config": dict(text, model_type="qwen3_omni_moe_text")}}
    if family == "qwen3_vl_moe":
        return {"model_type": model_type, "text_config": dict(text, model_type="qwen3_vl_moe_text")}
    return dict(text, model_type=model_type)


def dense_layers(family):
    if family in ("qwen3_moe", "deepseek_v3"):
        return {0}
    return set()


def make(family, out, h, i, e, shards, drop=(), quant=False):
    rng = np.random.default_rng(zlib.crc32(family.encode()))
    stack, module, layout, names, _ = FAMILIES[family]
    f16, f32 = np.float16, np.float32
    t = {}
    top = stack.rsplit(".layers", 1)[0]
    t[f"{top}.embed_tokens.weight"] = rng_array(rng, (32, h), f32)
    t[f"{top}.norm.weight"] = rng_array(rng, (h,), f32)
    t["lm_head.weight"] = rng_array(rng, (32, h), f32)
    t["some.int_buffer"] = rng_array(rng, (5,), np.int64)
    for L in range(LAYERS):
        p = f"{stack}.{L}"
        t[f"{p}.self_attn.q_proj.weight"] = rng_array(rng, (h, h), f16)
        t[f"{p}.input_layernorm.weight"] = rng_array(rng, (h,), f32)
        m = f"{p}.{module}"
        if L in dense_layers(family):
            for n, shp in (("gate_proj", (20, h)), ("up_proj", (20, h)), ("down_proj", (h, 20))):
                t[f"{m}.{n}.weight"] = rng_array(rng, shp, f16)
            continue
        t[f"{m}.gate.weight"] = rng_array(rng, (e, h), f32)
        if family == "deepseek_v3":
            for n, shp in (("gate_proj", (i, h)), ("up_proj", (i, h)), ("down_proj", (h, i))):
                t[f"{m}.shared_experts.{n}.weight"] = rng_array(rng, shp, f16)
        x = f"{m}.experts"
        if layout == "per_expert":
            g, u, d = names
            for j in range(e):
                t[f"{x}.{j}.{g}.weight"] = rng_array(rng, (i, h), f16)
                t[f"{x}.{j}.{u}.weight"] = rng_array(rng, (i, h), f16)
                t[f"{x}.{j}.{d}.weight"] = rng_array(rng, (h, i), f16)
        elif layout == "transposed":
            t[f"{x}.gate_up_proj"] = rng_array(rng, (e, h, 2 * i), f16)
            t[f"{x}.down_proj"] = rng_array(rng, (e, i, h), f16)
        elif layout == "fused":
            t[f"{x}.gate_up_proj"] = rng_array(rng, (e, 2 * i, h), f16)
            t[f"{x}.down_proj"] = rng_array(rng, (e, h, i), f16)
        elif layout == "stacked":
            t[f"{x}.gate_proj"] = rng_array(rng, (e, i, h), f16)
            t[f"{x}.up_proj"] = rng_array(rng, (e, i, h), f16)
            t[f"{x}.down_proj"] = rng_array(rng, (e, h, i), f16)
        elif layout == "gpt_oss":
            t[f"{x}.gate_up_proj"] = rng_array(rng, (e, h, 2 * i), f16)
            t[f"{x}.gate_up_proj_bias"] = rng_array(rng, (e, 2 * i), f16)
            t[f"{x}.down_proj"] = rng_array(rng, (e, i, h), f16)
            t[f"{x}.down_proj_bias"] = rng_array(rng, (e, h), f16)
    for d in drop:
        for k in [k for k in t if d in k]:
            del t[k]
    if quant:
        for k in [k for k in t if ".experts." in k and k.endswith(".weight")]:
            t[k[: -len("weight")] + "weight_scale_inv"] = rng_array(rng, (1, 1), f32)
    os.makedirs(out, exist_ok=True)
    names_sorted = sorted(t)
    if shards == 1:
        save_file(t, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    else:
        weight_map = {}
        per = (len(names_sorted) + shards - 1) // shards
        for k in range(shards):
            fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
            part = {n: t[n] for n in names_sorted[k * per:(k + 1) * per]}
            save_file(part, os.path.join(out, fname), metadata={"format": "pt"})
            weight_map.update({n: fname for n in part})
        total = sum(a.nbytes for a in t.values())
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config_for(family, h, i, e), f, indent=2)
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        f.write('{"tok": true}\n')


def load(d):
    files = [f for f in sorted(os.listdir(d)) if f.endswith(".safetensors")]
    out = {}
    for f in files:
        with safe_open(os.path.join(d, f), framework="numpy") as s:
            for k in s.keys():
                out[k] = s.get_tensor(k)
    return out


def expected(src, family, to):
    stack, module, layout, names, _ = FAMILIES[family]
    want = dict(src)
    groups = {}
    for k in src:
        if ".experts." in k and ".shared_experts." not in k:
            groups.setdefault(k.split(".experts.")[0], []).append(k)
    for p, keys in groups.items():
        for k in keys:
            del want[k]
        x = f"{p}.experts"
        if to == "fused":
            if layout == "per_expert":
                g, u, d = names
                e = len([k for k in keys if k.endswith(f".{g}.weight")])
                gate = np.stack([src[f"{x}.{j}.{g}.weight"] for j in range(e)])
                up = np.stack([src[f"{x}.{j}.{u}.weight"] for j in range(e)])
                want[f"{x}.gate_up_proj"] = np.concatenate([gate, up], axis=1)
                want[f"{x}.down_proj"] = np.stack([src[f"{x}.{j}.{d}.weight"] for j in range(e)])
            elif layout == "transposed":
                want[f"{x}.gate_up_proj"] = np.transpose(src[f"{x}.gate_up_proj"], (0, 2, 1))
                want[f"{x}.down_proj"] = np.transpose(src[f"{x}.down_proj"], (0, 2, 1))
            elif layout == "stacked":
                want[f"{x}.gate_up_proj"] = np.concatenate([src[f"{x}.gate_proj"], src[f"{x}.up_proj"]], axis=1)
                want[f"{x}.down_proj"] = src[f"{x}.down_proj"]
            elif layout == "fused":
                for k in keys:
                    want[k] = src[k]
        else:
            if layout == "per_expert":
                for k in keys:
                    want[k] = src[k]
                continue
            if layout == "transposed":
                gu = np.transpose(src[f"{x}.gate_up_proj"], (0, 2, 1))
                dn = np.transpose(src[f"{x}.down_proj"], (0, 2, 1))
            elif layout == "stacked":
                gu = np.concatenate([src[f"{x}.gate_proj"], src[f"{x}.up_proj"]], axis=1)
                dn = src[f"{x}.down_proj"]
            else:
                gu, dn = src[f"{x}.gate_up_proj"], src[f"{x}.down_proj"]
            for j in range(gu.shape[0]):
                gate, up = np.split(gu[j], 2, axis=0)
                want[f"{x}.{j}.gate_proj.weight"] = gate
                want[f"{x}.{j}.up_proj.weight"] = up
                want[f"{x}.{j}.down_proj.weight"] = dn[j]
    return want


def compare(want, got):
    if sorted(want) != sorted(got):
        missing = sorted(set(want) - set(got))[:5]
        extra = sorted(set(got) - set(want))[:5]
        sys.exit(f"tensor names differ: missing {missing}, unexpected {extra}")
    for k in sorted(want):
        a, b = np.ascontiguousarray(want[k]), got[k]
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            sys.exit(f"{k}: expected {a.dtype}{list(a.shape)}, got {b.dtype}{list(b.shape)} or different bytes")
    print(f"ok: {len(want)} tensors byte-identical")


def hf_format(d):
    """The index and headers as HF writes them."""
    import struct
    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    total = 0
    for f in files:
        with open(os.path.join(d, f), "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        if n % 8:
            sys.exit(f"{f}: header length {n} is not a multiple of 8")
        if header.get("__metadata__") != {"format": "pt"}:
            sys.exit(f"{f}: __metadata__ is {header.get('__metadata__')}")
        total += sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__")
    if len(files) > 1:
        n = len(files)
        if files != [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]:
            sys.exit(f"shard names: {files}")
        text = open(os.path.join(d, "model.safetensors.index.json")).read()
        index = json.loads(text)
        if text != json.dumps(index, indent=2, sort_keys=True) + "\n":
            sys.exit("the index is not json.dumps(index, indent=2, sort_keys=True) + newline")
        if index["metadata"]["total_size"] != total:
            sys.exit(f"total_size {index['metadata']['total_size']} != {total}")
        got = {}
        for f in files:
            with safe_open(os.path.join(d, f), framework="numpy") as s:
                got.update({k: f for k in s.keys()})
        if got != index["weight_map"]:
            sys.exit("weight_map does not match the shards")
    elif files != ["model.safetensors"] or os.path.exists(os.path.join(d, "model.safetensors.index.json")):
        sys.exit(f"single shard: {files}")
    print(f"ok: {len(files)} shard(s) as HF writes them")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("family")
    m.add_argument("dir")
    m.add_argument("--hidden", type=int, default=8)
    m.add_argument("--inter", type=int, default=6)
    m.add_argument("--experts", type=int, default=4)
    m.add_argument("--shards", type=int, default=1)
    m.add_argument("--drop", action="append", default=[], help="leave out tensors whose name contains this")
    m.add_argument("--quant", action="store_true", help="add weight_scale_inv siblings to per-expert weights")
    c = sub.add_parser("check")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("family")
    c.add_argument("to")
    s = sub.add_parser("same")
    s.add_argument("a")
    s.add_argument("b")
    f = sub.add_parser("hf-format")
    f.add_argument("dir")
    a = ap.parse_args()
    if a.cmd == "make":
        make(a.family, a.dir, a.hidden, a.inter, a.experts, a.shards, a.drop, a.quant)
    elif a.cmd == "check":
        compare(expected(load(a.src), a.family, a.to), load(a.dst))
    elif a.cmd == "hf-format":
        hf_format(a.dir)
    else:
        compare(load(a.a), load(a.b))


if __name__ == "__main__":
    main()
