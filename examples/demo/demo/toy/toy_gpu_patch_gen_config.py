"""GPU patches for the toy model in ``upstream/toylib/modeling_toy.py``.

patchgen reads this file statically (it is never executed) and writes
``generated/patched_modeling_toy.py``: the upstream module with these patches
applied, normalised by ruff.
"""

from typing import Optional

import torch
from patchgen import PatchConfig


config = PatchConfig(
    source_module="toylib.modeling_toy",
    target_file="patched_modeling_toy.py",
    description="Toy model with fused attention and a float32 RMSNorm",
)

# The attention override below calls torch's fused kernel.
config.add_import("torch.nn.functional", names=["scaled_dot_product_attention"])


# Shared by the RMSNorm override; emitted once, after the imports.
@config.add_helper
def rms_norm_fp32(hidden_states: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    hidden_states = hidden_states * torch.rsqrt(hidden_states.pow(2).mean(-1, keepdim=True) + eps)
    return (weight.to(torch.float32) * hidden_states).to(input_dtype)


@config.override_method("ToyRMSNorm.forward", description="Multiply by the weight in float32")
def toy_rms_norm_forward(self, hidden_states):
    return rms_norm_fp32(hidden_states, self.weight, self.variance_epsilon)


@config.override_method("ToyAttention.forward", description="Use scaled_dot_product_attention")
def toy_attention_forward(
    self,
    hidden_states: torch.Tensor,
    position_embeddings: tuple[torch.Tensor, torch.Tensor],
    attention_mask: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    bsz, seq_len, _ = hidden_states.shape
    qkv = self.qkv_proj(hidden_states).view(bsz, seq_len, 3, self.num_heads, self.head_dim)
    query, key, value = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    cos, sin = position_embeddings
    query, key = apply_rotary_pos_emb(query, key, cos, sin)
    attn_output = scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=self.scaling)
    return self.o_proj(attn_output.transpose(1, 2).reshape(bsz, seq_len, -1))


@config.replace_function("apply_rotary_pos_emb", description="Rotate in float32, cast back to the input dtype")
def apply_rotary_pos_emb_fp32(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim).float()
    sin = sin.unsqueeze(unsqueeze_dim).float()
    q_embed = (q.float() * cos) + (rotate_half(q.float()) * sin)
    k_embed = (k.float() * cos) + (rotate_half(k.float()) * sin)
    return q_embed.to(q.dtype), k_embed.to(k.dtype)
