"""Toy modeling file, version 1.0.0 (survey fixture)."""

import logging
import math
from typing import Optional

import torch
from torch import nn

from .modeling_base import ToyBaseLayer
from .utils import auto_docstring, can_return_tuple, use_kernel_forward_from_hub, use_kernel_func_from_hub


logger = logging.getLogger(__name__)

GLOBAL_SCALE = 2.0


def helper_scale(x):
    return x * GLOBAL_SCALE


def old_helper(x):
    return x


def toy_rotate(x, *args, **kwargs):
    return torch.cat((-x, x), dim=-1)


@use_kernel_func_from_hub("rotary_pos_emb")
def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    return q * cos, k * sin


@use_kernel_forward_from_hub("RMSNorm")
class ToyRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x):
        return self.weight * x


class ToyMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class ToyAttention(ToyBaseLayer):
    def __init__(self, config, layer_idx):
        super().__init__(config)
        self.layer_idx = layer_idx
        self.scaling = config.head_dim**-0.5
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(
        self,
        hidden_states,
        attention_mask,
        position_ids=None,
        past_key_value=None,
        use_cache=False,
        *,
        output_attentions=False,
        **kwargs,
    ):
        return self.q_proj(hidden_states) * self.scaling


class ToyModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([ToyAttention(config, i) for i in range(config.num_layers)])

    @can_return_tuple
    @auto_docstring
    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        return input_ids

    def _update_mask(self, attention_mask):
        return attention_mask
