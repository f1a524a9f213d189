"""Test-table rows of a VeOmni tree, read with python3's `ast` (independent
of patchgen's Rust code): used by scripts/new-acceptance.py (`rows`,
`rows-new-models`) and by tests/new_test_rows.rs.

A table is a module-level `NAME = [...]`/`(...)` whose elements are all
calls or tuples and that a test function is parametrized with; a row belongs to a model when one of its string constants
names the model: a path component or `_toy(...)` argument equal to one of
its toy directories, or a string equal to (or starting, followed by a
non-word character) one of its names. Fields compared: toy paths, class
names (strings ending in ForCausalLM/ForConditionalGeneration/Model), the
pytest id (`id=`, else the first string argument), is_moe (the slot named
`is_moe` by the parametrize argnames).
"""

import ast
import json
import re
import sys

TABLE_FILES = [
    "tests/models/test_models_logits_equal_v5.py",
    "tests/models/test_models_patch.py",
    "tests/e2e/test_e2e_parallel.py",
    "tests/distributed/test_dummy_forward.py",
    "tests/models/test_vlm_trainer.py",
    "tests/distributed/test_fsdp_equivalence.py",
]


def strings(node):
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def names_model(s, toys, names, all_names=()):
    """Whether string `s` names the model: a toy directory, or a name of it
    (alone or starting an id) that no longer project model name starts too."""
    if "/" in s or s in toys:
        return any(p in toys for p in s.split("/"))
    starts = [n for n in set(names) | set(all_names) if s == n or (s.startswith(n) and not s[len(n)].isalnum())]
    return bool(starts) and max(starts, key=len) in names


def argnames(tree):
    """{table: [argnames]} from @pytest.mark.parametrize(names, TABLE)."""
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for d in node.decorator_list:
            if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize":
                if len(d.args) >= 2 and isinstance(d.args[1], ast.Name):
                    a = d.args[0]
                    if isinstance(a, ast.Constant):
                        names = [x.strip() for x in a.value.split(",") if x.strip()]
                    else:
                        names = [e.value for e in getattr(a, "elts", [])]
                    out.setdefault(d.args[1].id, names)
    return out


def tables(tree):
    used = argnames(tree)
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in used):
            value = node.value
            if isinstance(value, (ast.List, ast.Tuple)) and value.elts and all(
                isinstance(e, (ast.Call, ast.Tuple)) for e in value.elts
            ):
                yield node.targets[0].id, value.elts


def fields(row, slots):
    args = row.args if isinstance(row, ast.Call) else row.elts
    kw = {k.arg: k.value for k in getattr(row, "keywords", [])}
    ss = strings(row)
    out = {
        "toy": sorted({s for s in ss if "toy" in s}),
        "class": sorted({s for s in ss if re.fullmatch(r"[A-Z]\w*(ForCausalLM|ForConditionalGeneration|Model)", s)}),
    }
    rid = None
    if "id" in kw and isinstance(kw["id"], ast.Constant):
        rid = kw["id"].value
    else:
        first = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        rid = first[0] if first else None
    out["id"] = rid
    is_moe = None
    if "is_moe" in kw and isinstance(kw["is_moe"], ast.Constant):
        is_moe = kw["is_moe"].value
    elif "is_moe" in slots and slots.index("is_moe") < len(args) and isinstance(args[slots.index("is_moe")], ast.Constant):
        is_moe = args[slots.index("is_moe")].value
    out["is_moe"] = is_moe
    return out


def rows_of(text, toys, names, all_names=()):
    """[(table, lineno, end_lineno, fields)] of the rows naming the model."""
    tree = ast.parse(text)
    slots = argnames(tree)
    out = []
    for table, elts in tables(tree):
        for e in elts:
            if any(names_model(s, toys, names, all_names) for s in strings(e)):
                out.append((table, e.lineno, e.end_lineno, fields(e, slots.get(table, []))))
    return out


def remove_rows(text, toys, names, all_names=()):
    """The text without the model's rows (their lines)."""
    lines = text.splitlines(keepends=True)
    drop = set()
    for _, a, b, _ in rows_of(text, toys, names, all_names):
        drop.update(range(a - 1, b))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def loads(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def defines(node):
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    return set()


def converter_group(text, model_dir):
    """(import node, [group nodes]) of a model's converter test group."""
    tree = ast.parse(text)
    imp = None
    for n in tree.body:
        if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[-2:] == [model_dir, "checkpoint_tensor_converter"]:
            imp = n
    if imp is None:
        return None, []
    names = {a.asname or a.name for a in imp.names}
    group = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom)) and loads(n) & names]
    while True:
        wanted = set().union(*(loads(n) for n in group)) if group else set()
        more = [n for n in tree.body if n not in group and defines(n) & wanted]
        if not more:
            break
        group += more
    return imp, sorted(group, key=lambda n: n.lineno)


def remove_converter_group(text, model_dir):
    imp, group = converter_group(text, model_dir)
    if imp is None:
        return text
    tree = ast.parse(text)
    others = [n for n in tree.body if all(n.lineno != g.lineno for g in group) and n.lineno != imp.lineno]
    used_elsewhere = set().union(*(loads(n) for n in others)) if others else set()
    lines = text.splitlines(keepends=True)
    drop = set(range(imp.lineno - 1, imp.end_lineno))
    for g in group:
        if defines(g) & used_elsewhere:
            continue
        start = min([g.lineno] + [d.lineno for d in getattr(g, "decorator_list", [])])
        drop.update(range(start - 1, g.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


if __name__ == "__main__":
    # rows FILE TOYS NAMES: the rows as JSON (for tests).
    text = open(sys.argv[1]).read()
    print(json.dumps([[t, a, b, f] for t, a, b, f in rows_of(text, sys.argv[2].split(","), sys.argv[3].split(","))]))
