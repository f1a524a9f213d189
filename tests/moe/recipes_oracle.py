"""Oracle for patchgen's static reading of conversion_mapping.py.

Imports the real `transformers/conversion_mapping.py` of a wheel (or a
directory holding `transformers/`) against a stub `core_model_loading`
(no torch needed), runs `_build_checkpoint_conversion_mapping()` and
prints, as JSON, every key with what its recipe does to routed experts,
classified by the rule written independently below.

usage: python3 recipes_oracle.py WHEEL_OR_DIR
"""

import json
import os
import sys
import tempfile
import types
import zipfile


def load_source(where):
    rel = "transformers/conversion_mapping.py"
    if os.path.isdir(where):
        with open(os.path.join(where, rel), encoding="utf-8") as f:
            return f.read()
    with zipfile.ZipFile(where) as z:
        return z.read(rel).decode("utf-8")


class Stub:
    def __init__(self, *args, **kwargs):
        self.cls = type(self).__name__
        self.args = args
        self.kwargs = kwargs

        def patterns(pos, name):
            v = kwargs.get(name, args[pos] if len(args) > pos else None)
            if v is None:
                return []
            if isinstance(v, str):
                return [v]
            if isinstance(v, (list, tuple)):
                return [x for x in v if isinstance(x, str)]
            return []

        self.source_patterns = patterns(0, "source_patterns")
        self.target_patterns = patterns(1, "target_patterns")
        ops = kwargs.get("operations", args[2] if len(args) > 2 else [])
        ops = ops if isinstance(ops, (list, tuple)) else []
        self.operations = [type(o).__name__ for o in ops]


def make_stub_module():
    mod = types.ModuleType("transformers.core_model_loading")
    classes = {}

    def getattr_(name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in classes:
            classes[name] = type(name, (Stub,), {})
        return classes[name]

    mod.__getattr__ = getattr_
    return mod


def routed(pattern):
    i = pattern.find("experts")
    while i != -1:
        if not pattern[:i].endswith("_"):
            return True
        i = pattern.find("experts", i + 1)
    return False


def classify(items):
    transposed = False
    other = []
    for it in items:
        if not isinstance(it, Stub):
            continue
        if not any(routed(t) for t in it.target_patterns):
            continue
        if it.cls == "WeightConverter":
            if "MergeModulelist" in it.operations:
                # the gate/up converter names the layout
                naming = None
                for j in items:
                    if (isinstance(j, Stub) and j.cls == "WeightConverter" and "MergeModulelist" in j.operations
                            and any(routed(t) for t in j.target_patterns)):
                        if any(".w1" in s for s in j.source_patterns):
                            naming = "w1_w3_w2"
                            break
                        if any("gate_proj" in s for s in j.source_patterns):
                            naming = "gate_up_down"
                            break
                if naming is None:
                    s = it.source_patterns
                    if any(x in p for p in s for x in (".w1", ".w3", ".w2")):
                        naming = "w1_w3_w2"
                    elif any("gate_proj" in p for p in s):
                        naming = "gate_up_down"
                    else:
                        naming = "up_down"
                return "per_expert:" + naming
            if "Transpose" in it.operations:
                transposed = True
            else:
                what = "+".join(it.operations) if it.operations else "WeightConverter"
                if what not in other:
                    other.append(what)
        elif it.cls in ("WeightRenaming", "PrefixChange", "GroupWeightRename"):
            what = it.cls + " to experts"
            if what not in other:
                other.append(what)
    if transposed:
        return "fused_transposed"
    if other:
        return "other:" + ", ".join(other)
    return "direct"


def main():
    src = load_source(sys.argv[1])
    pkg = types.ModuleType("transformers")
    pkg.__path__ = []
    sys.modules["transformers"] = pkg
    sys.modules["transformers.core_model_loading"] = make_stub_module()
    mod = types.ModuleType("transformers.conversion_mapping")
    mod.__package__ = "transformers"
    exec(compile(src, "conversion_mapping.py", "exec"), mod.__dict__)
    mapping = mod._build_checkpoint_conversion_mapping()
    print(json.dumps({k: classify(v) for k, v in mapping.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
