#!/usr/bin/env python3
"""An independent check of `patchgen survey`'s body comparison, with Python's `ast`.

    scripts/body_oracle.py SURVEY_JSON OLD NEW

SURVEY_JSON is `patchgen survey --format json` of the same two upstreams (OLD, NEW:
a wheel or a directory holding the package). For every `override_method`,
`replace_function` and `replace_class` finding, this script finds the target in
both upstreams itself (a top-level function; a top-level class; a method in the
class or along its bases, followed by name through the module and its
`from … import`s) and calls its code changed when `ast.dump` of the two
definitions differ once every docstring (the first string statement of each
function and class) is dropped. It prints the targets whose code changed and
compares them with the findings whose `details.body.change` is `code`: exit 0
when the two sets are equal, 1 (with the differences) when not.
"""

import ast
import copy
import json
import os
import sys
import zipfile


class Upstream:
    def __init__(self, location):
        self.location = location
        self.zip = zipfile.ZipFile(location) if zipfile.is_zipfile(location) else None
        self.cache = {}

    def read(self, module):
        rel = module.replace(".", "/")
        for cand in (rel + ".py", rel + "/__init__.py"):
            if self.zip is not None:
                if cand in self.zip.namelist():
                    return self.zip.read(cand).decode("utf-8")
            else:
                for root in (self.location, os.path.dirname(self.location)):
                    p = os.path.join(root, cand)
                    if os.path.isfile(p):
                        with open(p, encoding="utf-8") as f:
                            return f.read()
        return None

    def tree(self, module):
        if module not in self.cache:
            text = self.read(module)
            self.cache[module] = ast.parse(text) if text is not None else None
        return self.cache[module]


def top(tree, name, kinds):
    found = None
    for node in tree.body:
        if isinstance(node, kinds) and node.name == name:
            found = node
    return found


def resolve_import(module, node, name):
    """The module a `from … import name` in `module` brings `name` from."""
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if (alias.asname or alias.name) == name:
                    base = module.split(".")
                    if stmt.level:
                        base = base[: len(base) - stmt.level]
                        target = ".".join(base + ([stmt.module] if stmt.module else []))
                    else:
                        target = stmt.module
                    return target, alias.name
    return None


def find_class(up, module, name, depth=0):
    tree = up.tree(module)
    if tree is None or depth > 5:
        return None
    cls = top(tree, name, ast.ClassDef)
    if cls is not None:
        return module, cls
    imported = resolve_import(module, tree, name)
    if imported:
        return find_class(up, imported[0], imported[1], depth + 1)
    return None


def find_method(up, module, cls, method, seen=0):
    own = None
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == method:
            own = node
    if own is not None:
        return own
    if seen > 10:
        return None
    for base in cls.bases:
        if isinstance(base, ast.Name):
            found = find_class(up, module, base.id)
            if found:
                m = find_method(up, found[0], found[1], method, seen + 1)
                if m is not None:
                    return m
    return None


def find(up, module, patch, target):
    tree = up.tree(module)
    if tree is None:
        return None
    if patch == "replace_function":
        return top(tree, target, (ast.FunctionDef, ast.AsyncFunctionDef))
    if patch == "replace_class":
        return top(tree, target, ast.ClassDef)
    cls_name, _, method = target.partition(".")
    cls = top(tree, cls_name, ast.ClassDef)
    return find_method(up, module, cls, method) if cls is not None else None


def code(node):
    n = copy.deepcopy(node)
    for sub in ast.walk(n):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = sub.body
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                sub.body = body[1:]
    return ast.dump(n, include_attributes=False)


def main():
    survey_json, old, new = sys.argv[1:4]
    with open(survey_json, encoding="utf-8") as f:
        doc = json.load(f)
    ups = Upstream(old), Upstream(new)
    expected, got = set(), set()
    for finding in doc["findings"]:
        patch = finding["patch"]
        if patch not in ("override_method", "replace_function", "replace_class"):
            continue
        key = (finding["config"], finding["target"])
        a = find(ups[0], finding["source_module"], patch, finding["target"])
        b = find(ups[1], finding["source_module"], patch, finding["target"])
        if a is not None and b is not None and code(a) != code(b):
            expected.add(key)
        body = finding["details"].get("body")
        if body and body["change"] == "code":
            got.add(key)
    for config, target in sorted(expected):
        print(f"{config} {target}")
    unique = sorted({t for _, t in expected})
    print(f"# {len(expected)} finding(s) with changed code ({len(unique)} distinct targets)", file=sys.stderr)
    if expected != got:
        for k in sorted(expected - got):
            print(f"MISSED by survey: {k}", file=sys.stderr)
        for k in sorted(got - expected):
            print(f"EXTRA in survey: {k}", file=sys.stderr)
        sys.exit(1)
    print("# survey agrees", file=sys.stderr)


if __name__ == "__main__":
    main()
