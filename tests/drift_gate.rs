//! The drift gate's contract (issue acceptance 3): edited or deleted
//! generated files are drift (exit 1, with a diff); CRLF endings are not;
//! `--fix` restores byte-identical files and only those; a second check is
//! clean; `--check` writes nothing.

mod common;

use common::*;

const BODY: &str = "\n@config.override_method(\"Norm.forward\", description=\"scaled\")\ndef norm_forward(self, x):\n    # keep it simple\n    return x * self.eps\n";

fn generated_project() -> (MiniProject, Vec<(String, Vec<u8>)>) {
    let p = MiniProject::new(&[("pkg/toy/__init__.py", ""), ("pkg/toy/toy_patch_gen_config.py", &toy_config(BODY))]);
    let out = p.run(&["--all", "--diff"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let files = ["pkg/toy/generated/patched_toy.py", "pkg/toy/generated/patched_toy.diff"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(p.path().join(f)).unwrap()))
        .collect();
    (p, files)
}

fn snapshot(p: &MiniProject, files: &[(String, Vec<u8>)]) -> Vec<Vec<u8>> {
    files.iter().map(|(f, _)| std::fs::read(p.path().join(f)).unwrap_or_default()).collect()
}

#[test]
fn clean_tree_checks_ok() {
    let (p, _) = generated_project();
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.stdout.contains("  OK    "), "{}", out.stdout);
    assert!(out.stdout.ends_with("All generated files are up to date.\n"), "{}", out.stdout);
}

#[test]
fn edited_py_is_drift_and_fix_restores_it() {
    let (p, files) = generated_project();
    let py = &files[0].0;
    let mut text = p.read(py);
    text = text.replace("return x * self.eps", "return x * self.eps * 2");
    p.write(py, &text);
    let before = snapshot(&p, &files);
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains(&format!("  DRIFT {}", p.path().join(py).display())), "{}", out.stdout);
    assert!(out.stdout.contains("-        return x * self.eps * 2\n+        return x * self.eps\n"), "{}", out.stdout);
    assert!(out.stdout.contains("Generated files are out of date. Re-run with --fix."));
    assert_eq!(snapshot(&p, &files), before, "--check must not write");

    let out = p.run(&["--check", "--fix"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.stdout.contains("  FIXED "), "{}", out.stdout);
    assert!(!out.stdout.contains(".diff\n"), "only the drifted .py is rewritten:\n{}", out.stdout);
    assert_eq!(snapshot(&p, &files), files.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>());
    assert_eq!(p.run(&["--check"]).code, 0);
}

/// `--check` takes the `.diff` of the checked-in `.py` while ruff runs, to
/// reuse it when ruff's output is that text: an edited `.py` checked in
/// with the `.diff` that matches it must still show both as drift.
#[test]
fn edited_py_with_its_own_diff_is_drift_in_both() {
    let (p, files) = generated_project();
    let (py, diff) = (&files[0].0, &files[1].0);
    let edited = p.read(py).replace("return x * self.eps", "return x * self.eps * 2");
    let edited_diff =
        patchgen_core::pipeline::build_diff(MINI_UPSTREAM, &edited, "toylib.modeling_toy", "patched_toy.py");
    assert_eq!(apply_unified_diff(MINI_UPSTREAM, &edited_diff), edited, "the .diff matches the edited .py");
    p.write(py, &edited);
    p.write(diff, &edited_diff);
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 1);
    for f in [py, diff] {
        assert!(out.stdout.contains(&format!("  DRIFT {}", p.path().join(f).display())), "{}", out.stdout);
    }
    assert_eq!(p.run(&["--check", "--fix"]).code, 0);
    assert_eq!(snapshot(&p, &files), files.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>());
}

#[test]
fn deleted_diff_is_drift() {
    let (p, files) = generated_project();
    std::fs::remove_file(p.path().join(&files[1].0)).unwrap();
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("  DRIFT ") && out.stdout.contains(".diff"), "{}", out.stdout);
    assert_eq!(p.run(&["--check", "--fix"]).code, 0);
    assert_eq!(std::fs::read(p.path().join(&files[1].0)).unwrap(), files[1].1);
}

#[test]
fn crlf_and_trailing_whitespace_in_diff_are_not_drift() {
    let (p, files) = generated_project();
    for (f, bytes) in &files {
        let text = String::from_utf8(bytes.clone()).unwrap().replace('\n', "\r\n");
        p.write(f, &text);
    }
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 0, "CRLF is not drift:\n{}", out.stdout);
    // Trailing spaces in the .diff (an editor's doing) are not drift either.
    let diff = String::from_utf8(files[1].1.clone()).unwrap().replace("\n", "  \n");
    p.write(&files[1].0, &diff);
    assert_eq!(p.run(&["--check"]).code, 0);
}

#[test]
fn all_diff_on_a_clean_tree_changes_nothing() {
    let (p, files) = generated_project();
    let out = p.run(&["--all", "--diff"]);
    assert_eq!(out.code, 0);
    assert_eq!(snapshot(&p, &files), files.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>());
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let (p, files) = generated_project();
    for jobs in ["1", "2", "8"] {
        for (f, _) in &files {
            std::fs::remove_file(p.path().join(f)).unwrap();
        }
        assert_eq!(p.run(&["--all", "--diff", "--jobs", jobs]).code, 0);
        assert_eq!(snapshot(&p, &files), files.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>(), "jobs={jobs}");
    }
}

#[test]
fn ruff_config_in_tmpdir_changes_nothing() {
    let (p, files) = generated_project();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("ruff.toml"), "line-length = 20\n[format]\nquote-style = \"single\"\n").unwrap();
    let out = TestEnv::get().patchgen_env(
        p.path(),
        &p.pythonpath(),
        &["--check"],
        &[("TMPDIR", tmp.path().to_str().unwrap())],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let _ = files;
}

#[test]
fn json_check_output() {
    let (p, files) = generated_project();
    std::fs::remove_file(p.path().join(&files[1].0)).unwrap();
    let out = p.run(&["--check", "--format", "json"]);
    assert_eq!(out.code, 1);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("valid json");
    let cfg = &v["configs"][0];
    assert_eq!(cfg["module"], "pkg.toy.toy_patch_gen_config");
    assert_eq!(cfg["status"], "drift");
    assert_eq!(cfg["files"][0]["status"], "ok");
    assert_eq!(cfg["files"][1]["status"], "drift");
}

#[test]
fn source_module_inside_the_project_is_found_from_a_subdirectory() {
    let cfg = toy_config("").replace("toylib.modeling_toy", "pkg.vendored.modeling_toy");
    let p = MiniProject::new(&[
        ("pkg/vendored/__init__.py", ""),
        ("pkg/vendored/modeling_toy.py", MINI_UPSTREAM),
        ("pkg/toy/__init__.py", ""),
        ("pkg/toy/toy_patch_gen_config.py", &cfg),
    ]);
    // No PYTHONPATH entry for the project, and run from a subdirectory.
    let out = TestEnv::get().patchgen(&p.path().join("pkg/toy"), "", &["--all", "--diff"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let diff = p.read("pkg/toy/generated/patched_toy.diff");
    assert!(diff.starts_with("--- a/pkg/vendored/modeling_toy.py\n"), "{diff}");
}

/// The `diff_final_blank_line` fixture (its `.diff`, written by the
/// reference, ends in `\n\n`) in a temporary copy, with its paths.
fn blank_line_fixture() -> (tempfile::TempDir, std::path::PathBuf, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    copy_tree(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diff_final_blank_line"), &dir);
    let pythonpath = format!("{}:{}", dir.display(), dir.join("upstream").display());
    let diff = "pkg/edge/generated/patched_modeling_edge.diff".to_string();
    (tmp, dir, pythonpath, diff)
}

/// What pre-commit's `end-of-file-fixer` does: exactly one final newline.
fn end_of_file_fixer(text: &str) -> String {
    format!("{}\n", text.trim_end_matches('\n'))
}

#[test]
fn diff_without_its_final_blank_line_is_not_drift() {
    let env = TestEnv::get();
    let (_tmp, dir, pythonpath, diff) = blank_line_fixture();
    let reference = std::fs::read_to_string(dir.join(&diff)).unwrap();
    assert!(reference.ends_with("w = z - 1\n\n"), "the reference's .diff ends in a blank line");
    let out = env.patchgen(&dir, &pythonpath, &["--check"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("PGI003"), "no note for the reference's own bytes:\n{}", out.stderr);

    for fixed in [end_of_file_fixer(&reference), format!("{reference}\n\n")] {
        std::fs::write(dir.join(&diff), &fixed).unwrap();
        let out = env.patchgen(&dir, &pythonpath, &["--check"]);
        assert_eq!(out.code, 0, "only final newlines differ:\n{}{}", out.stdout, out.stderr);
        assert!(
            out.stdout.contains("  OK    ") && out.stdout.ends_with("All generated files are up to date.\n"),
            "{}",
            out.stdout
        );
        assert!(!out.stdout.contains("DRIFT"), "{}", out.stdout);
        assert_eq!(out.stderr.matches("PGI003").count(), 1, "one note per run:\n{}", out.stderr);
        for part in [
            "patched_modeling_edge.diff: PGI003 differs from the generated `.diff` only in the newlines at its end",
            "end-of-file-fixer",
            "trailing-whitespace",
            "exclude: '^pkg/(.*/)?generated/'",
        ] {
            assert!(out.stderr.contains(part), "note names {part:?}:\n{}", out.stderr);
        }
        let json = env.patchgen(&dir, &pythonpath, &["--check", "--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
        assert_eq!(v["configs"][0]["status"], "ok");
        assert_eq!(v["configs"][0]["files"][1]["final_newlines_only"], true, "{}", json.stdout);
        // --fix leaves the hook's version alone (writing `\n\n` again would fight it).
        let out = env.patchgen(&dir, &pythonpath, &["--check", "--fix"]);
        assert_eq!(out.code, 0);
        assert!(!out.stdout.contains("FIXED"), "{}", out.stdout);
        assert_eq!(std::fs::read_to_string(dir.join(&diff)).unwrap(), fixed);
    }

    // Generating still writes the reference's bytes.
    let out = env.patchgen(&dir, &pythonpath, &["--all", "--diff"]);
    assert_eq!(out.code, 0);
    assert_eq!(std::fs::read_to_string(dir.join(&diff)).unwrap(), reference);
}

#[test]
fn one_character_drift_at_the_end_of_a_diff_is_drift_shown_legibly() {
    let env = TestEnv::get();
    let (_tmp, dir, pythonpath, diff) = blank_line_fixture();
    let reference = std::fs::read_to_string(dir.join(&diff)).unwrap();
    let eof_fixed = end_of_file_fixer(&reference);
    // The last character of the last line changed, with or without the
    // final blank line; a character after the hook's final newline.
    let cases = [
        (reference.replace("w = z - 1\n\n", "w = z - 2\n\n"), "-         w = z - 2\n+         w = z - 1\n"),
        (eof_fixed.replace("w = z - 1\n", "w = z - 2\n"), "-         w = z - 2\n+         w = z - 1\n"),
        (format!("{eof_fixed}x"), "          w = z - 1\n-x\n"),
    ];
    for (edited, shown) in cases {
        std::fs::write(dir.join(&diff), &edited).unwrap();
        let out = env.patchgen(&dir, &pythonpath, &["--check"]);
        assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
        assert!(out.stdout.contains(&format!("  DRIFT {}", dir.join(&diff).display())), "{}", out.stdout);
        assert!(out.stdout.contains(shown), "expected {shown:?} in:\n{}", out.stdout);
        // The tolerated final newlines are not part of what is shown.
        assert!(!out.stdout.contains("\n+\n"), "no bare `+` line:\n{}", out.stdout);
        assert!(out.stdout.contains("Generated files are out of date. Re-run with --fix."));
        let out = env.patchgen(&dir, &pythonpath, &["--check", "--fix"]);
        assert_eq!(out.code, 0);
        assert_eq!(std::fs::read_to_string(dir.join(&diff)).unwrap(), reference, "--fix writes the reference's bytes");
    }
}

#[test]
fn invisible_py_drift_is_explained() {
    let (p, files) = generated_project();
    let py = &files[0].0;
    let text = p.read(py);
    let cases = [
        (text.trim_end_matches('\n').to_string(), "the checked-in file lacks the final newline", true),
        (format!("{text}\n"), "the checked-in file has 1 blank line more at the end", false),
        (
            text.replace("return x * self.eps\n", "return x * self.eps  \n"),
            "only trailing whitespace differs: the checked-in file has extra on line",
            false,
        ),
    ];
    for (edited, why, marker) in cases {
        p.write(py, &edited);
        let out = p.run(&["--check"]);
        assert_eq!(out.code, 1, "{}", out.stdout);
        assert!(out.stdout.contains(&format!("  note: {why}")), "expected {why:?} in:\n{}", out.stdout);
        assert_eq!(out.stdout.contains("\\ No newline at end of file\n"), marker, "{}", out.stdout);
    }
    let v: serde_json::Value = serde_json::from_str(&p.run(&["--check", "--format", "json"]).stdout).unwrap();
    assert!(
        v["configs"][0]["files"][0]["explanation"].as_str().unwrap().starts_with("only trailing whitespace differs")
    );
}
