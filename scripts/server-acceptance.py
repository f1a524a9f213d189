#!/usr/bin/env python3
"""Issue 37's acceptance of `patchgen server` on a project tree (VeOmni d9774494).

usage: scripts/server-acceptance.py PATCHGEN TREE WHEEL [--file GENERATED.py] [--seed N]
                                    [--lines N] [--edits N] [--jobs N] [--ruff PATH]

  PATCHGEN  the binary under test (its `server` and its `explain`)
  TREE      the project, a scratch copy: the regenerate step rewrites a generated
            file there (and restores it byte for byte, or says it did not)
  WHEEL     the transformers wheel the configs patch (5.9.0 for VeOmni), as PYTHONPATH

With the server open on qwen3_gpu's generated file (or --file):
  1. line 1 carries the information diagnostic naming the config;
  2. N random lines (default 50, seed 37, both printed): the hover names the
     origin `patchgen explain FILE:LINE --format json` gives (its kind, and a
     link to its file and line) and go-to-definition lands on that file and
     line (for a line of the wheel: the server's copy of the member, whose
     text must equal the wheel's, read here with zipfile);
  3. a character typed at the end of a line (default 10 lines spread over the
     sample, at least one written by a patch): a `hand-edit` warning over that line,
     for that version, within 500 ms, naming the module and, as related
     information and in its text, the place explain names for the line;
     each edit is reverted and the clean diagnostics awaited;
  4. "Regenerate from the config": once over an unsaved hand edit, once over
     one saved to disk; the workspace/applyEdit the server sends, applied to
     the buffer, gives the file on disk, and the file and its `.diff` on disk
     are byte for byte what they were.
For every config of the tree (`*_patch_gen_config.py`):
  5. one code lens per patch registration of the file (found here with
     Python's `ast`: `@config.override_method(...)`, `config.replace_class(...)`,
     `config.patches.append(...(target=...))`, ...), on its line, titled
     "N hunk(s) in X.diff" or "no effect", where N counts the hunks of the
     `.diff` on disk (split at `@@` here) whose causes, by
     `patchgen explain X.diff:LINE --format json` (one run per hunk), include
     that patch; the lens's command opens the generated file at the first
     changed line of the first such hunk (computed here from the hunk's lines).
     Cross-checks of the expectation itself: the per-hunk answers equal
     `patchgen explain MODULE --format json`, and the first non-blank added
     line of each hunk, explained alone (`explain PY:LINE`), names a cause of
     that hunk when a patch wrote it.
Prints each disagreement; exits 1 if there is any. python3 standard library only.
"""

import argparse
import ast
import concurrent.futures
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lsp_wire  # noqa: E402

KIND_WORDS = {
    "upstream": "copied from upstream",
    "patch": "written by a patch",
    "import": "an import",
    "header": "the generator's header",
    "ruff-fix": "rewritten by ruff check --fix",
    "ruff-format": "reformatted by ruff format",
}
REGISTRATIONS = {"override_method", "replace_class", "replace_function", "modify_init"}
TARGET_KEYWORDS = ("target", "target_class", "target_method", "target_function")

disagreements = []


def disagree(section, what):
    disagreements.append(f"[{section}] {what}")
    print(f"  DISAGREE [{section}] {what}")


class Explain:
    """`patchgen explain ... --format json` run in the tree, as the server runs."""

    def __init__(self, binary, tree, env):
        self.binary, self.tree, self.env = binary, tree, env

    def __call__(self, *args):
        out = subprocess.run(
            [self.binary, "explain", *args, "--format", "json"],
            cwd=self.tree,
            env=self.env,
            capture_output=True,
            text=True,
        )
        try:
            return json.loads(out.stdout)
        except json.JSONDecodeError:
            return {"error": f"exit {out.returncode}: {out.stdout[:200]} {out.stderr[:400]}"}


def read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def wheel_member_line(origin_path, line):
    """Line `line` (1-based) of `X.whl!member`, read from the wheel, and the member's text."""
    whl, _, member = origin_path.partition("!")
    with zipfile.ZipFile(whl) as z:
        text = z.read(member).decode("utf-8")
    return text, member


# ---------------------------------------------------------------- the generated file


def check_provenance(client, explain, path, text, seed, n):
    uri = lsp_wire.uri_of(path)
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    rng = random.Random(seed)
    sample = sorted(rng.sample(range(1, len(lines) + 1), min(n, len(lines))))
    print(f"\n## hover and definition vs `explain FILE:LINE` — {len(sample)} lines, seed {seed}")
    print(f"lines: {' '.join(map(str, sample))}")
    origins = {}
    agreed = 0
    for line in sample:
        doc = explain(f"{path}:{line}")
        at = {"textDocument": {"uri": uri}, "position": {"line": line - 1, "character": 0}}
        hover, herr, _ = client.request("textDocument/hover", at)
        definition, derr, _ = client.request("textDocument/definition", at)
        if herr or derr:
            disagree("provenance", f"line {line}: hover error {herr}, definition error {derr}")
            continue
        o = doc.get("origin")
        if o is None:
            # explain has no origin (e.g. "hand edit" or an error): the server must say no more than that.
            if doc.get("error") is None:
                disagree("provenance", f"line {line}: explain answered {json.dumps(doc)[:300]}")
            elif definition is not None:
                disagree("provenance", f"line {line}: explain: {doc['error']}; yet a definition {definition}")
            else:
                agreed += 1
            continue
        origins[line] = o
        value = (hover or {}).get("contents", {}).get("value", "")
        ok = True
        word = KIND_WORDS.get(o["kind"])
        if not hover or (word and word not in value):
            disagree("provenance", f"line {line}: explain says {o['kind']}, hover says {value[:200]!r}")
            ok = False
        opath, oline = o.get("path"), o.get("line")
        if opath and oline:
            name = os.path.basename(opath.split("!")[-1])
            link = re.search(r"\(\[([^\]]+)\]\(([^)#]+)#L(\d+)\)\)", value)
            if not link or link.group(1) != f"{name}:{oline}" or int(link.group(3)) != oline:
                disagree("provenance", f"line {line}: explain {opath}:{oline}, hover link {link and link.group(0)}")
                ok = False
            elif lsp_wire.path_of(link.group(2)) not in (opath, os.path.realpath(opath)):
                disagree("provenance", f"line {line}: hover link to {lsp_wire.path_of(link.group(2))}, explain {opath}")
                ok = False
            if not isinstance(definition, dict) or "uri" not in definition:
                disagree("provenance", f"line {line}: explain {opath}:{oline}, definition {definition}")
                continue
            target = lsp_wire.path_of(definition["uri"])
            dline = definition["range"]["start"]["line"] + 1
            if "!" in opath:
                # A wheel member: the server opens its read-only copy; same member, same text.
                member_text, member = wheel_member_line(opath, oline)
                copy_ok = target.endswith("/" + member) and os.path.isfile(target)
                if copy_ok:
                    with open(target, encoding="utf-8") as fh:
                        copy_ok = fh.read() == member_text
                if not copy_ok or dline != oline:
                    disagree("provenance", f"line {line}: explain {opath}:{oline}, definition {target}:{dline}")
                    ok = False
            elif not same_file(target, opath) or dline != oline:
                disagree("provenance", f"line {line}: explain {opath}:{oline}, definition {target}:{dline}")
                ok = False
        elif definition is not None:
            disagree("provenance", f"line {line}: explain gives no place ({o}), yet a definition {definition}")
            ok = False
        agreed += ok
    print(f"agreed: {agreed}/{len(sample)}")
    return sample, origins, lines


def type_char(client, uri, version, line, col, undo=False):
    at = {"line": line, "character": col}
    end = {"line": line, "character": col + 1} if undo else at
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": at, "end": end}, "text": "" if undo else "x"}],
        },
    )


def warning_over(ds, line):
    for d in ds:
        if d.get("code") == "hand-edit" and d["range"]["start"]["line"] <= line <= d["range"]["end"]["line"]:
            return d
    return None


def check_hand_edits(client, tree, path, module, sample, origins, lines, n, state):
    uri = lsp_wire.uri_of(path)
    chosen = [n for n in sample if lines[n - 1].strip() and n in origins]
    patch_lines = [n for n in chosen if origins[n]["kind"] == "patch"]
    picked = chosen[:: max(1, len(chosen) // n)][:n]  # spread over the file
    if patch_lines and not any(n in patch_lines for n in picked):
        picked[-1:] = [patch_lines[0]]
    kinds = " ".join(f"{n}:{origins[n]['kind']}" for n in picked)
    print(f"\n## hand edits — {len(picked)} lines (line:kind of origin): {kinds}")
    times = []
    for line in picked:
        o = origins[line]
        col = lsp_wire.utf16_len(lines[line - 1])
        state["version"] += 1
        v = state["version"]
        t0 = time.perf_counter()
        type_char(client, uri, v, line - 1, col)
        m = client.diagnostics(uri, lambda ds, ver: ver == v and warning_over(ds, line - 1), timeout=30)
        if m is None:
            disagree("hand edit", f"line {line}: no hand-edit warning within 30 s")
        else:
            ms = (m["_at"] - t0) * 1000
            times.append(ms)
            w = warning_over(m["params"]["diagnostics"], line - 1)
            rel = (w.get("relatedInformation") or [{}])[0].get("location")
            place = None
            if o.get("path") and o.get("line"):
                shown = os.path.relpath(o["path"], tree) if o["path"].startswith(tree + os.sep) else o["path"]
                place = f"{shown}:{o['line']}"
            problems = []
            if ms >= 500:
                problems.append(f"{ms:.0f} ms")
            if w["range"]["start"]["line"] != line - 1:
                problems.append(f"warning starts at line {w['range']['start']['line'] + 1}")
            if module not in w["message"]:
                problems.append("module not named")
            if place and place not in w["message"]:
                problems.append(f"{place} not named")
            if place:
                if not rel or lsp_wire.path_of(rel["uri"]) not in (o["path"], os.path.realpath(o["path"])):
                    problems.append(f"related information {rel}")
                elif rel["range"]["start"]["line"] != o["line"] - 1:
                    problems.append(f"related information at line {rel['range']['start']['line'] + 1}")
            if problems:
                disagree("hand edit", f"line {line} ({o['kind']} {place}): {', '.join(problems)}: {w['message']!r}")
        state["version"] += 1
        v = state["version"]
        type_char(client, uri, v, line - 1, col, undo=True)
        m = client.diagnostics(uri, lambda ds, ver: ver == v, timeout=30)
        if m is None or len(m["params"]["diagnostics"]) != 1:
            disagree("hand edit", f"line {line}: reverted, diagnostics {m and m['params']['diagnostics']}")
        client.drop(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    if times:
        print(f"warning after the keystroke: median {sorted(times)[len(times) // 2]:.1f} ms, max {max(times):.1f} ms")
    return picked


def regenerate(client, path, text, line, saved, state):
    """Type a character into `line` (1-based; saved to disk first when `saved`), run the
    code action, apply the edit it sends: the buffer and the files on disk must be what they were."""
    what = "saved" if saved else "unsaved"
    uri = lsp_wire.uri_of(path)
    diff = path[: -len(".py")] + ".diff"
    before_py, before_diff = read_bytes(path), read_bytes(diff)
    lines = text.split("\n")
    lines[line - 1] += "x"
    edited = "\n".join(lines)
    state["version"] += 1
    v = state["version"]
    if saved:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(edited)
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": edited}]},
    )
    if saved:
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    m = client.diagnostics(uri, lambda ds, ver: ver == v and warning_over(ds, line - 1), timeout=30)
    if m is None:
        disagree("regenerate", f"{what}: no hand-edit warning for line {line}")
        return
    w = warning_over(m["params"]["diagnostics"], line - 1)
    actions, err, _ = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": w["range"], "context": {"diagnostics": [w]}},
    )
    action = next((a for a in actions or [] if (a.get("command") or {}).get("command") == "patchgen.regenerate"), None)
    if action is None:
        disagree("regenerate", f'{what}: no "Regenerate from the config" action: {actions} {err}')
        return
    print(f"{what}: action {action['title']!r}")
    cmd = action["command"]
    rid = client.send_request(
        "workspace/executeCommand", {"command": cmd["command"], "arguments": cmd.get("arguments", [])}
    )
    applied = client.wait(lambda m: m.get("method") == "workspace/applyEdit", timeout=60)
    answered = client.wait(lambda m: m.get("id") == rid and "method" not in m, timeout=60)
    if answered is None or answered.get("error"):
        disagree("regenerate", f"{what}: executeCommand answered {answered}")
    if applied is None:
        disagree("regenerate", f"{what}: no workspace/applyEdit")
        return
    edits = applied["params"]["edit"].get("changes", {}).get(uri)
    if edits is None:
        disagree("regenerate", f"{what}: the workspace edit does not change {uri}: {applied['params']}")
        return
    buffer = lsp_wire.apply_edits(edited, edits)
    on_disk = read_bytes(path)
    checks = [
        ("buffer == file on disk", buffer.encode() == on_disk),
        ("file on disk == before", on_disk == before_py),
        (".diff on disk == before", read_bytes(diff) == before_diff),
    ]
    for name, ok in checks:
        if not ok:
            disagree("regenerate", f"{what}: {name} is false")
    print(f"{what}: " + ", ".join(f"{n}: {'yes' if ok else 'NO'}" for n, ok in checks))
    if saved and on_disk != before_py:
        # Leave the tree as it was for what follows.
        with open(path, "wb") as fh:
            fh.write(before_py)
    # The editor applied the edit: the buffer is clean again.
    state["version"] += 1
    v = state["version"]
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": buffer}]},
    )
    m = client.diagnostics(uri, lambda ds, ver: ver == v, timeout=30)
    if m is None or len(m["params"]["diagnostics"]) != 1:
        disagree("regenerate", f"{what}: after applying, diagnostics {m and m['params']['diagnostics']}")
    client.drop(lambda m: m.get("method") in ("textDocument/publishDiagnostics", "workspace/applyEdit"))


# ---------------------------------------------------------------- code lenses


def registrations(config_path):
    """(target, 1-based first line, last line, code span) of each patch registration in the
    config file, by `ast`; the code span is the lines of the patch's function in this file
    (decorated, or `replacement=NAME` defined here), else None."""
    with open(config_path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    found, unresolved = [], []
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    decorated = {}
    for n in ast.walk(tree):
        for d in getattr(n, "decorator_list", []):
            decorated[id(d)] = (d.lineno, n.end_lineno)

    def string(node):
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

    def target_of(call):
        t = string(call.args[0]) if call.args else None
        for k in call.keywords:
            if k.arg in TARGET_KEYWORDS:
                t = t or string(k.value)
        return t

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        f = node.func
        if f.attr in REGISTRATIONS and isinstance(f.value, ast.Name) and f.value.id == "config":
            t = target_of(node)
        elif (
            f.attr == "append"
            and isinstance(f.value, ast.Attribute)
            and f.value.attr == "patches"
            and isinstance(f.value.value, ast.Name)
            and f.value.value.id == "config"
        ):
            inner = node.args[0] if node.args else None
            t = target_of(inner) if isinstance(inner, ast.Call) else None
        else:
            continue
        span = decorated.get(id(node))
        if span is None:
            name = next(
                (k.value.id for k in node.keywords if k.arg == "replacement" and isinstance(k.value, ast.Name)), None
            )
            d = defs.get(name)
            span = (d.lineno, d.end_lineno) if d else None
        (found if t else unresolved).append((t, node.lineno, node.end_lineno, span))
    return sorted(found, key=lambda x: x[1]), unresolved


def parse_diff(diff_path):
    """Per hunk: its `@@` line number (1-based), header, the added lines with their line in
    the new file, and the new file's first changed line: the first added line, or for a
    change that only deletes, the line above it (as the `.diff` format has no line there)."""
    hunks = []
    with open(diff_path, encoding="utf-8") as fh:
        diff_lines = fh.read().split("\n")
    if diff_lines and diff_lines[-1] == "":
        diff_lines.pop()
    cur = None
    for i, s in enumerate(diff_lines, 1):
        h = re.match(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", s)
        if h:
            new_start = int(h.group(3))
            new_lines = 1 if h.group(4) is None else int(h.group(4))
            # `_next`: the new file's line the next added or context line is (an empty hunk starts after new_start).
            nxt = new_start if new_lines > 0 else new_start + 1
            cur = {"at": i, "header": s.rstrip(), "new": new_start, "added": [], "first_changed": None, "_next": nxt}
            hunks.append(cur)
            continue
        if cur is None:  # the `---`/`+++` lines
            continue
        if s.startswith("+"):
            cur["added"].append((cur["_next"], s[1:]))
            if cur["first_changed"] is None:
                cur["first_changed"] = cur["_next"]
            cur["_next"] += 1
        elif s.startswith("-"):
            if cur["first_changed"] is None:
                rest = next((x for x in diff_lines[i:] if not x.startswith("-")), "")
                cur["first_changed"] = cur["_next"] if rest.startswith("+") else max(cur["_next"] - 1, 1)
        elif not s.startswith("\\"):
            cur["_next"] += 1  # context (an empty context line is written without its space)
    for h in hunks:
        if h["first_changed"] is None:
            h["first_changed"] = max(h["new"], 1)
    return hunks


def patch_targets(causes):
    return {c.get("target") for c in causes if c.get("kind") == "patch"}


def check_lenses(client, explain, tree, jobs):
    configs = sorted(
        os.path.join(r, f)
        for r, _, fs in os.walk(tree)
        for f in fs
        if f.endswith("_patch_gen_config.py") and not f.startswith("_")
    )
    print(f"\n## code lenses — {len(configs)} configs")
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    rows, notes = [], []
    total_patches = total_hunks = 0
    for config in configs:
        module = os.path.relpath(config, tree)[: -len(".py")].replace(os.sep, ".")
        rel = os.path.relpath(config, tree)
        doc = explain(module)
        files = doc.get("files") or []
        if len(files) != 1:
            disagree("lens", f"{rel}: explain {module}: {json.dumps(doc)[:300]}")
            continue
        py = files[0]["path"]
        diff = py[: -len(".py")] + ".diff"
        diff_name = os.path.basename(diff)
        hunks = parse_diff(diff)
        total_hunks += len(hunks)
        # Each hunk's causes by `explain X.diff:LINE` (the .diff on disk, one hunk at a time).
        answers = list(pool.map(lambda h: explain(f"{diff}:{h['at']}"), hunks))
        for h, a in zip(hunks, answers):
            got = a.get("hunk")
            if not got or got.get("header") != h["header"]:
                disagree("lens", f"{rel}: explain {diff_name}:{h['at']} answered {json.dumps(a)[:300]}")
                h["causes"] = []
            else:
                h["causes"] = got["causes"]
        # Cross-check 1: the same causes as explain MODULE gives for the whole file.
        whole = files[0]["hunks"]
        if [patch_targets(h["causes"]) for h in hunks] != [patch_targets(w["causes"]) for w in whole]:
            disagree("lens", f"{rel}: explain {diff_name}:LINE and explain {module} attribute hunks differently")
        # Cross-check 2: a hunk's first non-blank added line, explained alone, names one of its causes.
        firsts = [(h, next((n for n, s in h["added"] if s.strip()), None)) for h in hunks]
        lone = list(pool.map(lambda hf: hf[1] and explain(f"{py}:{hf[1]}"), firsts))
        for (h, n), a in zip(firsts, lone):
            o = (a or {}).get("origin") or {}
            if n and o.get("kind") == "patch" and o.get("target") not in patch_targets(h["causes"]):
                disagree(
                    "lens",
                    f"{rel}: {os.path.basename(py)}:{n} is written by {o.get('target')}, "
                    f"which is not a cause of its hunk {h['header']} ({sorted(patch_targets(h['causes']))})",
                )
        regs, unresolved = registrations(config)
        for t, line, _, _ in unresolved:
            disagree("lens", f"{rel}:{line}: a registration whose target is not a string literal (not compared)")
        total_patches += len(regs)

        uri = lsp_wire.uri_of(config)
        client.drop(lambda m: m.get("method") == "workspace/codeLens/refresh")
        with open(config, encoding="utf-8") as fh:
            client.open(config, fh.read())
        refreshed = client.wait(lambda m: m.get("method") == "workspace/codeLens/refresh", timeout=120)
        lenses, err, _ = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        client.drop(lambda m: m.get("method") in ("textDocument/publishDiagnostics", "window/logMessage"))
        if refreshed is None or err or lenses is None:
            disagree("lens", f"{rel}: no code lenses ({err or 'the config was not mapped'})")
            continue
        by_line = {}
        for lens in lenses:
            by_line.setdefault(lens["range"]["start"]["line"] + 1, []).append(lens)
        effect = no_effect = 0
        same_target = {}
        for r in regs:
            same_target.setdefault(r[0], []).append(r)
        for target, line, last, span in regs:
            if len(same_target[target]) == 1:
                attributed = [h for h in hunks if target in patch_targets(h["causes"])]
            elif span is None:
                disagree("lens", f"{rel}:{line} {target}: registered more than once, its code not found here")
                continue
            else:
                # The same target registered more than once: a hunk is this registration's when
                # a cause names a line of its code (the last registration replaces the others).
                attributed = [
                    h
                    for h in hunks
                    if any(
                        c.get("kind") == "patch"
                        and c.get("target") == target
                        and c.get("path")
                        and same_file(c["path"], config)
                        and span[0] <= (c.get("line") or 0) <= span[1]
                        for c in h["causes"]
                    )
                ]
            n = len(attributed)
            want = "no effect" if n == 0 else f"{n} hunk{'' if n == 1 else 's'} in {diff_name}"
            # The lens sits on the registration's first line, or on a line of it (`config.patches.append(`
            # registers the patch its argument's call makes, on the next line).
            at = next((n for n in range(line, last + 1) if n in by_line), line)
            if at != line:
                notes.append(f"{rel}:{line} {target}: the lens is on line {at}, inside the registration")
            got = by_line.pop(at, [])
            titles = [(g.get("command") or {}).get("title") for g in got]
            if titles != [want]:
                disagree("lens", f"{rel}:{line} {target}: expected {want!r}, lens {titles}")
                continue
            if n == 0:
                no_effect += 1
                continue
            effect += 1
            args = got[0]["command"].get("arguments") or []
            first = attributed[0]["first_changed"]
            if (
                got[0]["command"].get("command") != "patchgen.openGenerated"
                or len(args) != 2
                or not same_file(lsp_wire.path_of(args[0]), py)
                or args[1] != first - 1
            ):
                disagree("lens", f"{rel}:{line} {target}: command {got[0]['command']}, expected {py} at line {first}")
        for line, extra in sorted(by_line.items()):
            disagree("lens", f"{rel}:{line}: a lens on no registration: {[e['command']['title'] for e in extra]}")
        rows.append((rel, len(regs), effect, no_effect, len(hunks)))
        print(f"{rel}: {len(regs)} patches ({effect} with hunks, {no_effect} no effect), {len(hunks)} hunks")
    pool.shutdown()
    for n in notes:
        print("  note:", n)
    print(f"total: {total_patches} patch registrations in {len(rows)} configs, {total_hunks} hunks")
    return rows


def main():
    ap = argparse.ArgumentParser(usage="server-acceptance.py PATCHGEN TREE WHEEL [options]")
    ap.add_argument("patchgen")
    ap.add_argument("tree")
    ap.add_argument("wheel")
    ap.add_argument("--file", help="the generated file (default: qwen3_gpu's)")
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--lines", type=int, default=50)
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2, help="explain runs in parallel")
    ap.add_argument("--ruff")
    a = ap.parse_args()
    binary = os.path.abspath(a.patchgen)
    tree = os.path.realpath(a.tree)
    env = lsp_wire.server_env(a.wheel, a.ruff)
    explain = Explain(binary, tree, env)
    path = os.path.realpath(
        a.file or os.path.join(tree, "veomni/models/transformers/qwen3/generated/patched_modeling_qwen3_gpu.py")
    )
    with open(path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    print(f"binary: {binary}\ntree: {tree}\nfile: {os.path.relpath(path, tree)} (sha256 {digest}…)")

    client = lsp_wire.Client(binary, tree, env)
    try:
        client.initialize()
        uri = lsp_wire.uri_of(path)
        client.open(path, text)
        first = client.diagnostics(uri, lambda ds, v: len(ds) > 0, timeout=120)
        if first is None:
            sys.exit("no diagnostics for the generated file within 120 s")
        ds = first["params"]["diagnostics"]
        info = ds[0]
        module_doc = explain(f"{path}:1")
        module = None
        m = re.match(r"generated by (\S+) \(", info["message"])
        if m:
            module = m.group(1)
        print(f"line 1: {info['message'].splitlines()[0]}")
        expected_module = os.path.relpath((module_doc.get("origin") or {}).get("path", "") or "", tree)[
            : -len(".py")
        ].replace(os.sep, ".")
        if (
            len(ds) != 1
            or info.get("severity") != 3
            or info["range"]["start"]["line"] != 0
            or module != expected_module
        ):
            disagree("line 1", f"{ds} (explain's config for line 1: {expected_module})")
        state = {"version": 1}
        sample, origins, lines = check_provenance(client, explain, path, text, a.seed, a.lines)
        picked = check_hand_edits(client, tree, path, module or "", sample, origins, lines, a.edits, state)
        print("\n## regenerate")
        line = next((n for n in picked if origins[n]["kind"] == "patch"), picked[0] if picked else 2)
        regenerate(client, path, text, line, False, state)
        regenerate(client, path, text, line, True, state)
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        check_lenses(client, explain, tree, a.jobs)
    finally:
        client.close()
    if read_bytes(path) != text.encode():
        disagree("tree", f"{path} was changed by the run")
    print(f"\n{len(disagreements)} disagreement(s)")
    for d in disagreements:
        print(" ", d)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
