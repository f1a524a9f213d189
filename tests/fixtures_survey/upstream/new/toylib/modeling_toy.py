"""Toy modeling file, version 2.0.0 (survey fixture)."""

import logging

import torch
from torch import nn

from .modeling_base import ToyBaseLayer
from .utils import auto_docstring, capture_outputs, merge_with_config_defaults, use_kernel_forward_from_hub


logger = logging.getLogger(__name__)


def scale_helper(x):
    return x * 2.0


def toy_rotate(x, /, dim=-1):
    return torch.cat((-x, x), dim=dim)


@use_kernel_forward_from_hub("rotary_pos_emb")
def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    return q * cos, k * sin


class ToyNormBase(nn.Module):
    pass


@use_kernel_forward_from_hub("RMSNorm")
class ToyRMSNorm(ToyNormBase):
    def __init__(self, hidden_size, eps=1e-5, *, elementwise_affine=True):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x):
        return self.weight * x


class ToyMLPBase(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size)


class ToyMLP(ToyMLPBase):
    act_fn = nn.SiLU()

    def __init__(self, config):
        super().__init__(config)
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class ToyScorer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.scaling = config.head_dim**-0.5


class ToyAttention(ToyBaseLayer):
    def __init__(self, config, layer_idx):
        super().__init__(config)
        self.layer_idx = layer_idx
        self.scorer = ToyScorer(config)
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(
        self,
        hidden_states,
        position_ids,
        attention_mask=None,
        past_key_values=None,
        output_attentions=False,
        *args,
        cache_position=None,
        **kwargs,
    ):
        return self.q_proj(hidden_states) * self.scorer.scaling

    def reset(self, hard=False):
        pass


class ToyModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([ToyAttention(config, i) for i in range(config.num_layers)])

    @capture_outputs
    @merge_with_config_defaults
    @auto_docstring(custom_intro="The toy model.")
    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        return input_ids

    def get_parallel_plan(self):
        return {}
