"""Survey fixture: nothing drifts (exit code 0)."""

from patchgen import PatchConfig


config = PatchConfig(
    source_module="toylib.modeling_toy",
    target_file="patched_modeling_toy_clean.py",
)


@config.override_method("ToyMLP.forward")
def toy_mlp_forward(self, x):
    return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


@config.override_method("ToyMLP.extra_method")
def toy_mlp_extra(self):
    return self.gate_proj
