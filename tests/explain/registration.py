"""Independent check (Python's `ast`) for `tests/explain.rs`: every `patch`
cause of `patchgen explain --format json` (read from stdin) names a config
line inside the registration of its target: a def/class decorated with the
DSL call naming it, the DSL call itself, or the function such a call names
as its replacement (in any config under the tree given as argument). Prints one line per cause that is not, exits 1 if any."""

import ast
import json
import sys

DSL = {"replace_class", "override_method", "replace_function", "modify_init",
       "add_helper", "add_helper_after", "exclude_from_output", "create_patch_from_external", "Patch"}


def dsl_name(call):
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name if name in DSL else None


def strings(call):
    values = list(call.args) + [k.value for k in call.keywords if k.arg in ("target", "target_class", "target_method", "target_function")]
    return [a.value for a in values if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def registered_names(configs, target):
    """Names of functions/classes some config registers for `target` by a call."""
    out = set()
    for tree in configs:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and dsl_name(node) and target in strings(node):
                out.update(a.id for a in node.args if isinstance(a, ast.Name))
                out.update(k.value.id for k in node.keywords if isinstance(k.value, ast.Name))
    return out


def ranges(tree, target, configs):
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
    out = []
    for name in registered_names(configs, target):
        if name in defs:
            d = defs[name]
            out.append((min([x.lineno for x in d.decorator_list] + [d.lineno]), block_end(LINES, d)))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                call = d if isinstance(d, ast.Call) else None
                name = dsl_name(call) if call else (d.attr if isinstance(d, ast.Attribute) and d.attr in DSL else None)
                if not name:
                    continue
                named = strings(call) if call else []
                if target in named or (name.startswith("add_helper") and node.name == target):
                    out.append((d.lineno, block_end(LINES, node)))
        if isinstance(node, ast.Call) and dsl_name(node) and target in strings(node):
            out.append((node.lineno, node.end_lineno))
            refs = [a for a in node.args if isinstance(a, ast.Name)]
            refs += [k.value for k in node.keywords if isinstance(k.value, ast.Name)]
            for r in refs:
                if r.id in defs:
                    d = defs[r.id]
                    out.append((min([x.lineno for x in d.decorator_list] + [d.lineno]), block_end(LINES, d)))
    return out


def block_end(lines, node):
    """The last line of `node`'s block as `inspect.getsource` reads it:
    indented comment lines after its last statement belong to it."""
    end = node.end_lineno
    col = node.col_offset
    i = end
    while i < len(lines):
        text = lines[i]
        stripped = text.lstrip()
        if stripped.startswith("#") and len(text) - len(stripped) > col:
            end = i + 1
        elif stripped:
            break
        i += 1
    return end


def main():
    import pathlib
    root = pathlib.Path(sys.argv[1])
    configs = [ast.parse(p.read_text()) for p in root.rglob("*_patch_gen_config.py")]
    doc = json.load(sys.stdin)
    bad = 0
    checked = 0
    trees = {}
    for f in doc["files"]:
        for h in f["hunks"]:
            for c in h["causes"]:
                if c["kind"] != "patch":
                    continue
                path = c["path"]
                if path not in trees:
                    with open(path) as fh:
                        text = fh.read()
                    trees[path] = (ast.parse(text), text.splitlines())
                global LINES
                LINES = trees[path][1]
                rs = ranges(trees[path][0], c["target"], configs)
                checked += 1
                if not any(a <= c["line"] <= b for a, b in rs):
                    bad += 1
                    print(f"{path}:{c['line']}: {c['type']} {c['target']} not inside {rs}")
    print(f"checked {checked} patch causes, {bad} outside their registration")
    sys.exit(1 if bad else 0)


main()
