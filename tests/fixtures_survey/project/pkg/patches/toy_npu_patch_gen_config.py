"""Survey fixture: a config that only extends another one."""

from patchgen import PatchConfig
from pkg.patches.toy_gpu_patch_gen_config import config as gpu_config


config = PatchConfig(
    source_module="toylib.modeling_toy",
    target_file="patched_modeling_toy_npu.py",
    description="Toy patches reused from the GPU config",
)

config.additional_imports.extend(gpu_config.additional_imports)
config.post_import_blocks.extend(gpu_config.post_import_blocks)
config.helpers.extend(gpu_config.helpers)
config.patches.extend(gpu_config.patches)
