#!/usr/bin/env python3
"""Acceptance of `patchgen new` on a VeOmni tree (docs/new.md).

`leave-one-out TREE`:

For each model directory with a GPU patch-gen config, in a copy of the tree
without that directory, run `patchgen new <hf model>` (default template),
then check: generation succeeded, `patchgen <module> --diff` succeeds again,
ruff accepts the written Python files, `python3 -m py_compile` accepts them.
Compare with the real config through the two generated files' headers
("Patches applied:" lines): the share of the real config's patch targets the
scaffold also patches, and the three exception decisions (rotary: is
apply_rotary_pos_emb replaced; MLP: is the main MLP patched; norm: is the
main RMSNorm patched and with which OpSlot variant).

`leave-one-out TREE DIR...` runs only those model directories.

`new-models TREE MODEL...`: in a fresh copy of the tree per model, run
`patchgen new MODEL`; check generation, ruff and py_compile of every
written file.

usage: PATCHGEN=target/release/patchgen RUFF=.../ruff \\
       PYTHONPATH=/path/transformers-X-py3-none-any.whl \\
       scripts/new-acceptance.py leave-one-out|new-models TREE [MODEL...|DIR...] > table.md
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def header_targets(py_path):
    """(patch type, target) pairs of a generated file's header."""
    out = []
    with open(py_path) as f:
        for line in f:
            m = re.match(r"#\s+- (\w+): (\S+)$", line)
            if m:
                out.append((m.group(1), m.group(2)))
            if line.startswith("# ===") and out:
                break
    return out


def decisions(py_path, prefix):
    text = open(py_path).read()
    targets = {t for _, t in header_targets(py_path)}
    rotary = "replaced" if "apply_rotary_pos_emb" in targets else "upstream"
    mains = lambda stem: {prefix + stem, prefix + "Text" + stem}
    mlp = "patched" if any(t.split(".")[0] in mains("MLP") for t in targets) else "upstream"
    norm = "upstream"
    if any(t.split(".")[0] in mains("RMSNorm") for t in targets):
        # The OpSlot era names the variant; the Liger era the class.
        m = re.search(r'OpSlot\("rms_norm", "([^"]+)"\)', text)
        if m:
            norm = "standard" if m.group(1) == "standard" else "1+weight"
        elif "LigerRMSNormForQwen3Next" in text:
            norm = "1+weight"
        elif "LigerRMSNorm" in text:
            norm = "standard"
        else:
            norm = "patched"
    return {"rotary": rotary, "mlp": mlp, "norm": norm}


def source_module(config_path):
    m = re.search(r'source_module="transformers\.models\.(\w+)\.modeling_\w+"', open(config_path).read())
    return m.group(1) if m else None


def run_new(copy, hf, patchgen, ruff):
    """`patchgen new hf` in `copy`; the report and the checks of what it wrote."""
    t0 = time.perf_counter()
    p = subprocess.run([patchgen, "new", hf, "--format", "json"], cwd=copy, capture_output=True, text=True)
    row = {"hf": hf, "seconds": time.perf_counter() - t0}
    if not p.stdout.strip().startswith("{"):
        row["error"] = p.stderr.strip().splitlines()[0] if p.stderr.strip() else "exit %d" % p.returncode
        return row, None
    report = json.loads(p.stdout)
    row["category"] = report["category"]
    row["template"] = report["template"] or "built-in"
    gen_ok = all(g["ok"] for g in report["generation"])
    row["gen_msg"] = [g["message"][:300] for g in report["generation"] if not g["ok"]]
    module = report["backends"][0]["module"]
    regen = subprocess.run([patchgen, module, "--diff"], cwd=copy, capture_output=True, text=True)
    written = [f["path"] for f in report["files"] if f["path"].endswith(".py")]
    gen_dir = os.path.join(os.path.dirname(written[0]), "generated")
    written += [os.path.join(gen_dir, f) for f in os.listdir(gen_dir) if f.endswith(".py")] if os.path.isdir(gen_dir) else []
    ruff_ok = subprocess.run([ruff, "check", "--quiet", *written], cwd=copy, capture_output=True, text=True)
    compiled = subprocess.run([sys.executable, "-m", "py_compile", *written], capture_output=True, text=True)
    row["generates"] = gen_ok and regen.returncode == 0
    row["ruff"] = ruff_ok.returncode == 0
    row["ruff_out"] = (ruff_ok.stdout + ruff_ok.stderr).strip().splitlines()[:3]
    row["py_compile"] = compiled.returncode == 0
    row["carried"] = len(report["backends"][0]["carried"])
    row["dropped"] = len(report["backends"][0]["dropped"])
    row["decisions"] = report["backends"][0]["decisions"]
    m = re.search(r"(\d+) error\(s\)", report.get("lint", ""))
    row["lint_errors"] = int(m.group(1)) if m else None
    # Errors the template's own config has at the same place (a reused
    # replacement's finding) are the template's, not the scaffold's.
    template = report["backends"][0].get("template_config")
    if row["lint_errors"] and template:
        mine, theirs = lint_errors(copy, patchgen, module), lint_errors(copy, patchgen, template)
        row["lint_inherited"] = len([e for e in mine if e in theirs])
    return row, report


def lint_errors(copy, patchgen, module):
    p = subprocess.run([patchgen, "lint", module, "--format", "json"], cwd=copy, capture_output=True, text=True)
    try:
        diags = json.loads(p.stdout).get("diagnostics", [])
    except ValueError:
        return []
    return [(d["code"], (d.get("location") or {}).get("path"), (d.get("location") or {}).get("line"))
            for d in diags if d.get("severity") == "error"]


def lint_cell(r):
    n, inherited = r["lint_errors"], r.get("lint_inherited", 0)
    if n is None:
        return str(n)
    # own: located in what `new` wrote; inherited: the template's config has
    # the same error at the same file and line.
    return "%d own, %d inherited" % (n - inherited, inherited)


def new_models(tree, models, patchgen, ruff):
    rows = []
    for hf in models:
        work = tempfile.mkdtemp(prefix="newm-")
        copy = os.path.join(work, "tree")
        shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        row, _ = run_new(copy, hf, patchgen, ruff)
        rows.append(row)
        shutil.rmtree(work)
    yes = lambda b: "yes" if b else "**no**"
    print("| model | category | template | carried / dropped | generates | ruff | py_compile | lint errors | rotary | MLP | norm | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print("| %s | | | | error: %s | | | | | | | %.2f |" % (r["hf"], r["error"].replace("|", "/"), r["seconds"]))
            continue
        d = r["decisions"]
        print("| %s | %s | %s | %d / %d | %s | %s | %s | %s | %s | %s | %s | %.2f |" % (
            r["hf"], r["category"], r["template"], r["carried"], r["dropped"], yes(r["generates"]), yes(r["ruff"]),
            yes(r["py_compile"]), lint_cell(r), d["rotary"], d["mlp"], d["norm"], r["seconds"]))
    bad = [r for r in rows if "error" in r or not (r["generates"] and r["ruff"] and r["py_compile"])]
    for r in bad:
        print("<!-- %s: %s %s %s -->" % (r["hf"], r.get("error"), r.get("gen_msg"), r.get("ruff_out")), file=sys.stderr)
    return 1 if bad else 0


def main():
    mode = sys.argv[1]
    tree = os.path.abspath(sys.argv[2])
    patchgen = os.path.abspath(os.environ.get("PATCHGEN", "target/release/patchgen"))
    ruff = os.environ.get("RUFF", "ruff")
    if mode == "new-models":
        return new_models(tree, sys.argv[3:], patchgen, ruff)
    return leave_one_out(tree, patchgen, ruff, sys.argv[3:])


def leave_one_out(tree, patchgen, ruff, only=()):
    root = os.path.join(tree, "veomni/models/transformers")
    models = []
    for d in sorted(os.listdir(root)):
        gpu = [f for f in os.listdir(os.path.join(root, d)) if f.endswith("_gpu_patch_gen_config.py")] if os.path.isdir(os.path.join(root, d)) else []
        if gpu and (not only or d in only):
            models.append((d, os.path.join(root, d, gpu[0])))
    rows = []
    for d, config in models:
        hf = source_module(config)
        real_py = os.path.join(root, d, "generated", "patched_modeling_%s_gpu.py" % hf)
        if not os.path.exists(real_py):
            real_py = [os.path.join(root, d, "generated", f) for f in sorted(os.listdir(os.path.join(root, d, "generated"))) if f.endswith("_gpu.py")][0]
        work = tempfile.mkdtemp(prefix="loo-")
        copy = os.path.join(work, "tree")
        shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.rmtree(os.path.join(copy, "veomni/models/transformers", d))
        for toy in {hf, d}:
            shutil.rmtree(os.path.join(copy, "tests/toy_config", toy + "_toy"), ignore_errors=True)
        row, report = run_new(copy, hf, patchgen, ruff)
        row["dir"] = d
        if report is None:
            rows.append(row)
            shutil.rmtree(work)
            continue
        gen_dir = os.path.join(copy, "veomni/models/transformers", hf, "generated")
        ours_py = os.path.join(gen_dir, "patched_modeling_%s_gpu.py" % hf)
        real_targets = {t for _, t in header_targets(real_py)}
        ours_targets = {t for _, t in header_targets(ours_py)} if os.path.exists(ours_py) else set()
        row["real_targets"] = len(real_targets)
        row["shared_targets"] = len(real_targets & ours_targets)
        row["scaffold_targets"] = len(ours_targets)
        prefix = report["prefix"]
        row["real"] = decisions(real_py, prefix)
        row["ours"] = decisions(ours_py, prefix) if os.path.exists(ours_py) else {}
        rows.append(row)
        shutil.rmtree(work)
    print("| model (dir → HF) | category | template | generates | ruff | py_compile | lint errors | real targets also patched | rotary real/ours | MLP real/ours | norm real/ours | agree | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print("| %s → %s | | | error: %s | | | | | | | | | %.2f |" % (r["dir"], r["hf"], r["error"].replace("|", "/"), r["seconds"]))
            continue
        share = "%d/%d (%.0f%%)" % (r["shared_targets"], r["real_targets"], 100.0 * r["shared_targets"] / max(1, r["real_targets"]))
        cells = []
        agree = True
        for k in ("rotary", "mlp", "norm"):
            real, ours = r["real"][k], r["ours"].get(k, "?")
            cells.append("%s / %s" % (real, ours))
            # The real config decided only where it patches; "upstream" on
            # both sides (or the real one leaving it alone) is no conflict.
            if real != "upstream" and real != ours:
                agree = False
        yes = lambda b: "yes" if b else "**no**"
        print("| %s → %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f |" % (
            r["dir"], r["hf"], r["category"], r["template"], yes(r["generates"]), yes(r["ruff"]), yes(r["py_compile"]),
            lint_cell(r), share, cells[0], cells[1], cells[2], yes(agree), r["seconds"]))
    bad = [r for r in rows if "error" in r or not (r["generates"] and r["ruff"] and r["py_compile"])]
    for r in bad:
        print("\n<!-- %s: %s -->" % (r["dir"], r.get("error") or r.get("ruff_out")), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
