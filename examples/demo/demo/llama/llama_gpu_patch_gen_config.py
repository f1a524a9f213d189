"""GPU patches for transformers' Llama (``transformers.models.llama.modeling_llama``).

The upstream module comes from the installed transformers (or a transformers
wheel on PYTHONPATH); patchgen reads it as text and never imports it.
"""

import torch
from patchgen import PatchConfig


config = PatchConfig(
    source_module="transformers.models.llama.modeling_llama",
    target_file="patched_modeling_llama.py",
    description="Llama with a float32 RMSNorm and a float32 rotary embedding",
)


@config.override_method("LlamaRMSNorm.forward", description="Apply the weight before casting back")
def llama_rms_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    return (self.weight.to(torch.float32) * hidden_states).to(input_dtype)


@config.replace_function("apply_rotary_pos_emb", description="Rotate in float32, cast back to the input dtype")
def apply_rotary_pos_emb_fp32(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim).float()
    sin = sin.unsqueeze(unsqueeze_dim).float()
    q_embed = (q.float() * cos) + (rotate_half(q.float()) * sin)
    k_embed = (k.float() * cos) + (rotate_half(k.float()) * sin)
    return q_embed.to(q.dtype), k_embed.to(k.dtype)
