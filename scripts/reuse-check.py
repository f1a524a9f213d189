#!/usr/bin/env python3
"""Independent check of every reused patch in a project (for PG307).

usage: scripts/reuse-check.py TREE WHEEL [--verbose]

A reuse is an `override_method` / `replace_function` / `replace_class` call
whose `replacement=` is a function imported from another patch-gen config.
The patch was written for the target that config registers it on (its
decorator, or its own `replacement=` call); the reuse is faithful when that
upstream target, renamed by the reuse's `name_map` (plain text, longest key
first, as the generator does), has the same code as the reuse's own upstream
target, docstrings and comments aside (python's `ast`, tests/oracle/sameness.py).

Reads the configs with python's `ast` only (nothing of patchgen), the
upstream modules from the wheel (a zip). Prints one line per reuse that
differs and a summary: reuses found, resolved (both targets read), faithful.
Exit 1 when one differs.
"""

import ast
import os
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oracle"))
import sameness  # noqa: E402

DSL = {"override_method", "replace_function", "replace_class"}


def literal_map(node, names):
    if isinstance(node, ast.Dict):
        return [(k.value, v.value) for k, v in zip(node.keys, node.values)]
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    return None


class Config:
    def __init__(self, path, module):
        self.path = path
        self.module = module
        self.tree = ast.parse(open(path).read())
        self.source_module = None
        self.imports = {}  # local name -> (module, name)
        self.dicts = {}  # module-level NAME = {...}
        self.registrations = {}  # function name -> (kind, target, name_map)
        self.calls = []  # (kind, target, replacement name, name_map, line)
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    self.imports[a.asname or a.name] = (node.module, a.name)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if isinstance(node.value, ast.Dict):
                    m = literal_map(node.value, {})
                    if m is not None and all(isinstance(k, str) for k, _ in m):
                        self.dicts[node.targets[0].id] = m
                if isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "PatchConfig":
                    for kw in node.value.keywords:
                        if kw.arg == "source_module":
                            self.source_module = kw.value.value
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                for d in node.decorator_list:
                    if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in DSL and d.args:
                        nm = next((literal_map(k.value, self.dicts) for k in d.keywords if k.arg == "name_map"), None)
                        self.registrations.setdefault(node.name, (d.func.attr, d.args[0].value, nm))
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                c = node.value
                if isinstance(c.func, ast.Attribute) and c.func.attr in DSL and c.args:
                    kws = {k.arg: k.value for k in c.keywords}
                    rep = kws.get("replacement")
                    if isinstance(rep, ast.Name):
                        nm = literal_map(kws["name_map"], self.dicts) if "name_map" in kws else None
                        self.calls.append((c.func.attr, c.args[0].value, rep.id, nm, c.lineno))
                        self.registrations.setdefault(rep.id, (c.func.attr, c.args[0].value, nm))


def main():
    tree, wheel = sys.argv[1], sys.argv[2]
    verbose = "--verbose" in sys.argv
    zf = zipfile.ZipFile(wheel)
    upstream_cache = {}

    def upstream(module):
        if module not in upstream_cache:
            try:
                upstream_cache[module] = zf.read(module.replace(".", "/") + ".py").decode()
            except KeyError:
                upstream_cache[module] = None
        return upstream_cache[module]

    configs = {}
    for root, _, files in os.walk(tree):
        for f in sorted(files):
            if f.endswith("_patch_gen_config.py") and not f.startswith("_"):
                path = os.path.join(root, f)
                module = os.path.relpath(path, tree)[:-3].replace(os.sep, ".")
                configs[module] = Config(path, module)

    found = resolved = faithful = 0
    differ = []
    for cfg in configs.values():
        for kind, target, rep, name_map, line in cfg.calls:
            if rep not in cfg.imports:
                continue
            mod, name = cfg.imports[rep]
            definer = configs.get(mod)
            if definer is None:
                continue
            found += 1
            reg = definer.registrations.get(name)
            where = f"{os.path.relpath(cfg.path, tree)}:{line}"
            if reg is None or definer.source_module is None or cfg.source_module is None:
                if verbose:
                    print(f"unresolved {where}: {name} not registered in {mod}")
                continue
            d_kind, d_target, d_map = reg
            if d_map:
                if verbose:
                    print(f"unresolved {where}: the definer registers {name} with its own name_map")
                continue
            is_class = kind == "replace_class"
            old_src, new_src = upstream(definer.source_module), upstream(cfg.source_module)
            old = old_src and sameness.target_text(old_src, d_target, is_class)
            new = new_src and sameness.target_text(new_src, target, is_class)
            if not old or not new:
                if verbose:
                    print(f"unresolved {where}: {d_target if not old else target} not read")
                continue
            resolved += 1
            d = sameness.compare(sameness.rename(old[0], name_map), new[0])
            if d is None:
                faithful += 1
                if verbose:
                    print(f"same {where}: {target} <- {definer.source_module}:{d_target}")
                continue
            new_line = new[1] + d[1] - 1
            text = new_src.splitlines()[new_line - 1].strip()
            differ.append(f"{where}: {target} differs from {d_target} (written for): upstream line {new_line}: {text}")
    for line in differ:
        print(line)
    print(f"{found} reuses found, {resolved} resolved, {faithful} faithful, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
