"""The test tables of a Python file as python3's `ast` reads them (the
oracle of tests/new_test_rows.rs): for each module-level list/tuple of
calls or tuples a test is parametrized with, its rows in order, each with
its lines, its positional arguments and keywords as `ast.unparse` writes
them, and its string constants.

usage: python3 rows_oracle.py FILE  ->  JSON {table: [row, ...]}
"""

import ast
import json
import sys


def main(path):
    tree = ast.parse(open(path).read())
    used = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and getattr(d.func, "attr", None) == "parametrize" and len(d.args) > 1:
                    if isinstance(d.args[1], ast.Name):
                        used.add(d.args[1].id)
    out = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if name not in used or not isinstance(node.value, (ast.List, ast.Tuple)):
            continue
        rows = []
        for e in node.value.elts:
            args = e.args if isinstance(e, ast.Call) else e.elts
            rows.append({
                "lines": [e.lineno, e.end_lineno],
                "args": [ast.unparse(a) for a in args],
                "kw": {k.arg: ast.unparse(k.value) for k in getattr(e, "keywords", [])},
                "strings": [n.value for n in ast.walk(e) if isinstance(n, ast.Constant) and isinstance(n.value, str)],
            })
        out[name] = rows
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
