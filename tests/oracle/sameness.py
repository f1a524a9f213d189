"""The independent side of the sameness test (python3's own `ast`).

Two definitions have the same code when `ast.dump` of their parsed texts,
every docstring removed (the first statement of a module, class or function
body when it is a `str` constant), is equal. The first difference is the
innermost differing statement: a compound statement whose header (the
statement with its nested bodies emptied) dumps equal is entered.

Used by tests/sameness.rs (stdin: JSON list of [old_text, new_text]) and by
scripts/reuse-check.py (imported).
"""

import ast
import copy
import json
import sys
import textwrap

BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def strip_docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:]
    return tree


def _bodies(node):
    out = []
    for field in BODIES:
        value = getattr(node, field, None)
        if not isinstance(value, list):
            continue
        if field in ("handlers", "cases"):
            out.extend(h.body for h in value)
        else:
            out.append(value)
    # ruff keeps `elif`/`else` of an `if` as clauses of the one statement;
    # python nests them in `orelse`. Both orders visit the same lines.
    return out


def _header(node):
    c = copy.copy(node)
    for field in BODIES:
        value = getattr(c, field, None)
        if isinstance(value, list):
            if field in ("handlers", "cases"):
                new = []
                for h in value:
                    h2 = copy.copy(h)
                    h2.body = []
                    new.append(h2)
                setattr(c, field, new)
            elif field == "orelse" and isinstance(node, ast.If) and len(value) == 1 and isinstance(value[0], ast.If):
                setattr(c, field, [_header(value[0])])
            else:
                setattr(c, field, [])
    return ast.dump(c)


def _header_line(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.lineno
    return node.lineno if not getattr(node, "decorator_list", None) else node.decorator_list[0].lineno


def _start(node):
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


def first_difference(a, b, a_parent, b_parent):
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is None:
            return (_start(a[-1]) if a else a_parent, _start(y))
        if y is None:
            return (_start(x), _start(b[-1]) if b else b_parent)
        if ast.dump(x) == ast.dump(y):
            continue
        if _header(x) != _header(y):
            return (_header_line(x), _header_line(y))
        for bx, by in zip(_bodies(x), _bodies(y)):
            d = first_difference(bx, by, _start(x), _start(y))
            if d is not None:
                return d
        return (_start(x), _start(y))
    return None


def compare(old, new):
    """None when the code is the same, else (old_line, new_line)."""
    a = strip_docstrings(ast.parse(old))
    b = strip_docstrings(ast.parse(new))
    if ast.dump(a) == ast.dump(b):
        return None
    return first_difference(a.body, b.body, 1, 1) or (1, 1)


def target_text(source, target, is_class):
    """The dedented text of a top-level function, class or class's own
    method in `source`, and its first line; None when absent."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    node = None
    if is_class:
        node = next((n for n in reversed(tree.body) if isinstance(n, ast.ClassDef) and n.name == target), None)
    elif "." in target:
        cls, meth = target.split(".", 1)
        c = next((n for n in reversed(tree.body) if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if c is not None:
            node = next((n for n in reversed(c.body) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == meth), None)
    else:
        node = next((n for n in reversed(tree.body) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == target), None)
    if node is None:
        return None
    first = _start(node)
    return textwrap.dedent("".join(lines[first - 1 : node.end_lineno])), first


def rename(text, name_map):
    for old, new in sorted(name_map or [], key=lambda e: -len(e[0])):
        text = text.replace(old, new)
    return text


if __name__ == "__main__":
    out = []
    for old, new in json.load(sys.stdin):
        d = compare(old, new)
        out.append(None if d is None else list(d))
    json.dump(out, sys.stdout)
