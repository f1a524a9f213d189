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

`rows TREE [DIR...]`: phase 6 leave-one-out. For each model with rows in the
test tables today, in a copy of the tree without its directory, toy config,
rows and converter test group (all found with python3's `ast`,
scripts/new_rows_check.py), run `patchgen new <hf>` (default template, the
sibling) and compare the rows written with the real ones in the model's own
fields (toy path, class, ids, is_moe); check every touched test file parses,
passes ruff (check and format) and has only added lines.

`rows-new-models TREE MODEL...`: the same checks for models VeOmni does not
ship, plus `patchgen lint --select PG503` naming the new model.

`fidelity TREE WHEEL MODEL...`: `patchgen new MODEL` in a fresh copy per
model, then, independently of the Rust code (python's `ast`,
tests/oracle/sameness.py, and `git merge-file`): every patch `new` reuses
passes the sameness test (the template's upstream target renamed by the
reuse's name_map has the new target's code, docstrings aside); every patch
it ported equals `git merge-file --diff3` of (the template's patch, the
template's upstream target, the new upstream target; the targets without
docstrings and decorators, as `port` merges them; where both sides changed
the signature, the signature merged parameter by parameter as `port` does
and the bodies by git) when that merge is clean — compared as code
(`ast.unparse`, docstrings stripped, PG301's fix aside) — or is listed for
review (and then keeps the patch's side of each conflict); granite's generated
`GraniteForCausalLM.forward` keeps `logits_scaling` or is listed for review;
`patchgen lint` on the scaffold's config reports nothing.

usage: PATCHGEN=target/release/patchgen RUFF=.../ruff \\
       PYTHONPATH=/path/transformers-X-py3-none-any.whl \\
       scripts/new-acceptance.py leave-one-out|new-models TREE [MODEL...|DIR...] > table.md
"""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import difflib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import new_rows_check as rc  # noqa: E402


def yes(b):
    return "yes" if b else "**no**"


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
    if mode == "fidelity":
        return fidelity(tree, sys.argv[3], sys.argv[4:], patchgen)
    if mode == "new-models":
        return new_models(tree, sys.argv[3:], patchgen, ruff)
    if mode == "rows":
        return rows_leave_one_out(tree, patchgen, ruff, sys.argv[3:])
    if mode == "rows-new-models":
        return rows_new_models(tree, sys.argv[3:], patchgen, ruff)
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
            print("| %s → %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f |" % (
            r["dir"], r["hf"], r["category"], r["template"], yes(r["generates"]), yes(r["ruff"]), yes(r["py_compile"]),
            lint_cell(r), share, cells[0], cells[1], cells[2], yes(agree), r["seconds"]))
    bad = [r for r in rows if "error" in r or not (r["generates"] and r["ruff"] and r["py_compile"])]
    for r in bad:
        print("\n<!-- %s: %s -->" % (r["dir"], r.get("error") or r.get("ruff_out")), file=sys.stderr)
    return 1 if bad else 0


def squash(s):
    return s.replace("_", "")


def registered_keys(init_path):
    try:
        return re.findall(r'\.register\(\s*"([^"]+)"', open(init_path).read())
    except OSError:
        return []


def toy_dirs(tree, keys, names):
    out = []
    root = os.path.join(tree, "tests/toy_config")
    for d in sorted(os.listdir(root)):
        try:
            mt = json.load(open(os.path.join(root, d, "config.json"))).get("model_type")
        except (OSError, ValueError):
            mt = None
        if mt in keys or any(d in (n + "_toy", squash(n) + "_toy") for n in names):
            out.append(d)
    return out


def model_names(tree):
    """{dir: (hf, names, toys, is_moe_dir)} of the tree's models with a GPU config."""
    root = os.path.join(tree, "veomni/models/transformers")
    out = {}
    for d in sorted(os.listdir(root)):
        path = os.path.join(root, d)
        gpu = [f for f in os.listdir(path) if f.endswith("_gpu_patch_gen_config.py")] if os.path.isdir(path) else []
        if not gpu:
            continue
        hf = source_module(os.path.join(path, gpu[0]))
        keys = registered_keys(os.path.join(path, "__init__.py")) or [hf]
        base = [hf, d] + keys
        names = list(dict.fromkeys(base + [squash(n) for n in base]))
        out[d] = (hf, names, toy_dirs(tree, keys, [hf, d]))
    return out


def ruff_ok(copy, rel, ruff):
    check = subprocess.run([ruff, "check", "--quiet", rel], cwd=copy, capture_output=True, text=True)
    fmt = subprocess.run([ruff, "format", "--check", "--quiet", rel], cwd=copy, capture_output=True, text=True)
    return check.returncode == 0 and fmt.returncode == 0


def file_checks(copy, before, ruff, baseline=None):
    """Per touched table file: (parses, ruff check+format, only added lines).
    A file ruff already rejected before `new` (`baseline`: the left-out
    copy, where removing rows can leave an empty list) counts as None."""
    out = {}
    for rel, old in before.items():
        path = os.path.join(copy, rel)
        new = open(path).read()
        if new == old:
            continue
        try:
            ast.parse(new)
            parses = True
        except SyntaxError:
            parses = False
        ok = ruff_ok(copy, rel, ruff)
        if not ok and baseline is not None and not baseline.get(rel, True):
            ok = None
        diff = [line for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
                if line.startswith("-") and not line.startswith("---")]
        out[rel] = (parses, ok, not diff)
    return out


def compare(real, ours):
    """Agreement of one table's rows in the model's own fields."""
    cell = {}
    for k in ("toy", "class", "id", "is_moe"):
        rv = sorted({json.dumps(f[k]) for f in real})
        ov = sorted({json.dumps(f[k]) for f in ours})
        cell[k] = rv == ov
    return cell


def toy_key(paths, toys):
    """Toy paths with the toy directory itself replaced (the directory name
    `new` writes is `<hf>_toy`; VeOmni's are named freely)."""
    return [json.dumps([re.sub("|".join(map(re.escape, toys)) or "$^", "<toy>", p) for p in json.loads(x)]) for x in paths]


def table_texts(copy, edit=None):
    """{file: text} of the table files in `copy`, each first rewritten by `edit(rel, text)`."""
    out = {}
    for rel in rc.TABLE_FILES + ["tests/models/test_checkpoint_tensor_converter.py"]:
        path = os.path.join(copy, rel)
        if os.path.exists(path):
            text = open(path).read()
            if edit is not None:
                text = edit(rel, text)
                open(path, "w").write(text)
            out[rel] = text
    return out


def new_json(copy, hf, patchgen):
    """`patchgen new hf --format json` in `copy`: ({hf, seconds[, error]}, report or None)."""
    t0 = time.perf_counter()
    p = subprocess.run([patchgen, "new", hf, "--format", "json"], cwd=copy, capture_output=True, text=True)
    r = {"hf": hf, "seconds": time.perf_counter() - t0}
    try:
        return r, json.loads(p.stdout)
    except ValueError:
        r["error"] = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[0]
        return r, None


def rows_leave_one_out(tree, patchgen, ruff, only=()):
    models = model_names(tree)
    all_names = sorted({n for (_, names, _) in models.values() for n in names})
    results = []
    for d, (hf, names, toys) in models.items():
        if only and d not in only:
            continue
        real = {}
        for rel in rc.TABLE_FILES:
            path = os.path.join(tree, rel)
            if os.path.exists(path):
                rows = rc.rows_of(open(path).read(), toys, names, all_names)
                if rows:
                    real[rel] = rows
        conv_path = os.path.join(tree, "tests/models/test_checkpoint_tensor_converter.py")
        real_group = rc.converter_group(open(conv_path).read(), d)[0] is not None if os.path.exists(conv_path) else False
        if not real and not real_group:
            continue
        work = tempfile.mkdtemp(prefix="rows-")
        copy = os.path.join(work, "tree")
        shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.rmtree(os.path.join(copy, "veomni/models/transformers", d))
        for t in toys:
            shutil.rmtree(os.path.join(copy, "tests/toy_config", t), ignore_errors=True)
        def leave_out(rel, text, d=d, toys=toys, names=names):
            text = rc.remove_rows(text, toys, names, all_names)
            return rc.remove_converter_group(text, d) if rel.endswith("test_checkpoint_tensor_converter.py") else text

        before = table_texts(copy, leave_out)
        baseline = {rel: ruff_ok(copy, rel, ruff) for rel in before}
        r, report = new_json(copy, hf, patchgen)
        r.update({"dir": d, "tables": {}})
        if report is None:
            results.append(r)
            shutil.rmtree(work)
            continue
        r["template"] = report.get("template")
        r["category"] = report.get("category")
        new_toys = [hf + "_toy"]
        new_names = list(dict.fromkeys([hf, squash(hf)] + names))
        for rel in rc.TABLE_FILES:
            path = os.path.join(copy, rel)
            if not os.path.exists(path):
                continue
            ours = rc.rows_of(open(path).read(), new_toys, new_names, all_names)
            tables = sorted({t for t, *_ in real.get(rel, [])} | {t for t, *_ in ours})
            for t in tables:
                rf = [f for tt, _, _, f in real.get(rel, []) if tt == t]
                of = [f for tt, _, _, f in ours if tt == t]
                cell = compare(rf, of)
                cell["toy_dir"] = toy_key([json.dumps(f["toy"]) for f in rf], toys) == toy_key([json.dumps(f["toy"]) for f in of], new_toys)
                r["tables"][(rel, t)] = (len(rf), len(of), cell)
        if os.path.exists(os.path.join(copy, "tests/models/test_checkpoint_tensor_converter.py")):
            ours_group = rc.converter_group(open(os.path.join(copy, "tests/models/test_checkpoint_tensor_converter.py")).read(), hf)[0] is not None
            r["group"] = (real_group, ours_group)
        r["files"] = file_checks(copy, before, ruff, baseline)
        results.append(r)
        shutil.rmtree(work)
    print("| model (dir → HF) | sibling | table | real rows | written | toy path (dir name aside) | class | ids | is_moe |")
    print("|---|---|---|---|---|---|---|---|---|")
    agg = {}
    for r in results:
        if "error" in r:
            print("| %s → %s | error: %s | | | | | | | |" % (r["dir"], r["hf"], r["error"].replace("|", "/")))
            continue
        for (rel, t), (nr, no, c) in sorted(r["tables"].items()):
            short = "%s `%s`" % (os.path.basename(rel), t)
            if nr == 0 and no == 0:
                continue
            both = nr > 0 and no > 0

            def fmt(k, c=c, both=both):
                return yes(c[k]) if both else "–"

            toy = ("yes" if c["toy"] else ("yes (%s)" % "dir name differs" if c["toy_dir"] else "**no**")) if both else "–"
            print("| %s → %s | %s | %s | %d | %d | %s | %s | %s | %s |" % (
                r["dir"], r["hf"], r["template"], short, nr, no, toy, fmt("class"), fmt("id"), fmt("is_moe")))
            a = agg.setdefault(short, {"real": 0, "written": 0, "both": 0, "toy": 0, "toy_dir": 0, "class": 0, "id": 0, "is_moe": 0})
            a["real"] += nr > 0
            a["written"] += no > 0
            if both:
                a["both"] += 1
                for k in ("toy", "toy_dir", "class", "id", "is_moe"):
                    a[k] += c[k]
        if "group" in r and any(r["group"]):
            print("| %s → %s | %s | converter test group | %s | %s | | | | |" % (
                r["dir"], r["hf"], r["template"], "yes" if r["group"][0] else "no", "yes" if r["group"][1] else "no"))
    print()
    print("| table | models with real rows | models given rows | both | toy path | toy path (dir name aside) | class | ids | is_moe |")
    print("|---|---|---|---|---|---|---|---|---|")
    for short, a in sorted(agg.items()):
        n = a["both"]
        print("| %s | %d | %d | %d | %d/%d | %d/%d | %d/%d | %d/%d | %d/%d |" % (
            short, a["real"], a["written"], n, a["toy"], n, a["toy_dir"], n, a["class"], n, a["id"], n, a["is_moe"], n))
    print()
    bad = []
    for r in results:
        for rel, (parses, ruff_pass, added) in r.get("files", {}).items():
            if not (parses and ruff_pass is not False and added):
                bad.append((r["dir"], rel, parses, ruff_pass, added))
    touched = sum(len(r.get("files", {})) for r in results)
    unclean = sum(1 for r in results for x in r.get("files", {}).values() if x[1] is None)
    print("Touched test files: %d; parse, ruff (check + format) and only added lines: %d/%d "
          "(ruff not counted for %d file(s) the left-out copy already fails: removing the model's rows left an empty "
          "list or extra blank lines)." % (touched, touched - len(bad), touched, unclean))
    for b in bad:
        print("- %s %s: parses %s, ruff %s, only added %s" % b)
    return 1 if bad or any("error" in r for r in results) else 0


def rows_new_models(tree, models, patchgen, ruff):
    rows = []
    for hf in models:
        work = tempfile.mkdtemp(prefix="rowsm-")
        copy = os.path.join(work, "tree")
        shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        before = table_texts(copy)
        r, report = new_json(copy, hf, patchgen)
        if report is None:
            rows.append(r)
            shutil.rmtree(work)
            continue
        tr = report.get("test_rows") or {}
        r["template"] = report.get("template")
        r["category"] = report.get("category")
        r["rows"] = sum(len(t["rows"]) for f in tr.get("files", []) for t in f["tables"])
        r["todos"] = sum(len(x.get("todos", [])) for f in tr.get("files", []) for t in f["tables"] for x in t["rows"])
        r["files"] = file_checks(copy, before, ruff)
        lint = subprocess.run([patchgen, "lint", "--select", "PG503", "--format", "json"], cwd=copy, capture_output=True, text=True)
        try:
            diags = json.loads(lint.stdout).get("diagnostics", [])
        except ValueError:
            diags = None
        keys = registered_keys(os.path.join(copy, "veomni/models/transformers", hf, "__init__.py")) or [hf]
        r["pg503"] = None if diags is None else [d["message"] for d in diags if any("`%s`" % k in d["message"] for k in keys)]
        rows.append(r)
        shutil.rmtree(work)
    print("| model | category | template | test files touched | rows | TODOs | parse | ruff (check + format) | only added lines | PG503 for the model |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for r in rows:
        if "error" in r:
            print("| %s | error: %s | | | | | | | | |" % (r["hf"], r["error"].replace("|", "/")))
            bad += 1
            continue
        f = r["files"].values()
        ok = [all(x[i] for x in f) for i in range(3)]
        pg = "not run" if r["pg503"] is None else ("none" if not r["pg503"] else "**" + "; ".join(r["pg503"]) + "**")
        bad += (not all(ok)) or (r["pg503"] != [])
        print("| %s | %s | %s | %d | %d | %d | %s | %s | %s | %s |" % (
            r["hf"], r["category"], r["template"], len(r["files"]), r["rows"], r["todos"], yes(ok[0]), yes(ok[1]), yes(ok[2]), pg))
    return 1 if bad else 0




sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oracle"))
import sameness as same  # noqa: E402


def _wheel_source(zf, module):
    try:
        return zf.read(module.replace(".", "/") + ".py").decode()
    except KeyError:
        return None


def _config_def(path, name):
    """The text of `def name` in a config file, dedented, and its decorators' target."""
    src = open(path).read()
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and n.name == name:
            return "".join(lines[n.lineno - 1 : n.end_lineno])
    return None


def _code(text, rename_def=None):
    """Code of a function text for comparison: docstrings stripped, PG301's fix
    aside (its slice lines, and the later `hidden_states[:, slice_indices, :]`
    it writes `hidden_states`)."""
    text = text.replace("hidden_states[:, slice_indices, :]", "hidden_states")
    t = same.strip_docstrings(ast.parse(text))
    if rename_def:
        for n in t.body:
            if isinstance(n, ast.FunctionDef):
                n.name = rename_def
                n.decorator_list = []
    out = ast.unparse(t).splitlines()
    return [l for l in out if "slice_indices" not in l and l.strip() != "hidden_states = hidden_states"]


def _git_merge(ours, base, theirs):
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = os.path.join(d, name)
            open(p, "w").write(text)
            paths.append(p)
        r = subprocess.run(["git", "merge-file", "-p", "--diff3", *paths], capture_output=True, text=True)
        return r.stdout, r.returncode


def _upstream_def(text):
    """A target as `port` merges it: docstrings removed (lines), decorators and
    the comments above the `def` held out."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    drop = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body \
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant) \
                and isinstance(n.body[0].value.value, str):
            drop.update(range(n.body[0].lineno, n.body[0].end_lineno + 1))
    first = tree.body[0].lineno
    return "".join(line for i, line in enumerate(lines, 1) if i >= first and i not in drop)


def _sig_len(lines):
    bal = 0
    for i, line in enumerate(lines):
        bal += line.count("(") - line.count(")") + line.count("[") - line.count("]")
        if bal == 0 and line.rstrip().endswith(":"):
            return i + 1
    return None


def _params(sig):
    f = ast.parse(sig + "    pass\n").body[0]
    a = f.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)

    def one(arg, d, star=""):
        s = star + arg.arg + (": " + ast.unparse(arg.annotation) if arg.annotation else "")
        return arg.arg, s + ("" if d is None else (" = " if arg.annotation else "=") + ast.unparse(d))

    out = [one(x, d) for x, d in zip(pos, defaults)]
    if a.vararg:
        out.append(one(a.vararg, None, "*"))
    elif a.kwonlyargs:
        out.append(("*", "*"))
    out += [one(x, d) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append(one(a.kwarg, None, "**"))
    return f.name, out, ast.unparse(f.returns) if f.returns else None


def _merge_signature(base, ours, theirs):
    """Parameters keyed by name, each side's change taken where the other kept
    the base's (patchgen_core::port::signature); None: a conflict."""
    name, b, b_ret = _params(base)
    _, o, o_ret = _params(ours)
    _, t, t_ret = _params(theirs)
    bd, od, td = dict(b), dict(o), dict(t)

    def pick(bv, ov, tv):
        return tv if ov in (bv, tv) else ov if tv == bv else False

    out = []
    for k, ov in o:
        if k in bd and k in td:
            v = pick(bd[k], ov, td[k])
            if v is False:
                return None
            out.append((k, v))
        elif k in bd:
            if ov != bd[k]:
                return None
        elif k in td and td[k] != ov:
            return None
        else:
            out.append((k, ov))
    for i, (k, tv) in enumerate(t):
        if k in bd or k in od:
            if k in bd and k not in od and bd[k] != tv:
                return None
            continue
        names = [n for n, _ in out]
        after = next((names.index(p) for p, _ in reversed(t[:i]) if p in names), None)
        out.insert(0 if after is None else after + 1, (k, tv))
    ret = pick(b_ret, o_ret, t_ret)
    if ret is False:
        return None
    return "def %s(%s)%s:\n" % (name, ", ".join(v for _, v in out), " -> %s" % ret if ret else "")


def _port_oracle(ours, base, theirs):
    """`git merge-file --diff3` of the three, but where both sides changed the
    signature, the signature merged parameter by parameter and the bodies by
    git (as `port` does). (merged text, conflicts)."""
    o, b, t = (x.splitlines(keepends=True) for x in (ours, base, theirs))
    no, nb, nt = _sig_len(o), _sig_len(b), _sig_len(t)
    if None not in (no, nb, nt) and b[:nb] != o[:no] and b[:nb] != t[:nt]:
        sig = _merge_signature("".join(b[:nb]), "".join(o[:no]), "".join(t[:nt]))
        body, conflicts = _git_merge("".join(o[no:]), "".join(b[nb:]), "".join(t[nt:]))
        if sig is None:
            return "<<<<<<< ours\n" + "".join(o[:no]) + ">>>>>>> signature\n" + body, conflicts + 1
        return sig + body, conflicts
    return _git_merge(ours, base, theirs)


def _ours_at_conflicts(merged):
    """A merge's text with each conflict resolved to the patch's side."""
    out, side = [], None
    for line in merged.splitlines(keepends=True):
        if line.startswith("<<<<<<<"):
            side = "ours"
        elif line.startswith("|||||||") and side:
            side = "base"
        elif line.startswith("=======") and side:
            side = "theirs"
        elif line.startswith(">>>>>>>") and side:
            side = None
        elif side in (None, "ours"):
            out.append(line)
    return "".join(out)


def _patch_as_target(src, patch_name, target_name):
    """A config's patch function as its upstream target would be: decorators and
    leading comments dropped, the def renamed (what the port merges)."""
    tree = ast.parse(src)
    f = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    lines = src.splitlines(keepends=True)
    body = "".join(lines[f.lineno - 1 : f.end_lineno])
    return body.replace("def %s(" % patch_name, "def %s(" % target_name, 1)


def fidelity(tree, wheel, models, patchgen):
    import zipfile

    zf = zipfile.ZipFile(wheel)
    totals = {"models": 0, "reused": 0, "reused_same": 0, "ported": 0, "ported_clean_equal": 0, "ported_review": 0,
              "ported_bad": 0, "lint_clean": 0}
    print("| model | reused (same) | ported: clean = git / review / other | lint findings | note |")
    print("|---|---|---|---|---|")
    bad = 0
    for hf in models:
        work = tempfile.mkdtemp(prefix="newf-")
        copy = os.path.join(work, "tree")
        shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        p = subprocess.run([patchgen, "new", hf, "--format", "json"], cwd=copy, capture_output=True, text=True)
        if not p.stdout.strip().startswith("{"):
            print("| %s | error: %s | | | |" % (hf, (p.stderr.strip().splitlines() or ["?"])[0]))
            bad += 1
            continue
        report = json.loads(p.stdout)
        totals["models"] += 1
        b = report["backends"][0]
        config_path = os.path.join(copy, [f["path"] for f in report["files"] if f["path"].endswith("_gpu_patch_gen_config.py")][0]) \
            if not os.path.isabs(report["files"][0]["path"]) else [f["path"] for f in report["files"] if f["path"].endswith("_gpu_patch_gen_config.py")][0]
        template_module = b.get("template_config")
        template_path = os.path.join(copy, template_module.replace(".", "/") + ".py") if template_module else None
        new_src = _wheel_source(zf, "transformers.models.%s.modeling_%s" % (hf, hf))

        def upstream_of(config_module):
            # source_module() gives the model name (`qwen3`), not the module.
            m = source_module(os.path.join(copy, config_module.replace(".", "/") + ".py"))
            return _wheel_source(zf, "transformers.models.%s.modeling_%s" % (m, m)) if m else None

        old_src = upstream_of(template_module) if template_module else None
        reused = same_n = ported = clean_eq = review_n = other = 0
        notes = []
        review = "\n".join(report.get("review", []))
        for c in b["carried"]:
            is_class = c["patch_type"] == "replace_class"
            nm = [tuple(e) for e in c["name_map"]]
            old_target, src = c["template_target"], old_src
            if c.get("import_module") and c["import_module"] != template_module:
                # Another project config's patch (the `1 + weight` norm): its
                # own upstream target, the new target renamed back.
                src = upstream_of(c["import_module"])
                old_target = c["target"]
                for a, b_ in sorted(nm, key=lambda e: -len(e[1])):
                    old_target = old_target.replace(b_, a)
            old = src and same.target_text(src, old_target, is_class)
            new = new_src and same.target_text(new_src, c["target"], is_class)
            if not c.get("copy"):
                reused += 1
                if not old or not new:
                    same_n += 1  # injected, or inherited on both sides (GenericForSequenceClassification): nothing upstream to differ
                    continue
                if same.compare(same.rename(old[0], nm), new[0]) is None:
                    same_n += 1
                else:
                    notes.append("reused but differs: %s" % c["target"])
                continue
            if "ported" not in c["copy"]["note"]:
                continue  # a PG301 copy of a same reuse
            ported += 1
            listed = c["target"] in review
            tpl = _config_def(template_path, c["import_name"])
            target_name = c["target"].rsplit(".", 1)[-1]
            ours = same.rename(_patch_as_target(tpl, c["import_name"], target_name), nm)
            merged, conflicts = _port_oracle(ours, _upstream_def(same.rename(old[0], nm)), _upstream_def(new[0]))
            mine = _config_def(config_path, c["copy"]["name"])
            if listed:
                review_n += 1
                # The copy keeps the sibling's lines at each conflict.
                if conflicts == 0 or not mine or _code(_ours_at_conflicts(merged), target_name) != _code(mine, target_name):
                    notes.append("port of %s listed for review; git %s, the copy %s" % (
                        c["target"], "clean" if conflicts == 0 else "%d conflicts" % conflicts,
                        "differs from git's ours-side" if conflicts else "could have been clean"))
                continue
            if conflicts == 0 and mine and _code(merged, target_name) == _code(mine, target_name):
                clean_eq += 1
            else:
                other += 1
                notes.append("port of %s: git merge-file %s, ours %s" % (c["target"], "clean" if conflicts == 0 else "%d conflicts" % conflicts,
                                                                         "differs" if conflicts == 0 else "not listed for review"))
        if hf == "granite":
            gen = os.path.join(os.path.dirname(config_path), "generated", "patched_modeling_granite_gpu.py")
            text = open(gen).read() if os.path.exists(gen) else ""
            t = same.target_text(text, "GraniteForCausalLM.forward", False) if text else None
            kept = bool(t and "logits_scaling" in ast.unparse(ast.parse(t[0])))  # code, not a comment
            listed = "GraniteForCausalLM.forward" in review
            notes.append("GraniteForCausalLM.forward: logits_scaling %s%s" % ("kept" if kept else "LOST", ", listed for review" if listed else ""))
            if not (kept or listed):
                bad += 1
        lint = subprocess.run([patchgen, "lint", b["module"], "--format", "json", "--no-cache"], cwd=copy, capture_output=True, text=True)
        try:
            diags = json.loads(lint.stdout).get("diagnostics", [])
        except ValueError:
            diags = [{"code": "?", "message": lint.stderr[:200]}]
        if not diags:
            totals["lint_clean"] += 1
        else:
            notes.append("lint: " + "; ".join("%s %s" % (d["code"], d["message"][:120]) for d in diags[:3]))
        totals["reused"] += reused
        totals["reused_same"] += same_n
        totals["ported"] += ported
        totals["ported_clean_equal"] += clean_eq
        totals["ported_review"] += review_n
        totals["ported_bad"] += other
        if same_n != reused or other or diags:
            bad += 1
        print("| %s | %d (%d) | %d: %d / %d / %d | %d | %s |" % (hf, reused, same_n, ported, clean_eq, review_n, other, len(diags),
                                                            "; ".join(notes).replace("|", "/")))
        shutil.rmtree(work)
    print()
    print("totals: %s" % json.dumps(totals))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
