//! Batched and per-file normalisation give the same bytes, in projects
//! whose ruff settings depend on the path in every way ruff allows.
//!
//! Need `ruff` (`PATCHGEN_TEST_RUFF`, else on `PATH`; `scripts/test-env.sh`
//! sets it up); without it these tests say so and pass.

use std::path::{Path, PathBuf};

use super::batch::Placer;
use super::{Mode, Ruff};

fn ruff() -> Option<Ruff> {
    let program = std::env::var_os("PATCHGEN_TEST_RUFF").map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("ruff")).find(|f| f.is_file()))
    });
    match program {
        Some(program) => {
            Some(Ruff { program, extra_ignore: Vec::new(), isolated: false, env: crate::settings::Env::capture() })
        }
        None => {
            eprintln!("note: no ruff (set PATCHGEN_TEST_RUFF); batch/per-file equivalence not tested");
            None
        }
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every file's tree path and bytes, to show a run changed nothing.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push((p.strip_prefix(root).unwrap().to_path_buf(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Generated-looking text that ruff fixes differently depending on the
/// settings that apply: unused and unsorted imports (first-party `mylib`,
/// same-package `pkg`, third-party, standard library), a missing final
/// newline, long lines, quotes.
const RAW: &str = "import sys\nimport os\nfrom mylib import helper\nimport requests\nfrom pkg.sub import thing\nfrom . import sibling\n\n\ndef f(x):\n    return helper(x) + thing + sibling + requests.get('https://example.com/a/rather/long/url/that/goes/past/eighty/eight/columns/' + str(x)) + sys.argv[0]";

/// Normalise `targets` both ways from `cwd`; return the batched results
/// and assert they equal the per-file ones.
fn both_ways(ruff: &Ruff, cwd: &Path, targets: &[PathBuf]) -> Vec<Result<String, String>> {
    let items: Vec<(&str, &Path)> = targets.iter().map(|t| (RAW, t.as_path())).collect();
    let per_file: Vec<_> = ruff
        .normalize_many_in(&items, 2, Mode::PerFile, Some(cwd))
        .into_iter()
        .map(|r| r.map_err(|e| e.to_string()))
        .collect();
    let batched: Vec<_> = ruff
        .normalize_many_in(&items, 2, Mode::Batch, Some(cwd))
        .into_iter()
        .map(|r| r.map_err(|e| e.to_string()))
        .collect();
    for ((t, a), b) in targets.iter().zip(&per_file).zip(&batched) {
        assert_eq!(a, b, "batched and per-file differ for {}", t.display());
    }
    batched
}

fn placed(ruff: &Ruff, cwd: &Path, targets: &[PathBuf]) -> Vec<bool> {
    let mut placer = Placer::new(ruff, cwd);
    targets.iter().map(|t| placer.place(t).is_some()).collect()
}

/// A project whose settings make the result depend on the directory, the
/// basename, the package layout and what exists on disk.
fn project(root: &Path) {
    write(
        root,
        "pyproject.toml",
        r#"[tool.patchgen]
search_root = "pkg"
package_prefix = "pkg"

[tool.ruff]
line-length = 100
src = [".", "lib"]

[tool.ruff.lint]
select = ["F", "I", "W", "Q"]

[tool.ruff.lint.per-file-ignores]
"pkg/**/generated/*.py" = ["F401"]
"other_*.py" = ["I001"]
"!pkg/a/**" = ["W292"]

[tool.ruff.lint.isort]
lines-after-imports = 2

[tool.ruff.format]
quote-style = "single"
"#,
    );
    write(root, "lib/mylib/__init__.py", "");
    write(root, "pkg/__init__.py", "");
    write(root, "pkg/a/__init__.py", "");
    write(root, "pkg/a/generated/__init__.py", "");
    write(root, "pkg/a/generated/patched_a.py", "old\n");
    write(root, "pkg/b/generated/patched_b.py", "old\n");
    write(root, "pkg/b/generated/other_b.py", "old\n");
    write(root, "pkg/c/notgenerated/patched_c.py", "old\n");
    write(root, ".ruff_cache/keep", "");
}

#[test]
fn batched_equals_per_file_and_touches_nothing() {
    let Some(ruff) = ruff() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    project(&root);
    let targets: Vec<PathBuf> = [
        "pkg/a/generated/patched_a.py",
        "pkg/b/generated/patched_b.py",
        "pkg/b/generated/other_b.py",
        "pkg/c/notgenerated/patched_c.py",
        "pkg/d/generated/new_file.py",
    ]
    .iter()
    .map(|r| root.join(r))
    .collect();
    assert_eq!(placed(&ruff, &root, &targets), vec![true; targets.len()]);
    let before = snapshot(&root);
    let out = both_ways(&ruff, &root, &targets);
    assert_eq!(snapshot(&root), before, "the project changed");
    // The settings really differ between the files (so equality means something).
    let texts: Vec<&String> = out.iter().map(|r| r.as_ref().unwrap()).collect();
    assert!(texts[0].contains("import os"), "F401 ignored under generated/: {}", texts[0]);
    assert!(!texts[3].contains("import os"), "F401 applies outside generated/: {}", texts[3]);
    assert_ne!(texts[1], texts[2], "I001 is ignored for other_*.py only");
    assert!(texts.iter().all(|t| t.contains("'https")), "quote-style = single");
    // From a subdirectory with the same nearest settings file: same results.
    let from_sub = both_ways(&ruff, &root.join("pkg"), &targets);
    assert_eq!(from_sub, out);
}

#[test]
fn what_cannot_be_batched_goes_per_file() {
    let Some(ruff) = ruff() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    project(&root);
    // A nearer settings file for one part, and one that extends another.
    write(&root, "pkg/b/ruff.toml", "line-length = 60\n[format]\nquote-style = \"double\"\n");
    write(&root, "pkg/c/ruff.toml", "extend = \"../../pyproject.toml\"\nline-length = 70\n");
    let targets: Vec<PathBuf> =
        ["pkg/a/generated/patched_a.py", "pkg/b/generated/patched_b.py", "pkg/c/notgenerated/patched_c.py"]
            .iter()
            .map(|r| root.join(r))
            .collect();
    assert_eq!(placed(&ruff, &root, &targets), vec![true, false, false]);
    // From pkg/b the nearest settings file is pkg/b/ruff.toml: only that file's own target batches.
    assert_eq!(placed(&ruff, &root.join("pkg/b"), &targets), vec![false, true, false]);
    // From pkg/c the nearest settings file extends another: nothing batches.
    assert_eq!(placed(&ruff, &root.join("pkg/c"), &targets), vec![false, false, false]);
    both_ways(&ruff, &root, &targets);
    both_ways(&ruff, &root.join("pkg/b"), &targets);
    // A settings directory that is itself a package: package detection
    // would climb out of a mirror.
    write(&root, "__init__.py", "");
    assert_eq!(placed(&ruff, &root, &targets), vec![false, false, false]);
}

#[test]
fn force_exclude_isolated_and_rejections_agree() {
    let Some(mut ruff) = ruff() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    project(&root);
    let text = std::fs::read_to_string(root.join("pyproject.toml")).unwrap();
    let text = text.replace("[tool.ruff]\n", "[tool.ruff]\nforce-exclude = true\nextend-exclude = [\"pkg/b/**\"]\n");
    std::fs::write(root.join("pyproject.toml"), text).unwrap();
    let targets: Vec<PathBuf> =
        ["pkg/a/generated/patched_a.py", "pkg/b/generated/patched_b.py"].iter().map(|r| root.join(r)).collect();
    let out = both_ways(&ruff, &root, &targets);
    assert_ne!(
        out[1].as_deref(),
        Ok(RAW),
        "an excluded file is normalised all the same, as the reference's temporary file is"
    );

    ruff.isolated = true;
    assert_eq!(placed(&ruff, &root, &targets), vec![true, true]);
    both_ways(&ruff, &root, &targets);
    ruff.isolated = false;

    // A file ruff rejects: the batch is redone per file, with the same error.
    let items: Vec<(&str, &Path)> = vec![(RAW, targets[0].as_path()), ("def broken(:\n", targets[1].as_path())];
    let per_file = ruff.normalize_many_in(&items, 2, Mode::PerFile, Some(&root));
    let batched = ruff.normalize_many_in(&items, 2, Mode::Batch, Some(&root));
    assert_eq!(
        format!("{:?}", per_file.iter().map(|r| r.as_ref().map_err(|e| e.to_string())).collect::<Vec<_>>()),
        format!("{:?}", batched.iter().map(|r| r.as_ref().map_err(|e| e.to_string())).collect::<Vec<_>>())
    );
}

#[test]
fn the_batch_itself_matches() {
    // Not through the fallback: `normalize_batch` must succeed and agree.
    let Some(ruff) = ruff() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    project(&root);
    let rels = ["pkg/a/generated/patched_a.py", "pkg/b/generated/patched_b.py", "pkg/b/generated/other_b.py"];
    let files: Vec<(&Path, &str)> = rels.iter().map(|r| (Path::new(*r), RAW)).collect();
    let batched = ruff.normalize_batch(&root, &files, 2).expect("the batch runs");
    for (rel, b) in rels.iter().zip(batched) {
        let a = ruff.normalize_in(RAW, &root.join(rel), Some(&root)).unwrap();
        assert_eq!(a, b, "{rel}");
    }
}
