//! `--format sarif` and `--format gitlab` (issue 38), the code-scanning
//! reports of `lint`, `check`, `survey` and `explain`. SARIF is read back
//! through an independent implementation of the SARIF 2.1.0 object model
//! (sarif-pydantic, `tests/reports/sarif_check.py`, installed by
//! scripts/test-env.sh); lint's results are compared with the `# LINT:`
//! markers planted in `tests/fixtures/lint/toy` (written with the fixture),
//! the other commands' with the same findings in `--format json`. GitLab:
//! one entry per finding, fingerprints unique and unchanged by an
//! unrelated line inserted above the findings. Commands without findings
//! refuse both formats (exit 2).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{MiniProject, TestEnv, copy_tree, toy_config};
use serde_json::Value;

/// The oracle python (with sarif-pydantic), or `None` with a message outside CI.
fn python() -> Option<String> {
    match std::env::var("PATCHGEN_TEST_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").as_deref() == Ok("true") => panic!("PATCHGEN_TEST_PYTHON must be set in CI"),
        _ => {
            eprintln!("skipping: PATCHGEN_TEST_PYTHON is not set (run through scripts/test.sh)");
            None
        }
    }
}

/// `sarif` validated by sarif-pydantic; what its model reads back.
fn validated(python: &str, sarif: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reports/sarif_check.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), sarif.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "not valid SARIF 2.1.0: {stderr}\n{sarif}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn lint_fixture() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("toy");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/toy"), &dir);
    (tmp, dir)
}

/// `(code, path, line)` the `# LINT: PGnnn[ (vN)]` markers announce for v2.
fn markers(root: &Path) -> BTreeSet<(String, String, u64)> {
    let mut out = BTreeSet::new();
    for dir in ["pkg/toy", "pkg/other"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "py") {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            for (i, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
                let Some((_, marks)) = line.split_once("# LINT: ") else { continue };
                for item in marks.split(", ").map(str::trim).filter(|m| m.starts_with("PG")) {
                    let only = item[5..].trim().strip_prefix('(').and_then(|r| r.get(..2));
                    if only.is_none_or(|v| !v.starts_with('v') || v == "v2") {
                        out.insert((item[..5].to_string(), rel.clone(), i as u64 + 1));
                    }
                }
            }
        }
    }
    out
}

const LINT: [&str; 6] = ["lint", "--upstream", "upstream/v2", "--no-download", "--no-cache", "--format"];

fn lint(dir: &Path, format: &str, env: &[(&str, &str)]) -> common::Output {
    let args: Vec<&str> = LINT.iter().copied().chain([format]).collect();
    TestEnv::get().patchgen_env(dir, "", &args, env)
}

#[test]
fn lint_sarif_is_valid_and_each_result_is_at_its_marker() {
    let Some(python) = python() else { return };
    let (_tmp, dir) = lint_fixture();
    let out = lint(&dir, "sarif", &[("PATCHGEN_DOCS_URL", "https://docs.example.org/patchgen")]);
    assert_eq!(out.code, 1, "findings: {}", out.stderr);
    let log = validated(&python, &out.stdout);
    assert_eq!(log["successful"], true);
    let base = log["base"].as_str().unwrap();
    assert!(base.starts_with("file:///") && base.ends_with("/toy/"), "{base}");
    let got: BTreeSet<(String, String, u64)> = log["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["uriBaseId"], "%SRCROOT%", "{r}");
            (
                r["ruleId"].as_str().unwrap().to_string(),
                r["uri"].as_str().unwrap().to_string(),
                r["startLine"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = markers(&dir);
    assert!(!want.is_empty());
    assert_eq!(got, want, "SARIF results (left) vs the fixture's markers (right)");
    assert_eq!(log["results"].as_array().unwrap().len(), want.len(), "one result per finding");
    // Rule metadata: the rule doc's first line (docs/rules/CODE.md, line 3), its page, its level.
    let codes: BTreeSet<&str> = want.iter().map(|(c, _, _)| c.as_str()).collect();
    let rules = log["rules"].as_array().unwrap();
    assert_eq!(rules.iter().map(|r| r["id"].as_str().unwrap()).collect::<BTreeSet<_>>(), codes);
    for r in rules {
        let id = r["id"].as_str().unwrap();
        let page =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules").join(format!("{id}.md")))
                .unwrap();
        let mut lines = page.lines();
        let title = lines.next().unwrap();
        assert_eq!(title, format!("# {id} {}", r["name"].as_str().unwrap()));
        assert_eq!(r["short"].as_str(), lines.nth(1), "{id}");
        assert_eq!(r["helpUri"], format!("https://docs.example.org/patchgen/rules/{id}.md"));
        assert!(r["help"].as_str().unwrap().starts_with(title), "{id}");
        let severity = page.lines().find_map(|l| l.strip_prefix("Default: ")).unwrap();
        let level = if severity.contains("Severity: error") { "error" } else { "warning" };
        assert_eq!(r["level"], level, "{id}: {severity}");
    }
}

#[test]
fn gitlab_has_one_entry_per_finding_and_fingerprints_survive_an_edit_above() {
    let (_tmp, dir) = lint_fixture();
    let report = |dir: &Path| -> Vec<Value> {
        let out = lint(dir, "gitlab", &[]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        serde_json::from_str::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
    };
    let before = report(&dir);
    let want = markers(&dir);
    let got: BTreeSet<(String, String, u64)> = before
        .iter()
        .map(|e| {
            for key in ["description", "check_name", "fingerprint", "severity"] {
                assert!(e[key].is_string(), "{key} in {e}");
            }
            assert!(["info", "minor", "major", "critical", "blocker"].contains(&e["severity"].as_str().unwrap()));
            (
                e["check_name"].as_str().unwrap().to_string(),
                e["location"]["path"].as_str().unwrap().to_string(),
                e["location"]["lines"]["begin"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(before.len(), want.len(), "one entry per finding");
    let prints = |r: &[Value]| -> Vec<String> {
        let mut v: Vec<String> = r.iter().map(|e| e["fingerprint"].as_str().unwrap().to_string()).collect();
        v.sort();
        v
    };
    let fp = prints(&before);
    assert_eq!(fp.iter().collect::<BTreeSet<_>>().len(), fp.len(), "fingerprints are unique");

    // An unrelated comment line on top of every file with findings: every
    // finding moves one line down, no fingerprint changes.
    let files: BTreeSet<&String> = want.iter().map(|(_, f, _)| f).collect();
    for f in &files {
        let p = dir.join(f);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, format!("# an unrelated edit\n{text}")).unwrap();
    }
    let after = report(&dir);
    let moved: BTreeSet<(String, String, u64)> = want.iter().map(|(c, f, l)| (c.clone(), f.clone(), l + 1)).collect();
    let got: BTreeSet<(String, String, u64)> = after
        .iter()
        .map(|e| {
            (
                e["check_name"].as_str().unwrap().to_string(),
                e["location"]["path"].as_str().unwrap().to_string(),
                e["location"]["lines"]["begin"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, moved, "the edit moved every finding one line down");
    assert_eq!(prints(&after), fp, "same fingerprints after the edit");
}

/// The SARIF results of `out` match its command's JSON findings, location
/// for location (the same `Diagnostic`s through the other renderer).
fn same_findings(python: &str, sarif: &common::Output, json: &common::Output, base: &Path) -> Value {
    let log = validated(python, &sarif.stdout);
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    let from_json: Vec<(String, String, u64)> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] != "info")
        .map(|d| {
            let path = Path::new(d["location"]["path"].as_str().unwrap());
            let rel = path.strip_prefix(base).unwrap_or(path).to_string_lossy().into_owned();
            (d["code"].as_str().unwrap().to_string(), rel, d["location"]["line"].as_u64().unwrap())
        })
        .collect();
    let from_sarif: Vec<(String, String, u64)> = log["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["ruleId"].as_str().unwrap().to_string(),
                r["uri"].as_str().unwrap().to_string(),
                r["startLine"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(from_sarif, from_json);
    log
}

#[test]
fn check_sarif_reports_drift_at_the_drifted_file_and_env_selects_it() {
    let Some(python) = python() else { return };
    let config = toy_config("@config.override_method(\"Norm.forward\")\ndef forward(self, x):\n    return x\n");
    let p = MiniProject::new(&[("pkg/toy/__init__.py", ""), ("pkg/toy/toy_patch_gen_config.py", &config)]);
    assert_eq!(p.run(&["generate", "--all", "--diff"]).code, 0);
    let generated = "pkg/toy/generated/patched_toy.py";
    p.write(generated, &format!("{}# edited by hand\n", p.read(generated)));
    let env = TestEnv::get();
    let sarif = env.patchgen_env(p.path(), &p.pythonpath(), &["check"], &[("PATCHGEN_OUTPUT_FORMAT", "sarif")]);
    assert_eq!(sarif.code, 1, "drift: {}", sarif.stderr);
    let json = p.run(&["check", "--format", "json"]);
    let log = same_findings(&python, &sarif, &json, p.path());
    let results = log["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!((results[0]["ruleId"].as_str(), results[0]["uri"].as_str()), (Some("PGD001"), Some(generated)));
    assert_eq!(log["rules"][0]["name"], "drift");
    let gitlab = p.run(&["check", "--format", "gitlab"]);
    let v: Value = serde_json::from_str(&gitlab.stdout).unwrap();
    assert_eq!(v[0]["location"], serde_json::json!({"path": generated, "lines": {"begin": 1}}), "whole file: line 1");
}

#[test]
fn survey_and_explain_sarif_carry_their_findings() {
    let Some(python) = python() else { return };
    // survey: the lint fixture's two upstreams.
    let (_tmp, dir) = lint_fixture();
    let env = TestEnv::get();
    let args =
        |f: &str| vec!["survey", "--from", "upstream/v1", "--to", "upstream/v2", "--format", f.to_string().leak()];
    let sarif = env.patchgen(&dir, "", &args("sarif"));
    assert_eq!(sarif.code, 1, "drift between v1 and v2: {}", sarif.stderr);
    let json = env.patchgen(&dir, "", &args("json"));
    let log = same_findings(&python, &sarif, &json, &dir);
    assert!(!log["results"].as_array().unwrap().is_empty());

    // explain: one unexplained hunk (a module-level call codegen does not copy), as PG105.
    let upstream = format!("{}\n\nprint(Norm)\n", common::MINI_UPSTREAM);
    let config = toy_config("@config.override_method(\"Norm.forward\")\ndef forward(self, x):\n    return x\n");
    let p = MiniProject::new(&[
        ("upstream/toylib/modeling_toy.py", &upstream),
        ("pkg/toy/__init__.py", ""),
        ("pkg/toy/toy_patch_gen_config.py", &config),
    ]);
    assert_eq!(p.run(&["generate", "--all", "--diff"]).code, 0);
    let out = p.run(&["explain", "--format", "sarif"]);
    let log = validated(&python, &out.stdout);
    let results = log["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["ruleId"], "PG105");
    assert_eq!(results[0]["uri"], "pkg/toy/generated/patched_toy.py");
    let explained = p.run(&["explain", "--format", "json"]);
    let doc: Value = serde_json::from_str(&explained.stdout).unwrap();
    let hunk = doc["files"][0]["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["causes"].as_array().unwrap().iter().any(|c| c["kind"] == "unexplained"))
        .unwrap()
        .clone();
    let line = results[0]["startLine"].as_u64().unwrap();
    let (start, n) = (hunk["new_start"].as_u64().unwrap(), hunk["new_lines"].as_u64().unwrap());
    assert!(line >= start && line <= start + n.max(1), "line {line} in the hunk {hunk}");
    assert!(results[0]["message"].as_str().unwrap().contains("no patch, import, header or ruff rule"));
}

#[test]
fn commands_without_findings_refuse_the_reports_and_a_failed_run_is_recorded() {
    let env = TestEnv::get();
    let p = MiniProject::new(&[]);
    for (args, vars, given, command) in [
        (vec!["list", "--format", "sarif"], vec![], "--format sarif", "list"),
        (
            vec!["generate", "--all"],
            vec![("PATCHGEN_OUTPUT_FORMAT", "gitlab")],
            "PATCHGEN_OUTPUT_FORMAT=gitlab",
            "generate",
        ),
        (vec!["moe", "inspect", "x", "--format", "gitlab"], vec![], "--format gitlab", "moe inspect"),
    ] {
        let out = env.patchgen_env(p.path(), &p.pythonpath(), &args, &vars);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stdout);
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        assert!(out.stderr.contains(&format!("{given}: `patchgen {command}` reports no findings")), "{}", out.stderr);
    }
    // A findings command that cannot start: an unsuccessful invocation (SARIF), an empty report (GitLab).
    let nowhere = tempfile::tempdir().unwrap();
    let out = env.patchgen(nowhere.path(), "", &["check", "--format", "sarif"]);
    assert_eq!(out.code, 2);
    if let Some(python) = python() {
        let log = validated(&python, &out.stdout);
        assert_eq!(log["successful"], false);
        assert!(log["notifications"][0].as_str().unwrap().contains("pyproject.toml"), "{log}");
        assert_eq!(log["results"], serde_json::json!([]));
    }
    let out = env.patchgen(nowhere.path(), "", &["lint", "--format", "gitlab"]);
    assert_eq!(out.code, 2);
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).unwrap(), serde_json::json!([]));
    assert!(out.stderr.contains("error"), "{}", out.stderr);
}
