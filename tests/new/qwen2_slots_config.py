"""A project config declaring the kernel slots (no kernel patch)."""

from patchgen import PatchConfig


config = PatchConfig(
    source_module="transformers.models.qwen2.modeling_qwen2",
    target_file="patched_modeling_qwen2_gpu.py",
)

config.add_post_import_block(
    """
    from pkg.ops import OpSlot
    veomni_rms_norm = OpSlot("rms_norm", "standard")
    veomni_apply_rotary_pos_emb = OpSlot("rotary_pos_emb", "full")
    """
)
