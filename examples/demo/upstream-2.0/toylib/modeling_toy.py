# Copyright 2030 The Toylib Authors. All rights reserved.
#
# Toy modeling file for the patchgen demo, laid out like a HuggingFace modeling
# module. patchgen only reads it as text: it is never imported.

from typing import Optional

import torch
from torch import nn

from .activations import ACT2FN
from .configuration_toy import ToyConfig
from .modeling_outputs import BaseModelOutput
from .modeling_utils import PreTrainedModel


class ToyRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class ToyMLP(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class ToyAttention(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = config.attention_dropout
        self.qkv_proj = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(
        self,
        hidden_states: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        attention_mask: Optional[torch.Tensor] = None,
        **kwargs,
    ) -> torch.Tensor:
        bsz, seq_len, _ = hidden_states.shape
        qkv = self.qkv_proj(hidden_states).view(bsz, seq_len, 3, self.num_heads, self.head_dim)
        query, key, value = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        cos, sin = position_embeddings
        query, key = apply_rotary_pos_emb(query, key, cos, sin)
        attn_weights = torch.matmul(query, key.transpose(2, 3)) * self.scaling
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value).transpose(1, 2).reshape(bsz, seq_len, -1)
        return self.o_proj(attn_output)


class ToyModel(PreTrainedModel):
    config_class = ToyConfig

    def __init__(self, config: ToyConfig):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.attn = ToyAttention(config)
        self.mlp = ToyMLP(config)
        self.norm = ToyRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, input_ids, position_embeddings, attention_mask=None):
        hidden_states = self.embed_tokens(input_ids)
        hidden_states = hidden_states + self.attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = hidden_states + self.mlp(hidden_states)
        return BaseModelOutput(last_hidden_state=self.norm(hidden_states))


__all__ = ["ToyModel"]
