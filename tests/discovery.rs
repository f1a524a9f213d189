//! Discovery decides the same way whatever the number of configs it finds
//! (issue 16, point 1): a discovered `*_patch_gen_config.py` without a
//! `config` PatchConfig (a placeholder) is skipped by `--check`, `--all`
//! and `--list`, as the reference's `list_patch_configs` skips it; a module
//! the user names keeps its located error.
//!
//! Reference behaviour (VeOmni `d9774494` patchgen, run on a project whose
//! only config is a placeholder): `--check` prints "No patch configs
//! found." on stdout and exits 0; `--all` prints the same line on stderr
//! and exits 1; `--list` prints "(none found)"; naming the module fails.

mod common;

use common::*;

const PLACEHOLDER: &str = "from patchgen import PatchConfig\n\n# The config comes with the model.\n";
const PLACEHOLDER_PATH: &str = "pkg/toy/toy_patch_gen_config.py";
const MODULE: &str = "pkg.toy.toy_patch_gen_config";

fn placeholder_project(extra: &[(&str, &str)]) -> MiniProject {
    let mut files = vec![("pkg/toy/__init__.py", ""), (PLACEHOLDER_PATH, PLACEHOLDER)];
    files.extend_from_slice(extra);
    MiniProject::new(&files)
}

#[test]
fn one_placeholder_config_is_skipped_by_check_as_by_all() {
    for extra in [vec![], vec![("pkg/other/__init__.py", ""), ("pkg/other/other_patch_gen_config.py", PLACEHOLDER)]] {
        let p = placeholder_project(&extra);
        let check = p.run(&["--check"]);
        assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
        assert_eq!(check.stdout, "No patch configs found.\n");
        let all = p.run(&["--all", "--diff"]);
        assert_eq!(all.code, 1, "as the reference: nothing generated");
        assert_eq!(all.stderr.trim_end(), "No patch configs found.", "the same message as --check");
        let list = p.run(&["--list"]);
        assert_eq!(list.code, 0);
        assert!(list.stdout.contains("(none found)"), "{}", list.stdout);
        let json = p.run(&["--check", "--format", "json"]);
        assert_eq!(json.code, 0);
        let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
        assert_eq!(v["configs"].as_array().unwrap().len(), 0);
    }
}

#[test]
fn a_placeholder_next_to_a_config_is_skipped() {
    let p =
        placeholder_project(&[("pkg/real/__init__.py", ""), ("pkg/real/real_patch_gen_config.py", &toy_config(""))]);
    assert_eq!(p.run(&["--all", "--diff"]).code, 0);
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.starts_with("Found 1 patch config(s):\n\n[pkg.real.real_patch_gen_config]\n"), "{}", out.stdout);
}

#[test]
fn a_named_placeholder_module_keeps_its_located_error() {
    let p =
        placeholder_project(&[("pkg/real/__init__.py", ""), ("pkg/real/real_patch_gen_config.py", &toy_config(""))]);
    let located = format!("{PLACEHOLDER_PATH}: `config` in `{MODULE}` is missing or not a PatchConfig");
    let out = p.run(&[MODULE]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains(&located), "{}", out.stderr);
    // Named to --check: the same error.
    let out = p.run(&["--check", MODULE]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("FAIL") && out.stdout.contains(&located), "{}", out.stdout);
}
