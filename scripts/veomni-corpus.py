#!/usr/bin/env python3
"""The VeOmni tree corpus: enumerate it, then compare two patchgen builds on it.

The corpus (docs/compatibility.md, "The VeOmni tree corpus"): among the
pull-request refs (`refs/pull/*/head`, `refs/pull/*/merge`) and the commits of
`main` since `cf92d240` in a VeOmni git mirror, every tree that has a
`*_patch_gen_config.py`, deduplicated by the content of its patchgen inputs:
the configs, the files of their `generated/` directories, every module under
`veomni/models/transformers/` they import (transitively, by a static reading
of their `import` / `from ... import` statements; a config's relative imports
resolved from its package and from its `generated/` package, where its code
is copied), and the settings (the `[tool.patchgen]` and `[tool.ruff]` tables
of `pyproject.toml`, a root `ruff.toml`). Two trees whose inputs are the same
blobs at the same paths are one tree.

usage:
  scripts/veomni-corpus.py list [--mirror GITDIR] [--since COMMIT] [--out FILE]
      Enumerate the corpus and write it to FILE (default: stdout), one tree a
      line: `<commit> <digest> <configs> <pg|-> <ref>[,<ref>...]` (`pg`: the
      tree has a [tool.patchgen] table; `-`: a tree from before
      patchgen-pkg). Deterministic: candidates are taken in a fixed order
      (main's commits oldest first, then the pull refs by number, head before
      merge); a tree's first candidate names it and its commit is the one
      extracted; every ref with the same inputs follows it.
  scripts/veomni-corpus.py run --old BIN --new BIN [--list FILE] [--mirror GITDIR]
                               [--add-section] [--warm] [--keep DIR] [--work DIR]
                               [--only COMMIT|REF...]
      For every tree of the list (default docs/veomni-corpus.txt): `git
      archive` it into a scratch directory (under /dev/shm when writable),
      run `BIN --check` from its root with each binary (ruff and the
      transformers wheel as /work/shared/tools/veomni-check sets them up) and
      compare exit code, the per-config verdict lines (OK/DRIFT/FAIL/SKIP and
      what they name), the rest of stdout (drift diffs, failure text) and
      stderr, after replacing the tree's path with <tree> and removing
      timings. Warnings that say the same in the first release's form and in
      the coded diagnostics' form (issue 11) agree, and so do the FAILs of
      the same configs shown also as located PGE diagnostics with an excerpt.
        --add-section  a tree from before patchgen-pkg stops both binaries at
                       the missing [tool.patchgen] table (exit 2; only the new
                       binary names the values): append the table the new
                       binary suggests and compare again
        --warm         run the new binary a second time (its cache now warm)
                       and compare that run too
        --keep DIR     keep the normalised outputs of the trees that differ
      One line per tree, then a summary. Exit 0 when every tree agrees.

env (run):
  RUFF            ruff 0.13.2 (default: $PATCHGEN_CACHE/ruff-0.13.2/bin/ruff)
  TRANSFORMERS    transformers source for PYTHONPATH, a directory or a wheel
                  (default: $PATCHGEN_CACHE/wheels/transformers-5.9.0-py3-none-any.whl,
                  else $PATCHGEN_CACHE/transformers-5.9.0)
  PATCHGEN_CACHE  default /work/main/.cache

Standard library only. The list holds refs and commit ids only.
"""

import argparse
import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEFAULT_MIRROR = "/work/.mirror/ByteDance-Seed+VeOmni/repo"
DEFAULT_SINCE = "cf92d240"
MODELS_DIR = "veomni/models/transformers"
MODELS_PKG = "veomni.models.transformers"
CONFIG_SUFFIX = "_patch_gen_config.py"
# Where patchgen and ruff read their settings (at the tree root).
SETTINGS_FILES = ("pyproject.toml", "ruff.toml", ".ruff.toml")


# ---------------------------------------------------------------- git access


class Git:
    """A mirror, read with one long-lived `git cat-file --batch`."""

    def __init__(self, gitdir):
        self.gitdir = gitdir
        self._cat = subprocess.Popen(
            ["git", "--git-dir", gitdir, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def run(self, *args):
        return subprocess.run(
            ["git", "--git-dir", self.gitdir, *args], check=True, capture_output=True, text=True
        ).stdout

    def blob(self, sha):
        self._cat.stdin.write(sha.encode() + b"\n")
        self._cat.stdin.flush()
        header = self._cat.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            raise SystemExit(f"veomni-corpus: object {sha} missing from {self.gitdir}")
        size = int(header[2])
        data = self._cat.stdout.read(size)
        self._cat.stdout.read(1)
        return data

    def tree(self, commit):
        """{path: blob sha} of the files under MODELS_DIR and of the
        settings files at the root, at commit."""
        out = self.run("ls-tree", "-r", "--full-tree", commit, "--", MODELS_DIR, *SETTINGS_FILES)
        files = {}
        for line in out.splitlines():
            meta, path = line.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob":
                files[path] = sha
        return files


# ------------------------------------------------------------ the candidates


def candidates(git, since):
    """(ref name, commit) in the fixed order: main since `since`, oldest first;
    then refs/pull/N/head and refs/pull/N/merge by N."""
    out = []
    for c in git.run("rev-list", "--reverse", "--topo-order", f"{since}^..refs/heads/main").split():
        out.append((f"main@{c[:8]}", c))
    pulls = []
    for line in git.run(
        "for-each-ref", "--format=%(refname) %(objectname)", "refs/pull/*/head", "refs/pull/*/merge"
    ).splitlines():
        ref, sha = line.split()
        m = re.fullmatch(r"refs/pull/(\d+)/(head|merge)", ref)
        if m:
            pulls.append(((int(m.group(1)), m.group(2) == "merge"), ref, sha))
    pulls.sort()
    out += [(ref, sha) for _, ref, sha in pulls]
    return out


# ---------------------------------------------------------------- the inputs


def imported_modules(source, packages):
    """Absolute dotted names a module imports (static: every Import/ImportFrom
    in the file, at any depth), a relative import resolved from each of
    `packages`. For `from X import a`, both `X` and `X.a` (a may be a
    submodule)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mods = []
            if node.level:
                for package in packages:
                    parts = package.split(".")
                    if node.level - 1 < len(parts):
                        base = parts[: len(parts) - (node.level - 1)]
                        mods.append(".".join(base + ([node.module] if node.module else [])))
            else:
                mods.append(node.module or "")
            for mod in mods:
                names.add(mod)
                names.update(f"{mod}.{a.name}" for a in node.names if a.name != "*")
    return names


def module_path(name, files):
    """The file under MODELS_DIR a dotted name stands for, if any."""
    if name != MODELS_PKG and not name.startswith(MODELS_PKG + "."):
        return None
    rel = name.replace(".", "/")
    for path in (rel + ".py", rel + "/__init__.py"):
        if path in files:
            return path
    return None


class Inputs:
    """The patchgen inputs of a tree, with a per-blob cache of imports."""

    def __init__(self, git):
        self.git = git
        self._imports = {}

    def imports_of(self, path, sha):
        key = (path, sha)
        if key not in self._imports:
            package = os.path.dirname(path).replace("/", ".")
            # A config's code is copied into generated/: its relative imports
            # run from there too.
            packages = [package, package + ".generated"] if path.endswith(CONFIG_SUFFIX) else [package]
            self._imports[key] = imported_modules(self.git.blob(sha), packages)
        return self._imports[key]

    def of(self, files):
        """{path: blob sha} of the inputs, or None without a config."""
        configs = sorted(p for p in files if p.endswith(CONFIG_SUFFIX))
        if not configs:
            return None
        picked = set(configs)
        for c in configs:
            gen = os.path.dirname(c) + "/generated/"
            picked.update(p for p in files if p.startswith(gen))
        todo = list(configs)
        seen = set(configs)
        while todo:
            path = todo.pop()
            for name in self.imports_of(path, files[path]):
                dep = module_path(name, files)
                if dep and dep not in seen:
                    seen.add(dep)
                    picked.add(dep)
                    todo.append(dep)
        inputs = {p: files[p] for p in sorted(picked)}
        # The settings: [tool.patchgen] and ruff's. Only those sections of
        # pyproject.toml count (a new dependency changes nothing).
        for name in SETTINGS_FILES[1:]:
            if name in files:
                inputs[name] = files[name]
        if "pyproject.toml" in files:
            text = settings_sections(self.git.blob(files["pyproject.toml"]).decode("utf-8", "replace"))
            inputs["pyproject.toml[tool.patchgen,tool.ruff]"] = hashlib.sha1(text.encode()).hexdigest()
        return inputs


def settings_sections(pyproject):
    """The `[tool.patchgen*]` and `[tool.ruff*]` tables of a pyproject.toml, as text."""
    keep = False
    out = []
    for line in pyproject.splitlines():
        m = re.match(r"^\s*\[\[?\s*([^\]]+?)\s*\]", line)
        if m:
            name = m.group(1).replace('"', "")
            keep = name.split(".")[:2] in (["tool", "patchgen"], ["tool", "ruff"])
        if keep:
            out.append(line)
    return "\n".join(out)


def has_patchgen_section(git, files):
    if "pyproject.toml" not in files:
        return False
    text = git.blob(files["pyproject.toml"]).decode("utf-8", "replace")
    return re.search(r"(?m)^\s*\[tool\.patchgen\]", text) is not None


def digest(inputs):
    h = hashlib.sha256()
    for path, sha in sorted(inputs.items()):
        h.update(f"{path}\0{sha}\n".encode())
    return h.hexdigest()[:16]


def enumerate_corpus(git, since):
    """[(commit, digest, [refs], configs, "pg" or "-")] in first-seen order
    ("pg": the tree's pyproject.toml has a [tool.patchgen] table)."""
    inputs = Inputs(git)
    trees = {}
    order = []
    by_commit = {}
    for ref, commit in candidates(git, since):
        if commit not in by_commit:
            files = git.tree(commit)
            found = inputs.of(files)
            by_commit[commit] = (
                None
                if found is None
                else (
                    digest(found),
                    sum(p.endswith(CONFIG_SUFFIX) for p in found),
                    "pg" if has_patchgen_section(git, files) else "-",
                )
            )
        got = by_commit[commit]
        if got is None:
            continue
        d, n, pg = got
        if d not in trees:
            trees[d] = [commit, d, [], n, pg]
            order.append(d)
        trees[d][2].append(ref)
    return [trees[d] for d in order]


def cmd_list(args):
    git = Git(args.mirror)
    corpus = enumerate_corpus(git, args.since)
    lines = [
        "# VeOmni tree corpus: scripts/veomni-corpus.py list (docs/compatibility.md)",
        f"# mirror main: {git.run('rev-parse', 'refs/heads/main').strip()}, since {args.since}",
        f"# {len(corpus)} trees, {sum(t[4] == 'pg' for t in corpus)} with a [tool.patchgen] table (pg)",
        "# <commit> <input digest> <configs> <pg|-> <ref>[,<ref>...] (main@X: a commit of main)",
    ]
    for commit, d, refs, n, pg in corpus:
        lines.append(f"{commit} {d} {n} {pg} {','.join(refs)}")
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        print(f"veomni-corpus: {len(corpus)} trees written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)


# ------------------------------------------------------------------ the run

TIMING = re.compile(r" ?\(\d+(?:\.\d+)? ?(?:ms|s)\)")
VERDICT = re.compile(r"^\s+(OK|DRIFT|FAIL|SKIP|FIXED)\s+(.*)$")


def read_list(path):
    """[(commit, digest, configs, [refs])] from a list file."""
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            commit, d, n, _pg, refs = line.split()
            out.append((commit, d, int(n), refs.split(",")))
    return out


def normalise(text, tree):
    """Output without the tree's location and without timings."""
    text = text.replace(tree, "<tree>")
    return "\n".join(TIMING.sub("", line).rstrip() for line in text.splitlines())


def verdicts(stdout):
    """[(module, verdict, what)] of a --check output: one entry per verdict
    line, `what` the path (OK/DRIFT/FIXED) or the message's first line."""
    out = []
    module = None
    for line in stdout.splitlines():
        m = re.match(r"^\[([\w.]+)\]$", line)
        if m:
            module = m.group(1)
            continue
        m = VERDICT.match(line)
        if m and module:
            out.append((module, m.group(1), m.group(2).strip()))
    return out


OLD_WARNING = re.compile(r"^\s*warning: (?:<tree>/)?(\S+?):(\d+): (.*)$")
NEW_WARNING = re.compile(r"^(?:<tree>/)?(\S+?):(\d+):\d+: PG[WI]\d+ (.*?)(?: \[[\w.]+\])?$")


def warnings(stderr):
    """The sorted (file, line, message) of the warnings in a --check's stderr,
    in either form: the first release's `warning: FILE:LINE: MESSAGE` or the
    coded diagnostics' `FILE:LINE:COL: PGWnnn MESSAGE [module]` (issue 11)."""
    out = []
    for line in stderr.splitlines():
        m = OLD_WARNING.match(line) or NEW_WARNING.match(line)
        if m:
            out.append((m.group(1), int(m.group(2)), m.group(3)))
    return sorted(out)


FAILURE = re.compile(r"^(?:<tree>/)?\S+?:\d+:\d+: PGE\d{3} .* \[([\w.]+)\]$")
EXCERPT = re.compile(r"^(?:\s*\d*\s*\||\.\.\.\s+\||\s+= help: )")


def without_failures(stderr):
    """`stderr` without the located failure diagnostics (issue 11: a FAIL
    that points into a file is also shown with its source excerpt), and the
    config modules they name."""
    kept, modules = [], []
    lines = stderr.splitlines()
    i = 0
    while i < len(lines):
        m = FAILURE.match(lines[i])
        if m:
            modules.append(m.group(1))
            i += 1
            while i < len(lines) and EXCERPT.match(lines[i]):
                i += 1
            continue
        kept.append(lines[i])
        i += 1
    return "\n".join(kept), modules


def check(binary, tree, env):
    p = subprocess.run([binary, "--check"], cwd=tree, env=env, capture_output=True, text=True)
    return {
        "exit": p.returncode,
        "stdout": normalise(p.stdout, tree),
        "stderr": normalise(p.stderr, tree),
        "verdicts": verdicts(normalise(p.stdout, tree)),
    }


def summary(r):
    counts = {}
    for _, v, _ in r["verdicts"]:
        counts[v] = counts.get(v, 0) + 1
    parts = [f"{v} {counts[v]}" for v in ("OK", "DRIFT", "FAIL", "SKIP") if v in counts]
    if not parts:
        first = (r["stdout"] or r["stderr"]).strip().splitlines()
        parts = [first[0][:70] if first else "no output"]
    return f"exit {r['exit']}, " + ", ".join(parts)


def compare(a, b):
    """What differs between two results, most serious first ([] = agree)."""
    diffs = []
    if a["exit"] != b["exit"]:
        diffs.append("exit")
    if a["verdicts"] != b["verdicts"]:
        diffs.append("verdicts")
    if a["stdout"] != b["stdout"]:
        diffs.append("text")
    if a["stderr"] != b["stderr"]:
        # The warnings' form changed in issue 11 (coded diagnostics with a
        # source excerpt); what they say must not.
        same = warnings(a["stderr"]) == warnings(b["stderr"]) != []
        # A config that FAILs (the same verdict in both) may also be shown
        # located, with its source; nothing else may change.
        rest_a, _ = without_failures(a["stderr"])
        rest_b, failed = without_failures(b["stderr"])
        fails = {m for m, v, _ in b["verdicts"] if v == "FAIL"}
        located = failed != [] and set(failed) <= fails and (rest_a.strip() == rest_b.strip() or same)
        diffs.append("stderr-form" if same or located else "stderr")
    return diffs


def suggested_section(stderr):
    """The `[tool.patchgen]` table the new binary's error suggests for a tree
    from before patchgen-pkg, or None."""
    if "from before patchgen-pkg" not in stderr:
        return None
    lines = stderr.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "[tool.patchgen]")
    except StopIteration:
        return None
    table = ["[tool.patchgen]"]
    for line in lines[start + 1 :]:
        if not re.match(r'^\s+[\w-]+ = "[^"]*"$', line):
            break
        table.append(line.strip())
    return "\n".join(table) + "\n"


def transformers_path(cache):
    env = os.environ.get("TRANSFORMERS")
    if env:
        return env
    wheel = os.path.join(cache, "wheels", "transformers-5.9.0-py3-none-any.whl")
    return wheel if os.path.exists(wheel) else os.path.join(cache, "transformers-5.9.0")


def cmd_run(args):
    corpus = read_list(args.list)
    if args.only:
        corpus = [t for t in corpus if any(t[0].startswith(o) or o in t[3] for o in args.only)]
    cache = os.environ.get("PATCHGEN_CACHE", "/work/main/.cache")
    ruff = os.environ.get("RUFF", os.path.join(cache, "ruff-0.13.2", "bin", "ruff"))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(ruff)) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = transformers_path(cache)
    # Nothing of the caller's patchgen settings (output format, cache place):
    # each binary runs on its defaults and the tree's own table.
    for key in [k for k in env if k.startswith("PATCHGEN_")]:
        del env[key]
    old, new = os.path.abspath(args.old), os.path.abspath(args.new)
    base = args.work or ("/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    work = tempfile.mkdtemp(prefix="veomni-corpus-", dir=base)
    agree = 0
    tabled = 0
    reworded = 0
    differ = []
    try:
        for i, (commit, d, n, refs) in enumerate(corpus, 1):
            tree = os.path.join(work, commit[:12])
            os.makedirs(tree)
            archive = subprocess.Popen(["git", "--git-dir", args.mirror, "archive", commit], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", tree], stdin=archive.stdout, check=True)
            archive.wait()
            a = check(old, tree, env)
            b = check(new, tree, env)
            diffs = compare(a, b)
            section = args.add_section and suggested_section(b["stderr"])
            if section:
                # A tree from before patchgen-pkg: the plain runs end at the
                # missing table (exit 2, only the new binary names the values);
                # add the table the new binary suggests and compare again.
                plain = [f"plain:{x}" for x in diffs]
                with open(os.path.join(tree, "pyproject.toml"), "a") as f:
                    f.write("\n" + section)
                a = check(old, tree, env)
                b = check(new, tree, env)
                diffs = plain + compare(a, b)
            if args.warm:
                c = check(new, tree, env)
                if compare(b, c):
                    diffs.append("warm:" + "+".join(compare(b, c)))
            name = refs[0]
            if section:
                name += " (+table)"
            if "stderr-form" in diffs:
                # Expected: the same warnings, in the diagnostics' form.
                diffs.remove("stderr-form")
                reworded += 1
            if "plain:stderr" in diffs:
                # Expected: only the new binary names the table's values.
                diffs.remove("plain:stderr")
                tabled += 1
            if diffs:
                differ.append((commit, name, diffs))
                line = f"DIFFER [{','.join(diffs)}] old: {summary(a)} | new: {summary(b)}"
                if args.keep:
                    keep = os.path.join(args.keep, commit[:12])
                    os.makedirs(keep, exist_ok=True)
                    for tag, r in (("old", a), ("new", b)):
                        for stream in ("stdout", "stderr"):
                            with open(os.path.join(keep, f"{tag}.{stream}"), "w") as f:
                                f.write(r[stream] + "\n")
            else:
                agree += 1
                line = f"agree  {summary(a)}"
            print(f"{i:3} {commit[:8]} {d} {name:28} {line}", flush=True)
            shutil.rmtree(tree)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    note = f" ({tabled} of them with the [tool.patchgen] table added)" if tabled else ""
    print(f"veomni-corpus: {len(corpus)} trees, {agree} agree{note}, {len(differ)} differ")
    if reworded:
        print(f"  {reworded} of the agreeing trees print the same warnings in the diagnostics' form, or their FAILs also located with a source excerpt (issue 11)")
    for commit, name, diffs in differ:
        print(f"  {commit[:8]} {name}: {', '.join(diffs)}")
    return 0 if not differ else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("list")
    pl.add_argument("--mirror", default=DEFAULT_MIRROR)
    pl.add_argument("--since", default=DEFAULT_SINCE)
    pl.add_argument("--out")
    pr = sub.add_parser("run")
    pr.add_argument("--mirror", default=DEFAULT_MIRROR)
    pr.add_argument("--list", default=os.path.join(os.path.dirname(__file__), "..", "docs", "veomni-corpus.txt"))
    pr.add_argument("--old", required=True)
    pr.add_argument("--new", required=True)
    pr.add_argument("--work")
    pr.add_argument("--keep", help="keep the normalised outputs of the trees that differ here")
    pr.add_argument("--warm", action="store_true", help="run the new binary a second time (warm cache) and compare")
    pr.add_argument("--only", nargs="*", help="commit prefixes or ref names")
    pr.add_argument(
        "--add-section",
        action="store_true",
        help="in a tree from before patchgen-pkg, also compare with the [tool.patchgen] table the new binary suggests",
    )
    args = p.parse_args()
    if args.cmd == "list":
        cmd_list(args)
    else:
        sys.exit(cmd_run(args))


if __name__ == "__main__":
    main()
