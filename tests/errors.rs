//! Bad input fails well: a message naming file:line, what is wrong and what
//! to do; exit 1 for a failed config, 2 for usage or project configuration;
//! the other configs still checked; nothing half-written.

mod common;

use common::*;

fn config_project(config: &str) -> MiniProject {
    MiniProject::new(&[("pkg/toy/__init__.py", ""), ("pkg/toy/toy_patch_gen_config.py", config)])
}

const CONFIG_PATH: &str = "pkg/toy/toy_patch_gen_config.py";

/// Run `--check` and return (exit code, stdout + stderr).
fn check(p: &MiniProject) -> (i32, String) {
    let out = p.run(&["--check"]);
    (out.code, format!("{}{}", out.stdout, out.stderr))
}

fn assert_has(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "expected {n:?} in:\n{text}");
    }
}

#[test]
fn config_syntax_error_names_file_and_line() {
    let p = config_project(&toy_config("\ndef broken(:\n    pass\n"));
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &[&format!("{CONFIG_PATH}:10"), "syntax error"]);
}

#[test]
fn value_not_known_statically() {
    let p = config_project(&toy_config("from elsewhere import NAME\n\nconfig.add_import(f\"{NAME}.sub\")\n"));
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &[&format!("{CONFIG_PATH}:11"), "must be a string known statically", "f-string"]);
}

#[test]
fn unknown_dsl_method_and_keyword_suggest_fixes() {
    let p = config_project(&toy_config("config.add_imports(\"torch\")\n"));
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &[":9", "has no attribute `add_imports`", "did you mean `add_import`?"]);

    let p = config_project(&toy_config(
        "\n@config.override_method(\"Norm.forward\", descripton=\"x\")\ndef f(self, x):\n    return x\n",
    ));
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &["unexpected keyword argument `descripton`", "did you mean `description=`?"]);
}

#[test]
fn config_name_missing_or_not_a_patch_config() {
    let p = config_project(&toy_config("other = 3\n"));
    let out = p.run(&["pkg.toy.toy_patch_gen_config", "-c", "nope"]);
    assert_eq!(out.code, 1);
    assert_has(&out.stderr, &["`nope` in `pkg.toy.toy_patch_gen_config` is missing or not a PatchConfig"]);
    let out = p.run(&["pkg.toy.toy_patch_gen_config", "-c", "other"]);
    assert_eq!(out.code, 1);
    assert_has(&out.stderr, &["not a PatchConfig"]);
}

#[test]
fn empty_file_and_binary_garbage() {
    let p = config_project("");
    let out = p.run(&["pkg.toy.toy_patch_gen_config"]);
    assert_eq!(out.code, 1);
    assert_has(&out.stderr, &["missing or not a PatchConfig"]);

    let p = MiniProject::new(&[("pkg/toy/__init__.py", "")]);
    std::fs::write(p.path().join(CONFIG_PATH), b"\xff\xfe\x00garbage\x80\n").unwrap();
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &[CONFIG_PATH, "not valid UTF-8"]);
}

#[test]
fn cyclic_imports_between_configs_are_an_error_not_a_hang() {
    let a = "from pkg.b.b_patch_gen_config import helper_b\nfrom patchgen import PatchConfig\n\ndef helper_a():\n    pass\n\nconfig = PatchConfig(source_module=\"toylib.modeling_toy\")\nconfig.add_helper(helper_b)\n";
    let b = "from pkg.a.a_patch_gen_config import helper_a\nfrom patchgen import PatchConfig\n\ndef helper_b():\n    pass\n\nconfig = PatchConfig(source_module=\"toylib.modeling_toy\")\nconfig.add_helper(helper_a)\n";
    let p = MiniProject::new(&[
        ("pkg/a/__init__.py", ""),
        ("pkg/a/a_patch_gen_config.py", a),
        ("pkg/b/__init__.py", ""),
        ("pkg/b/b_patch_gen_config.py", b),
    ]);
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &["circular import", "2 config(s) failed"]);
}

#[test]
fn import_of_a_missing_config_module() {
    let p = config_project(&toy_config("from pkg.nothere.x_patch_gen_config import f\n\nconfig.add_helper(f)\n"));
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &[&format!("{CONFIG_PATH}:9"), "no config module named `pkg.nothere.x_patch_gen_config`"]);
}

#[test]
fn missing_targets_warn_and_fail_under_strict() {
    let p = config_project(&toy_config(
        "\n@config.replace_class(\"NoSuchClass\")\nclass X:\n    pass\n\n@config.override_method(\"Norm.forward\")\ndef a(self, x):\n    return 1\n\n@config.override_method(\"Norm.forward\")\ndef b(self, x):\n    return 2\n",
    ));
    let out = p.run(&["--all", "--diff"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_has(
        &out.stderr,
        &["`NoSuchClass` is not a top-level class", "`Norm.forward` is patched 2 times", "uses the last registration"],
    );
    let (code, out) = {
        let o = p.run(&["--check", "--strict"]);
        (o.code, format!("{}{}", o.stdout, o.stderr))
    };
    assert_eq!(code, 1);
    assert_has(&out, &["under --strict"]);
}

#[test]
fn add_helper_after_missing_target_fails() {
    let p = config_project(&toy_config("\n@config.add_helper_after(\"Nowhere\")\ndef h():\n    pass\n"));
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &["Positioned helper target(s) not found in generated output: Nowhere"]);
}

#[test]
fn upstream_not_found_lists_places_searched() {
    let p = config_project(&toy_config("").replace("toylib.modeling_toy", "toylib.modeling_missing"));
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(
        &out,
        &[
            "upstream module `toylib.modeling_missing` not found; searched:",
            "/upstream",
            "help: put the package on PYTHONPATH",
        ],
    );
}

#[test]
fn upstream_not_utf8_or_broken() {
    let p = config_project(&toy_config(""));
    std::fs::write(p.path().join("upstream/toylib/modeling_toy.py"), b"x = 1\ny = '\xff'\n").unwrap();
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &["modeling_toy.py:2: upstream file is not valid UTF-8"]);

    p.write("upstream/toylib/modeling_toy.py", "x = 1\n\nclass A(:\n    pass\n");
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(&out, &["modeling_toy.py:3: syntax error in the upstream module"]);
}

#[test]
fn ruff_path_that_cannot_run_is_not_found() {
    let p = config_project(&toy_config(""));
    p.write("not-executable", "#!/bin/sh\n");
    for ruff in ["not-executable", "upstream", "missing/ruff"] {
        let path = p.path().join(ruff);
        let out = TestEnv::get().patchgen(p.path(), &p.pythonpath(), &["--check", "--ruff", path.to_str().unwrap()]);
        assert_eq!(out.code, 2, "--ruff {ruff}");
        assert_has(&out.stderr, &["ruff not found", &path.display().to_string()]);
    }
}

#[test]
fn ruff_missing_says_how_to_install() {
    let p = config_project(&toy_config(""));
    let out = TestEnv::get().patchgen_env(p.path(), &p.pythonpath(), &["--check"], &[("PATH", "/nonexistent")]);
    assert_eq!(out.code, 2);
    assert_has(&out.stderr, &["ruff not found", "pip install ruff==0.13.2"]);
}

#[test]
fn ruff_rejecting_the_output_shows_its_message_and_keeps_old_files() {
    let p = config_project(&toy_config(""));
    assert_eq!(p.run(&["--all", "--diff"]).code, 0);
    let py = p.path().join("pkg/toy/generated/patched_toy.py");
    let before = std::fs::read(&py).unwrap();
    p.write(
        CONFIG_PATH,
        &toy_config("\n@config.replace_function(\"helper\")\ndef helper2(x):\n    return undefined_thing(x)\n"),
    );
    let out = p.run(&["--all", "--diff"]);
    assert_eq!(out.code, 1);
    assert_has(&out.stderr, &["F821", "undefined_thing", "ruff check rejected the generated file", "add_import"]);
    assert_eq!(std::fs::read(&py).unwrap(), before, "a failed run leaves the old file as it was");
}

#[test]
fn project_configuration_errors_exit_2() {
    let p = MiniProject::new(&[]);
    p.write("pyproject.toml", "[project]\nname = \"x\"\n");
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 2);
    assert_has(&out.stderr, &["no [tool.patchgen] section", "[tool.patchgen]", "search_root = "]);

    p.write("pyproject.toml", "[tool.patchgen]\nsearch_root = \"pkg\"\n");
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 2);
    assert_has(&out.stderr, &["missing required key 'package_prefix'"]);

    p.write("pyproject.toml", "[tool.patchgen]\nsearch_root = \"nowhere\"\npackage_prefix = \"pkg\"\n");
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 2);
    assert_has(&out.stderr, &["search_root", "does not exist"]);

    p.write("pyproject.toml", "[tool.patchgen\nsearch_root = 1\n");
    let out = p.run(&["--check"]);
    assert_eq!(out.code, 2);
    assert_has(&out.stderr, &["pyproject.toml:1: invalid TOML"]);
}

#[test]
fn output_dir_that_is_a_file_is_a_usage_error() {
    let p = config_project(&toy_config(""));
    p.write("afile", "x");
    let out = p.run(&["pkg.toy.toy_patch_gen_config", "-o", "afile"]);
    assert_eq!(out.code, 2);
    assert_has(&out.stderr, &["afile", "not a directory"]);
}

#[test]
fn check_goes_on_past_a_failing_config_and_lists_failures() {
    let p = MiniProject::new(&[
        ("pkg/a/__init__.py", ""),
        ("pkg/a/a_patch_gen_config.py", &toy_config("config.add_import(\n")),
        ("pkg/b/__init__.py", ""),
        ("pkg/b/b_patch_gen_config.py", &toy_config("")),
    ]);
    assert_eq!(p.run(&["pkg.b.b_patch_gen_config", "--diff"]).code, 0);
    let (code, out) = check(&p);
    assert_eq!(code, 1);
    assert_has(
        &out,
        &["[pkg.a.a_patch_gen_config]", "FAIL", "[pkg.b.b_patch_gen_config]", "  OK    ", "1 config(s) failed:"],
    );
}

#[test]
fn fix_without_check_is_a_usage_error() {
    let p = config_project(&toy_config(""));
    let out = p.run(&["--fix"]);
    assert_eq!(out.code, 2);
    assert_has(&out.stderr, &["--fix only works with --check"]);
}

#[test]
fn dry_run_writes_nothing_but_fails_where_a_real_run_fails() {
    let p = config_project(&toy_config(
        "\n@config.replace_function(\"helper\")\ndef helper2(x):\n    return undefined_thing(x)\n",
    ));
    let out = p.run(&["pkg.toy.toy_patch_gen_config", "--dry-run", "--diff"]);
    assert_eq!(out.code, 1, "dry-run runs ruff too: {}", out.stdout);
    assert!(!p.path().join("pkg/toy/generated").exists());
    p.write(CONFIG_PATH, &toy_config(""));
    let out = p.run(&["pkg.toy.toy_patch_gen_config", "--dry-run", "--diff"]);
    assert_eq!(out.code, 0);
    assert_has(&out.stdout, &["[DRY RUN] Would generate:", "patched_toy.py", "patched_toy.diff"]);
    assert!(!p.path().join("pkg/toy/generated").exists());
}

#[test]
fn optional_config_with_missing_upstream_is_skipped_by_check_only() {
    let cfg = toy_config("")
        .replace("toylib.modeling_toy", "notinstalled.modeling_x")
        .replace("transformers_version=\"0.0.0\",", "transformers_version=\"0.0.0\",\n    optional=True,");
    let p = config_project(&cfg);
    let (code, out) = check(&p);
    assert_eq!(code, 0, "{out}");
    assert_has(
        &out,
        &["  SKIP  notinstalled.modeling_x (optional source not importable)", "All generated files are up to date."],
    );
    // Generating it is still a failure, as in the reference.
    let out = p.run(&["--all"]);
    assert_eq!(out.code, 1);
}

#[test]
fn ruff_exclusions_do_not_skip_generated_files() {
    // The reference normalises a temporary file no exclusion matches.
    let p = config_project(&toy_config(""));
    assert_eq!(p.run(&["--all", "--diff"]).code, 0);
    let mut pyproject = p.read("pyproject.toml");
    pyproject = pyproject
        .replace("[tool.ruff]\n", "[tool.ruff]\nforce-exclude = true\nextend-exclude = [\"pkg/**/generated/*.py\"]\n");
    p.write("pyproject.toml", &pyproject);
    let (code, out) = check(&p);
    assert_eq!(code, 0, "{out}");
}
