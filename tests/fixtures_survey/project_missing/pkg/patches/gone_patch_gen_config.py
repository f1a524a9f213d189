"""Survey fixture: the upstream module is in neither version (a config error, exit code 1)."""

from patchgen import PatchConfig


config = PatchConfig(
    source_module="toylib.modeling_gone",
    target_file="patched_modeling_gone.py",
)


@config.override_method("Gone.forward")
def gone_forward(self, x):
    return x
