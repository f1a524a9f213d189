"""Survey fixture: one patch per kind and detail of `patchgen survey`.

Upstream pair: ../upstream/old (toylib 1.0.0) and ../upstream/new (toylib 2.0.0).
"""

import torch
from torch import nn

from patchgen import PatchConfig


config = PatchConfig(
    source_module="toylib.modeling_toy",
    target_file="patched_modeling_toy.py",
    description="Toy patches for the survey fixture",
)

config.add_import("toylib.extra", names=["ExtraKernel"])
config.add_post_import_block(
    """
    KERNEL = ExtraKernel()
    PI = math.pi
    """
)


@config.add_helper
def toy_scale_helper(x):
    # GLOBAL_SCALE is gone in 2.0.0: names check on helpers.
    return x * GLOBAL_SCALE * KERNEL.factor


# unchanged contract, but the body calls a function 2.0.0 renamed.
@config.override_method("ToyMLP.forward")
def toy_mlp_forward(self, x):
    # act_fn becomes a class attribute and up_proj moves to a same-module base: no attribute finding.
    return helper_scale(self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x)))


# signature_changed: removed, added, renamed, reordered, kind and default changes.
@config.override_method("ToyAttention.forward")
def toy_attention_forward(
    self,
    hidden_states: torch.Tensor,
    attention_mask: Optional[torch.Tensor],
    position_ids=None,
    past_key_value=None,
    use_cache=False,
    *,
    output_attentions=False,
    **kwargs,
):
    self.cached = hidden_states
    scores = [s * self.scaling for s in (hidden_states, self.cached)]
    scores = torch.stack(scores) + ExtraKernel.bias + len(scores)
    return nn.functional.dropout(self.q_proj(scores), p=self.dropout)


# inherited from the base class in another module in 1.0.0, own method in 2.0.0.
@config.override_method("ToyAttention.reset")
def toy_attention_reset(self, hard=False):
    self._injected_helper()


# added_by_config: a method the config injects.
@config.override_method("ToyAttention._injected_helper")
def toy_attention_injected_helper(self):
    pass


# decorators_changed: decorators removed, added, and with other arguments.
@config.override_method("ToyModel.forward")
def toy_model_forward(self, input_ids=None, attention_mask=None, **kwargs):
    return input_ids


# removed upstream in 2.0.0.
@config.override_method("ToyModel._update_mask")
def toy_model_update_mask(self, attention_mask):
    return attention_mask


# new_upstream: 2.0.0 now defines the method this config injects.
@config.override_method("ToyModel.get_parallel_plan")
def toy_model_get_parallel_plan(self):
    return {"layers": "colwise"}


# added_by_config: absent from both versions.
@config.override_method("ToyModel.dummy_forward")
def toy_model_dummy_forward(self):
    return None


# decorators_changed on a replace_function target (hub-kernel decorator swapped).
@config.replace_function("apply_rotary_pos_emb")
def fused_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    return q * cos, k * sin


# signature_changed through kinds: positional-only, *args and **kwargs removed.
@config.replace_function("toy_rotate")
def fused_toy_rotate(x, *args, **kwargs):
    return torch.cat((-x, x), dim=-1)


# removed upstream in 2.0.0 (a replace_function target).
@config.replace_function("old_helper")
def new_old_helper(x):
    return x


# replace_class: bases and __init__ signature changed.
@config.replace_class("ToyRMSNorm")
class FusedToyRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x):
        return self.weight * x
