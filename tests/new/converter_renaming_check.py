"""Run a DeepSeek-V4 checkpoint converter written by `patchgen new` on raw-named keys, with numpy.

DeepSeek-V4's checkpoints use the inference code's names (`embed`, `head`, `layers.N.attn.wq_a`,
`layers.N.ffn.experts.J.w1`, no `model.` prefix); transformers 5.9.0's conversion_mapping.py renames
them with regular expressions in the base model's namespace, then adds the `model.` prefix for a
head model. The expected names below are written by hand from that file's WeightRenamings (and the
w1/w3 -> gate_up_proj, w2 -> down_proj WeightConverters), the expected tensors computed here with
numpy (stack per expert, gate before up). The converter is loaded as converter_check.py loads one
(numpy standing in for torch).

usage: converter_renaming_check.py CONVERTER
"""

import os
import sys
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from converter_check import Tensor, load_converter  # noqa: E402

E, H, I = 3, 8, 6

# raw checkpoint key -> the name a DeepseekV4ForCausalLM has (None: expert key, checked below).
PLAIN = {
    "embed.weight": "model.embed_tokens.weight",
    "head.weight": "lm_head.weight",
    "norm.weight": "model.norm.weight",
    "hc_head_fn": "model.hc_head.hc_fn",
    "hc_head_base": "model.hc_head.hc_base",
    "layers.0.attn_norm.weight": "model.layers.0.input_layernorm.weight",
    "layers.0.ffn_norm.weight": "model.layers.0.post_attention_layernorm.weight",
    "layers.0.hc_attn_fn": "model.layers.0.attn_hc.fn",
    "layers.0.hc_ffn_scale": "model.layers.0.ffn_hc.scale",
    "layers.0.attn.attn_sink": "model.layers.0.self_attn.sinks",
    "layers.0.attn.wq_a.weight": "model.layers.0.self_attn.q_a_proj.weight",
    "layers.0.attn.wo_b.weight": "model.layers.0.self_attn.o_b_proj.weight",
    "layers.0.attn.q_norm.weight": "model.layers.0.self_attn.q_a_norm.weight",
    "layers.0.attn.compressor.wkv.weight": "model.layers.0.self_attn.compressor.kv_proj.weight",
    "layers.0.attn.compressor.ape": "model.layers.0.self_attn.compressor.position_bias",
    "layers.0.attn.compressor.norm.weight": "model.layers.0.self_attn.compressor.kv_norm.weight",
    "layers.0.attn.indexer.wq_b.weight": "model.layers.0.self_attn.compressor.indexer.q_b_proj.weight",
    "layers.0.attn.indexer.compressor.ape": "model.layers.0.self_attn.compressor.indexer.position_bias",
    "layers.0.attn.indexer.compressor.wgate.weight": "model.layers.0.self_attn.compressor.indexer.gate_proj.weight",
    "layers.0.ffn.gate.bias": "model.layers.0.mlp.gate.e_score_correction_bias",
    "layers.0.ffn.gate.weight": "model.layers.0.mlp.gate.weight",
    "layers.0.ffn.shared_experts.w1.weight": "model.layers.0.mlp.shared_experts.gate_proj.weight",
    "layers.0.ffn.shared_experts.w2.weight": "model.layers.0.mlp.shared_experts.down_proj.weight",
    "layers.0.ffn.shared_experts.w3.weight": "model.layers.0.mlp.shared_experts.up_proj.weight",
    # Already in transformers' names (a checkpoint saved by transformers): unchanged.
    "model.layers.1.self_attn.q_a_proj.weight": "model.layers.1.self_attn.q_a_proj.weight",
    # Not the base model's (multi-token prediction): passed through.
    "mtp.0.emb.weight": "mtp.0.emb.weight",
}


def checkpoint(rng):
    src = {k: rng.standard_normal((2, 3)).astype(np.float32) for k in PLAIN}
    experts = {}
    # Raw names (layer 0) and transformers' expert names with the prefix (layer 1).
    for layer, fmt in ((0, "layers.0.ffn.experts.{j}.{w}.weight"), (1, "model.layers.1.mlp.experts.{j}.{w}.weight")):
        for w, shape in (("w1", (I, H)), ("w3", (I, H)), ("w2", (H, I))):
            for j in range(E):
                t = rng.standard_normal(shape).astype(np.float32)
                src[fmt.format(j=j, w=w)] = t
                experts[(layer, w, j)] = t
    want = {PLAIN[k]: v for k, v in src.items() if k in PLAIN}
    for layer in (0, 1):
        stack = lambda w: np.stack([experts[(layer, w, j)] for j in range(E)])  # noqa: E731
        want[f"model.layers.{layer}.mlp.experts.gate_up_proj"] = np.concatenate([stack("w1"), stack("w3")], axis=1)
        want[f"model.layers.{layer}.mlp.experts.down_proj"] = stack("w2")
    return src, want


def stream(converter, src):
    got = {}
    for name, tensor in src.items():
        if converter.can_handle(name):
            r = converter.convert(name, tensor.view(Tensor))
            if r is not None:
                got[r.name] = np.asarray(r.tensor)
        else:
            got[name] = np.asarray(tensor)
    for r in converter.finalize():
        got[r.name] = np.asarray(r.tensor)
    return got


def main():
    module = load_converter(sys.argv[1])
    create = next(getattr(module, n) for n in dir(module) if n.startswith("create_") and n.endswith("_converter"))
    mapping = next(getattr(module, n) for n in dir(module) if n.endswith("_fqn_to_index_mapping"))
    src, want = checkpoint(np.random.default_rng(0))
    config = types.SimpleNamespace(n_routed_experts=E)
    problems = []
    # A head model (it holds the base model as `.model`): names with the prefix.
    got = stream(create(types.SimpleNamespace(config=config, model=object())), src)
    if set(got) != set(want):
        problems.append(f"names: only converter {sorted(set(got) - set(want))}, only expected {sorted(set(want) - set(got))}")
    for k in sorted(set(got) & set(want)):
        if got[k].shape != want[k].shape or got[k].tobytes() != want[k].tobytes():
            problems.append(f"{k}: converter {list(got[k].shape)}, expected {list(want[k].shape)}")
    index = mapping({k: i % 3 + 1 for i, k in enumerate(src)})
    if set(index) != set(want):
        problems.append(f"index mapping names: {sorted(set(index) ^ set(want))}")
    # The base model itself: the same names without `model.` (lm_head and mtp as they are).
    base = stream(create(types.SimpleNamespace(config=config)), src)
    want_base = {k.removeprefix("model."): v for k, v in want.items()}
    if set(base) != set(want_base):
        problems.append(f"base model names: {sorted(set(base) ^ set(want_base))}")
    if set(mapping({k: 1 for k in src}, target_model_prefix="")) != set(want_base):
        problems.append("base model index mapping names differ")
    # An expert missing: finalize raises.
    short = {k: v for k, v in src.items() if k != "layers.0.ffn.experts.2.w2.weight"}
    try:
        stream(create(types.SimpleNamespace(config=config, model=object())), short)
        problems.append("an incomplete checkpoint did not raise")
    except RuntimeError as e:
        if "incomplete" not in str(e):
            problems.append(f"unexpected error: {e}")
    if problems:
        sys.exit("\n".join(problems))
    print(f"ok: {len(got)} tensors, {len(src)} checkpoint keys")


if __name__ == "__main__":
    main()
