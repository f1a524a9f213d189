from patchgen import PatchConfig
from pkg.a_patch_gen_config import config as other
config = PatchConfig(source_module="m")
