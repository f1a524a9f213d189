from patchgen import PatchConfig, Patch, ImportSpec, PositionedHelper, PatchType
config = PatchConfig(source_module="m")
p = Patch(patch_type=PatchType.CLASS_REPLACEMENT, target="A", replacement=None)
config.patches.append(p)
config.additional_imports.append(ImportSpec(module="x", names=["y"]))
config.positioned_helpers.append(PositionedHelper(target="A", helper=None, placement="after"))
