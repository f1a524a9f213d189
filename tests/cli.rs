//! The command tree: `--help` of every command, usage errors for
//! arguments that mean nothing together, the reference's command lines
//! (VeOmni's Makefile and docs), the three output formats for a drift, a
//! failed config and a warning, the GitHub workflow-command syntax,
//! settings errors, a closed stdout, shell completions.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};

use common::*;

const CONFIG: &str = "pkg/toy/toy_patch_gen_config.py";
const MODULE: &str = "pkg.toy.toy_patch_gen_config";

fn project(config: &str) -> MiniProject {
    MiniProject::new(&[("pkg/toy/__init__.py", ""), (CONFIG, config)])
}

/// Run with no project at all (parsing only).
fn bare(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    TestEnv::get().patchgen(dir.path(), "", args)
}

/// `(N ms)` → `(<ms>)`, the project directory → `<project>`.
fn redact(p: &MiniProject, s: &str) -> String {
    let s = s.replace(&p.path().display().to_string(), "<project>");
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(i) = rest.find(" ms)") {
        let head = &rest[..i];
        match head.rfind('(') {
            Some(j) if head[j + 1..].chars().all(|c| c.is_ascii_digit()) && j + 1 < head.len() => {
                out.push_str(&head[..j]);
                out.push_str("(<ms>)");
            }
            _ => out.push_str(&rest[..i + 4]),
        }
        rest = &rest[i + 4..];
    }
    out.push_str(rest);
    out
}

fn snapshot_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots");
    s.set_prepend_module_to_snapshot(false);
    s
}

#[test]
fn help_of_every_command() {
    let settings = snapshot_settings();
    for (name, args) in [
        ("help", vec!["--help"]),
        ("help_generate", vec!["generate", "--help"]),
        ("help_check", vec!["check", "--help"]),
        ("help_list", vec!["list", "--help"]),
        ("help_clean", vec!["clean", "--help"]),
        ("help_survey", vec!["survey", "--help"]),
        ("help_reference", vec!["reference", "--help"]),
        ("help_new", vec!["new", "--help"]),
        ("help_completions", vec!["completions", "--help"]),
        ("help_moe", vec!["moe", "--help"]),
        ("help_moe_inspect", vec!["moe", "inspect", "--help"]),
        ("help_moe_convert", vec!["moe", "convert", "--help"]),
        ("help_lint", vec!["lint", "--help"]),
        ("help_rule", vec!["rule", "--help"]),
        ("help_explain", vec!["explain", "--help"]),
        ("help_server", vec!["server", "--help"]),
    ] {
        let out = bare(&args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(out.stdout.contains("Examples:"), "{args:?} shows an example:\n{}", out.stdout);
        settings.bind(|| insta::assert_snapshot!(name, out.stdout));
    }
}

/// Each pair of reference-form arguments that conflict, as a command line.
const CONFLICTING: &[&[&str]] = &[
    &["--list", "--all"],
    &["--list", "--check"],
    &["--all", "--check"],
    &["--list", "pkg.toy.toy_patch_gen_config"],
    &["--all", "pkg.toy.toy_patch_gen_config"],
    &["--list", "-o", "out"],
    &["--all", "-o", "out"],
    &["--check", "-o", "out"],
    &["--list", "--diff"],
    &["--check", "--diff"],
    &["--list", "--dry-run"],
    &["--check", "--dry-run"],
    &["--list", "--strict"],
    &["--list", "--ruff", "ruff"],
];

#[test]
fn every_conflicting_pair_is_a_usage_error() {
    assert_eq!(CONFLICTING.len(), patchgen::CONFLICTS.len(), "one command line per conflicting pair");
    for args in CONFLICTING {
        let out = bare(args);
        assert_eq!(out.code, 2, "{args:?}");
        let first = out.stderr.lines().next().unwrap_or("");
        assert!(first.starts_with("error: ") && first.contains(" cannot be used with "), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // Either order.
    let out = bare(&["--diff", "--check"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("error: '--check' cannot be used with '--diff': --check always compares the .diff too\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn other_usage_errors() {
    for (args, reason) in [
        (&["--fix"][..], "--fix only works with --check"),
        (&["--all", "--fix"], "--fix only works with --check"),
        (&["pkg.x_patch_gen_config", "--fix"], "--fix only works with --check"),
        (&[], "patch_module is required unless using --list, --all or --check"),
        (&["frobnicate"], "unrecognized command or module 'frobnicate'"),
        (&["generate"], "the following required arguments were not provided"),
        (&["generate", "--all", "pkg.x_patch_gen_config"], "cannot be used with"),
        (&["generate", "--all", "-o", "out"], "cannot be used with"),
        (&["check", "-o", "out"], "unexpected argument '-o'"),
        (&["check", "--diff"], "unexpected argument '--diff'"),
        (&["check", "--dry-run"], "unexpected argument '--dry-run'"),
        (&["list", "--all"], "unexpected argument '--all'"),
        (&["list", "--fix"], "unexpected argument '--fix'"),
        (&["generate", "--fix"], "unexpected argument '--fix'"),
        (&["check", "--format", "xml"], "invalid value 'xml'"),
        (&["completions", "tcsh"], "invalid value 'tcsh'"),
    ] {
        let out = bare(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.lines().next().unwrap_or("").contains(reason), "{args:?}: {}", out.stderr);
    }
}

/// VeOmni's Makefile (`patchgen --all --diff`, `patchgen --check`) and
/// docs (`patchgen <module> -o DIR --diff -v`), unchanged.
#[test]
fn the_reference_command_lines() {
    let p = project(&toy_config("\n@config.replace_function(\"helper\")\ndef helper(x):\n    return x + 2\n"));
    let out = p.run(&["--all", "--diff"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(&format!("Generating: {MODULE}")));
    assert!(out.stdout.contains("All 1 configs generated successfully."));
    let py = p.read("pkg/toy/generated/patched_toy.py");
    assert!(py.contains("return x + 2"));

    let out = p.run(&["--check"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.stdout.contains("All generated files are up to date."));

    let out = p.run(&[MODULE, "-o", "out", "--diff", "-v"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with(&format!("Loading patch module: {MODULE}\n")), "{}", out.stdout);
    assert!(out.stdout.contains("PATCH CONFIGURATION SUMMARY"));
    assert!(out.stdout.contains("✓ Generated: out/patched_toy.py"));
    assert_eq!(p.read("out/patched_toy.py"), py);
    assert_eq!(p.read("out/patched_toy.diff"), p.read("pkg/toy/generated/patched_toy.diff"));

    // The same through the commands.
    assert_eq!(p.run(&["check"]).code, 0);
    assert_eq!(p.run(&["generate", MODULE, "-o", "out2", "--diff"]).code, 0);
    assert_eq!(p.read("out2/patched_toy.py"), py);
}

/// A project with one drifted config, one failing config and one warning.
fn mixed_project() -> MiniProject {
    let p = MiniProject::new(&[
        ("pkg/a/__init__.py", ""),
        ("pkg/a/a_patch_gen_config.py", &toy_config("config.add_imports(\"torch\")\n")),
        ("pkg/toy/__init__.py", ""),
        (CONFIG, &toy_config("\n@config.replace_class(\"NoSuchClass\")\nclass X:\n    pass\n")),
    ]);
    assert_eq!(p.run(&["generate", MODULE, "--diff"]).code, 0);
    let py = "pkg/toy/generated/patched_toy.py";
    p.write(py, &format!("{}# hand edit\n", p.read(py)));
    p.write("pkg/toy/generated/patched_toy.diff", "");
    p
}

#[test]
fn output_formats_for_drift_failure_and_warning() {
    let p = mixed_project();
    let settings = snapshot_settings();
    let text = p.run(&["check"]);
    assert_eq!(text.code, 1);
    settings.bind(|| insta::assert_snapshot!("check_text_stdout", redact(&p, &text.stdout)));
    settings.bind(|| insta::assert_snapshot!("check_text_stderr", redact(&p, &text.stderr)));

    let json = p.run(&["check", "--format", "json"]);
    assert_eq!(json.code, 1);
    let mut doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("one JSON document");
    for c in doc["configs"].as_array_mut().unwrap() {
        c["seconds"] = 0.into();
    }
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["command"], "check");
    let codes: Vec<&str> = doc["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["PGE001", "PGW001", "PGD001", "PGD001"]);
    settings.bind(|| insta::assert_snapshot!("check_json", redact(&p, &serde_json::to_string_pretty(&doc).unwrap())));

    let github = p.run(&["check", "--format", "github"]);
    assert_eq!(github.code, 1);
    for line in github.stdout.lines() {
        assert_workflow_command(line);
    }
    settings.bind(|| insta::assert_snapshot!("check_github", redact(&p, &github.stdout)));

    // The same formats from the reference's spelling and from the environment.
    let legacy = p.run(&["--check", "--format", "github"]);
    assert_eq!(legacy.stdout, github.stdout);
    let env =
        TestEnv::get().patchgen_env(p.path(), &p.pythonpath(), &["--check"], &[("PATCHGEN_OUTPUT_FORMAT", "github")]);
    assert_eq!(env.stdout, github.stdout);

    // generate and list speak the same formats.
    let out = p.run(&["generate", "--all", "--dry-run", "--format", "json"]);
    assert_eq!(out.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["command"], "generate");
    assert_eq!(doc["configs"][0]["status"], "failed");
    assert_eq!(doc["configs"][1]["status"], "dry_run");
    let out = p.run(&["list", "--format", "github"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.starts_with(
            "::error file=pkg/a/a_patch_gen_config.py,line=9,col=1,endLine=9,endColumn=19,title=PGE001 config-error::"
        ),
        "{}",
        out.stdout
    );
}

/// A failed config in text output: the `FAIL` line as before, and on stderr
/// the failure like a warning — `file:line:col`, the source line with the
/// failing node underlined, the `help:` line — for an unknown DSL keyword,
/// an undefined name and a missing replace target, from `generate`,
/// `generate --all` and `list`.
#[test]
fn failed_config_in_text_shows_its_source() {
    let p = MiniProject::new(&[
        ("pkg/a/__init__.py", ""),
        (
            "pkg/a/kw_patch_gen_config.py",
            &toy_config("\n@config.replace_class(\"Norm\", descripton=\"x\")\nclass Norm:\n    pass\n"),
        ),
        ("pkg/a/name_patch_gen_config.py", &toy_config("config.add_import(undefined_module)\n")),
        (
            "pkg/a/anchor_patch_gen_config.py",
            &toy_config("\ndef h():\n    pass\n\n\nconfig.add_helper_after(\"NoSuchAnchor\", h)\n"),
        ),
    ]);
    let settings = snapshot_settings();
    let one = p.run(&["generate", "pkg.a.kw_patch_gen_config"]);
    assert_eq!(one.code, 1);
    assert!(one.stderr.contains("\nerror: "), "the error line is kept: {}", one.stderr);
    settings.bind(|| insta::assert_snapshot!("failed_generate_one_stderr", redact(&p, &one.stderr)));
    let all = p.run(&["generate", "--all", "--dry-run"]);
    assert_eq!(all.code, 1);
    settings.bind(|| insta::assert_snapshot!("failed_generate_all_stderr", redact(&p, &all.stderr)));
    let list = p.run(&["list"]);
    assert_eq!(list.code, 1);
    settings.bind(|| insta::assert_snapshot!("failed_list_stderr", redact(&p, &list.stderr)));
    // JSON and github carry the same range.
    let json = p.run(&["list", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    for d in doc["diagnostics"].as_array().unwrap() {
        let loc = &d["location"];
        assert!(loc["line"].as_u64().unwrap() > 0 && loc["column"].as_u64().unwrap() > 0, "{d}");
    }
}

/// A config whose upstream module is not installed points at its
/// `source_module=` argument (text and JSON), the line and column found in
/// the config's text here, independently of the parser.
#[test]
fn missing_upstream_points_at_source_module() {
    let config = toy_config("").replace("toylib.modeling_toy", "toylib.modeling_gone");
    let p = MiniProject::new(&[("pkg/a/__init__.py", ""), ("pkg/a/gone_patch_gen_config.py", &config)]);
    let needle = "source_module=\"toylib.modeling_gone\"";
    let (line, column) = config
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find(needle).map(|c| (i + 1, l[..c].chars().count() + 1)))
        .unwrap();
    let out = p.run(&["generate", "pkg.a.gone_patch_gen_config"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let head = format!("pkg/a/gone_patch_gen_config.py:{line}:{column}: PGE003 ");
    assert!(out.stderr.contains(&head), "expected `{head}` in:\n{}", out.stderr);
    let underline = format!("{}{}", " ".repeat(column - 1), "^".repeat(needle.len()));
    assert!(out.stderr.contains(&underline), "the argument is underlined:\n{}", out.stderr);
    assert!(out.stderr.contains("= help: put the package on PYTHONPATH"), "{}", out.stderr);
    let json = p.run(&["generate", "pkg.a.gone_patch_gen_config", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let d = doc["diagnostics"].as_array().unwrap().iter().find(|d| d["code"] == "PGE003").expect("a PGE003 diagnostic");
    assert_eq!(d["location"]["line"], line);
    assert_eq!(d["location"]["column"], column);
    assert_eq!(d["location"]["end"], serde_json::json!([line, column + needle.len()]));
}

/// `::command prop=v,prop=v::data`: known command, known properties with
/// escaped values, data without a raw line break.
fn assert_workflow_command(line: &str) {
    let rest = line.strip_prefix("::").unwrap_or_else(|| panic!("not a workflow command: {line}"));
    let (head, data) = rest.split_once("::").unwrap_or_else(|| panic!("no `::` before the message: {line}"));
    let (command, props) = head.split_once(' ').unwrap_or((head, ""));
    assert!(["error", "warning", "notice"].contains(&command), "{line}");
    for prop in props.split(',').filter(|p| !p.is_empty()) {
        let (key, value) = prop.split_once('=').unwrap_or_else(|| panic!("property without `=`: {line}"));
        assert!(["file", "line", "col", "endLine", "endColumn", "title"].contains(&key), "{key} in {line}");
        assert!(!value.contains(':') && !value.is_empty(), "{key}={value} in {line}");
        if ["line", "col", "endLine", "endColumn"].contains(&key) {
            assert!(value.parse::<usize>().is_ok(), "{key}={value}");
        }
    }
    assert!(!data.contains('\r') && !data.contains('\n'));
    // Every `%` starts an escape.
    for (i, _) in data.match_indices('%') {
        assert!(["%25", "%0D", "%0A"].iter().any(|e| data[i..].starts_with(e)), "{line}");
    }
}

#[test]
fn warning_and_note_name_their_config_and_place() {
    let body = "\n@config.replace_class(\"NoSuchClass\")\nclass X:\n    pass\n\n@config.override_method(\"Norm.extra\")\ndef extra(self):\n    return 1\n";
    let p = project(&toy_config(body));
    assert_eq!(p.run(&["--all", "--diff"]).code, 0);
    let out = p.run(&["--check", "-v"]);
    assert_eq!(out.code, 0);
    let settings = snapshot_settings();
    settings.bind(|| insta::assert_snapshot!("check_verbose_notes", redact(&p, &out.stderr)));
    assert!(
        out.stderr.contains(&format!(
            "{CONFIG}:14:1: PGI001 1 method(s) not found upstream, injected: Norm.extra [{MODULE}]"
        ))
    );
    // The note comes inside its config's block, not before `Found N`.
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("note:"), "{all}");
    // GitHub annotations: notes only with -v, as in text.
    let github = p.run(&["check", "--format", "github"]);
    assert!(github.stdout.contains("PGW001") && !github.stdout.contains("PGI001"), "{}", github.stdout);
    let github = p.run(&["check", "-v", "--format", "github"]);
    assert!(
        github.stdout.contains(&format!("::notice file={CONFIG},line=14,title=PGI001 injected-method::")),
        "{}",
        github.stdout
    );
    let json = p.run(&["check", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    for d in doc["diagnostics"].as_array().unwrap() {
        assert_eq!(d["config"], MODULE);
        assert!(d["location"]["path"].as_str().unwrap().ends_with(CONFIG));
    }
}

/// Two configs injecting the same method (a model's GPU and NPU configs):
/// the two notes say which config and line each comes from.
#[test]
fn same_note_of_two_configs_can_be_told_apart() {
    let body = "\n@config.override_method(\"Norm.extra\")\ndef extra(self):\n    return 1\n";
    let npu = toy_config(body).replace("patched_toy.py", "patched_toy_npu.py");
    let p = MiniProject::new(&[
        ("pkg/toy/__init__.py", ""),
        (CONFIG, &toy_config(body)),
        ("pkg/toy/toy_npu_patch_gen_config.py", &npu),
    ]);
    assert_eq!(p.run(&["--all", "--diff"]).code, 0);
    let out = p.run(&["--check", "-v"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let notes: Vec<&str> = out.stderr.lines().filter(|l| l.contains("PGI001")).collect();
    assert_eq!(
        notes,
        [
            "pkg/toy/toy_npu_patch_gen_config.py:10:1: PGI001 1 method(s) not found upstream, injected: Norm.extra [pkg.toy.toy_npu_patch_gen_config]",
            "pkg/toy/toy_patch_gen_config.py:10:1: PGI001 1 method(s) not found upstream, injected: Norm.extra [pkg.toy.toy_patch_gen_config]",
        ]
    );
}

#[test]
fn unknown_pyproject_key_is_an_error() {
    let p = project(&toy_config(""));
    let pyproject = p
        .read("pyproject.toml")
        .replace("package_prefix = \"pkg\"\n", "package_prefix = \"pkg\"\nsearch-root = \"pkg\"\n");
    p.write("pyproject.toml", &pyproject);
    for args in [&["--check"][..], &["list"], &["generate", "--all"]] {
        let out = p.run(args);
        assert_eq!(out.code, 2, "{args:?}");
        assert!(
            out.stderr.contains("pyproject.toml:4: unknown key `search-root` in [tool.patchgen]")
                && out.stderr.contains("did you mean `search_root`?"),
            "{}",
            out.stderr
        );
    }
    let out = p.run(&["check", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["diagnostics"][0]["code"], "PGE009");
}

/// Run `cmd` as `cmd | head -0` would: the reader is gone before anything
/// is written. Its exit code and stderr.
fn with_closed_stdout(cmd: &mut Command) -> (Option<i32>, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (child.wait().unwrap().code(), stderr)
}

#[test]
fn closed_stdout_ends_quietly_with_success() {
    let p = mixed_project();
    let mut cmd = Command::new(&TestEnv::get().bin);
    cmd.arg("check")
        .current_dir(p.path())
        .env_clear()
        .env("PATH", &TestEnv::get().ruff_dir)
        .env("PYTHONPATH", p.pythonpath())
        .env("NO_COLOR", "1");
    let (code, stderr) = with_closed_stdout(&mut cmd);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
}

#[test]
fn shell_completions() {
    for (shell, marker) in [("bash", "_patchgen()"), ("zsh", "#compdef patchgen"), ("fish", "complete -c patchgen")] {
        let out = bare(&["completions", shell]);
        assert_eq!(out.code, 0);
        assert!(out.stdout.contains(marker), "{shell}");
        for command in ["generate", "check", "list", "survey"] {
            assert!(out.stdout.contains(command), "{shell} completes {command}");
        }
    }
}

#[test]
fn every_code_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/diagnostics.md")).unwrap();
    for c in patchgen_diagnostics::codes::ALL {
        assert!(
            doc.contains(&format!("| `{}` | `{}` |", c.code, c.name)),
            "{} {} is missing from docs/diagnostics.md",
            c.code,
            c.name
        );
    }
}

/// `patchgen rule --all | head -0`: the rule documentation goes through the
/// printer too, so a closed stdout ends quietly with exit 0.
#[test]
fn closed_stdout_after_rule_docs() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(&TestEnv::get().bin);
    cmd.args(["rule", "--all"]).current_dir(dir.path()).env_clear();
    let (code, stderr) = with_closed_stdout(&mut cmd);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let unknown = bare(&["rule", "PG999"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.starts_with("patchgen rule: error: unknown rule `PG999`"), "{}", unknown.stderr);
}

/// An unknown key in `[tool.patchgen.lint]` stops `lint` as one in
/// `[tool.patchgen]` stops every command: file, line, nearest key.
#[test]
fn unknown_lint_key_is_an_error() {
    let p = project(&toy_config(""));
    let pyproject = p.read("pyproject.toml");
    p.write("pyproject.toml", &format!("{pyproject}\n[tool.patchgen.lint]\nselct = [\"PG1\"]\n"));
    let out = p.run(&["lint"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("pyproject.toml:"), "{}", out.stderr);
    assert!(out.stderr.contains("unknown key `selct` in [tool.patchgen.lint]"), "{}", out.stderr);
    assert!(out.stderr.contains("did you mean `select`?"), "{}", out.stderr);
}

/// Every command, when it cannot run, writes one JSON document in
/// `--format json` and under `PATCHGEN_OUTPUT_FORMAT=json`: the error as a
/// `PGE009` diagnostic (usage or project, exit 2) or `PGE010` (ran and
/// failed, exit 1), the command's name, and the `error` field.
#[test]
fn every_command_writes_one_json_document_when_it_cannot_run() {
    let cases: [(&str, &[&str]); 11] = [
        ("generate", &["generate", "--all"]),
        ("check", &["check"]),
        ("list", &["list"]),
        ("clean", &["clean"]),
        ("survey", &["survey", "--from", "1.0", "--to", "2.0", "--no-download"]),
        ("lint", &["lint"]),
        ("rule", &["rule", "PG999"]),
        ("moe inspect", &["moe", "inspect", "no-such-checkpoint"]),
        ("moe convert", &["moe", "convert", "no-such-checkpoint", "out"]),
        ("reference", &["reference", "qwen3", "--no-download"]),
        ("new", &["new", "mistral"]),
    ];
    let env = TestEnv::get();
    for (command, args) in cases {
        for via_env in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let out = if via_env {
                env.patchgen_env(dir.path(), "", args, &[("PATCHGEN_OUTPUT_FORMAT", "json")])
            } else {
                let mut with_flag = args.to_vec();
                with_flag.extend(["--format", "json"]);
                env.patchgen(dir.path(), "", &with_flag)
            };
            let how = if via_env { "PATCHGEN_OUTPUT_FORMAT=json" } else { "--format json" };
            let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
                panic!("{command} ({how}): stdout is not one JSON document ({e}):\n{}", out.stdout)
            });
            assert_eq!(doc["version"], 1, "{command} ({how})");
            assert_eq!(doc["command"], command, "{command} ({how})");
            let expected = match out.code {
                2 => "PGE009",
                1 => "PGE010",
                other => panic!("{command} ({how}): exit {other}\n{}", out.stderr),
            };
            assert_eq!(doc["diagnostics"][0]["code"], expected, "{command} ({how}): {doc}");
            assert!(doc["error"].as_str().is_some_and(|e| !e.is_empty()), "{command} ({how}): {doc}");
            assert_eq!(doc["diagnostics"].as_array().map(Vec::len), Some(1), "{command} ({how}): {doc}");
        }
    }
}

/// An invalid `PATCHGEN_OUTPUT_FORMAT` is a usage error for every command,
/// not a silent fall back to text.
#[test]
fn an_invalid_output_format_is_a_usage_error_everywhere() {
    let env = TestEnv::get();
    for args in [&["list"][..], &["lint"], &["rule", "PG101"], &["moe", "inspect", "x"], &["new", "mistral"]] {
        let dir = tempfile::tempdir().unwrap();
        let out = env.patchgen_env(dir.path(), "", args, &[("PATCHGEN_OUTPUT_FORMAT", "yaml")]);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("PATCHGEN_OUTPUT_FORMAT=yaml"), "{args:?}: {}", out.stderr);
    }
}
