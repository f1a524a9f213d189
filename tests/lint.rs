//! `patchgen lint` on the fixture project `tests/fixtures/lint/toy` (two
//! hand-written upstream versions): every finding is checked against the
//! `# LINT: PGnnn` markers planted in the configs (an expectation written
//! with the fixture, independent of our output), rule by rule; the
//! rendered diagnostics are insta snapshots; plus selection, suppression,
//! formats, exit codes, `patchgen rule` and the generated `docs/rules/`.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use patchgen_lint::RULES;
use patchgen_lint::{self as command, LintReport, Options as LintArgs, RuleQuery};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/toy")
}

fn args(upstream: &str, select: Option<&[&str]>) -> LintArgs {
    LintArgs {
        modules: Vec::new(),
        select: select.map(|s| s.iter().map(|c| c.to_string()).collect()),
        extend_select: Vec::new(),
        ignore: Vec::new(),
        upstream: Some(format!("upstream/{upstream}")),
        config_name: "config".into(),
        project: None,
        no_download: true,
        jobs: Some(2),
        no_cache: true,
        verbose: false,
        unsafe_fixes: false,
        env: patchgen_core::settings::Env::capture(),
        reporter: Default::default(),
    }
}

fn run(a: &LintArgs) -> LintReport {
    command::lint(a, &fixture()).expect("lint runs")
}

/// `(code, file relative to the fixture, line)` of every finding.
fn found(report: &LintReport) -> BTreeSet<(String, String, usize)> {
    report
        .diagnostics
        .iter()
        .map(|d| {
            let l = d.location.as_ref().expect("located");
            let rel = l.path.strip_prefix(fixture()).unwrap_or(&l.path).display().to_string();
            (d.code.clone(), rel, l.line)
        })
        .collect()
}

/// The findings the `# LINT:` markers announce for `version` (`v1`/`v2`).
fn expected(version: &str) -> BTreeSet<(String, String, usize)> {
    let mut out = BTreeSet::new();
    for dir in ["pkg/toy", "pkg/other"] {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(fixture().join(dir)).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for path in files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "py")) {
            let rel = path.strip_prefix(fixture()).unwrap().display().to_string();
            for (i, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
                let Some((_, marks)) = line.split_once("# LINT: ") else { continue };
                for item in marks.split(", ") {
                    let item = item.trim();
                    if !item.starts_with("PG") {
                        continue;
                    }
                    let code = &item[..5];
                    let only =
                        item[5..].trim().strip_prefix('(').and_then(|r| r.get(..2)).filter(|v| v.starts_with('v'));
                    if only.is_none_or(|v| v == version) {
                        out.insert((code.to_string(), rel.clone(), i + 1));
                    }
                }
            }
        }
    }
    out
}

fn check_rule(code: &str, version: &str) {
    let report = run(&args(version, Some(&[code])));
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let want: BTreeSet<_> = expected(version).into_iter().filter(|(c, _, _)| c == code).collect();
    let got = found(&report);
    assert_eq!(got, want, "{code} at {version}: findings (left) vs markers (right)");
    assert!(!want.is_empty() || code == "PG203" && version == "v2", "{code} has fixture cases at {version}");
    insta::assert_snapshot!(format!("{code}_{version}"), command::render_text(&report, &fixture()));
}

#[test]
fn pg101_dead_patch_target() {
    check_rule("PG101", "v1");
    check_rule("PG101", "v2");
}

#[test]
fn pg102_orphaned_override() {
    check_rule("PG102", "v1");
    check_rule("PG102", "v2");
}

#[test]
fn pg103_suppressed_undefined_name() {
    check_rule("PG103", "v1");
}

#[test]
fn pg104_unresolved_import() {
    check_rule("PG104", "v1");
    check_rule("PG104", "v2");
}

#[test]
fn pg201_call_site_signature() {
    check_rule("PG201", "v1");
}

#[test]
fn pg202_sibling_signature_drift() {
    check_rule("PG202", "v1");
}

#[test]
fn pg203_dropped_parameters() {
    check_rule("PG203", "v1");
}

#[test]
fn default_rules_find_exactly_the_markers() {
    for version in ["v1", "v2"] {
        let report = run(&args(version, None));
        assert_eq!(found(&report), expected(version), "{version}");
        assert_eq!(report.exit_code(), 1);
        // `# noqa: PG101` on one line, per-file-ignores PG1 on another file.
        assert_eq!(report.suppressed, 2, "{version}");
    }
}

/// `lint` drops each config's generated module once its own rules have run
/// (`LintContext::settle`); `lint_buffers` (the server's) keeps every
/// config whole. The project rules (PG202 reads each config's overridden
/// signatures) must not see the difference: both report the same findings
/// with the default rules, at both upstream versions.
#[test]
fn settled_configs_report_what_whole_ones_do() {
    for version in ["v1", "v2"] {
        let a = args(version, None);
        let settled = run(&a);
        let whole = command::lint_buffers(&a, &fixture(), patchgen_config::Overlay::default(), false)
            .expect("lint_buffers runs")
            .report;
        assert!(found(&settled).iter().any(|(c, _, _)| c == "PG202") || version == "v2", "PG202 has a case at v1");
        assert_eq!(settled.diagnostics, whole.diagnostics, "{version}");
    }
}

#[test]
fn ignore_and_extend_select() {
    let mut a = args("v1", None);
    a.ignore = vec!["PG1".into(), "PG202".into()];
    let codes: BTreeSet<String> = run(&a).diagnostics.into_iter().map(|d| d.code).collect();
    assert_eq!(codes, ["PG201", "PG203"].into_iter().map(String::from).collect());
    let mut a = args("v1", Some(&["PG103"]));
    a.extend_select = vec!["PG104".into()];
    let codes: BTreeSet<String> = run(&a).diagnostics.into_iter().map(|d| d.code).collect();
    assert_eq!(codes, ["PG103", "PG104"].into_iter().map(String::from).collect());
}

#[test]
fn unknown_selector_is_a_usage_error() {
    let err = command::lint(&args("v1", Some(&["PG999"])), &fixture()).unwrap_err();
    assert!(err.message().contains("unknown rule selector `PG999`"), "{}", err.message());
}

#[test]
fn clean_selection_exits_zero() {
    let mut a = args("v1", Some(&["PG102"]));
    a.modules = vec!["pkg.other.other_gpu_patch_gen_config".into()];
    let report = run(&a);
    assert!(report.diagnostics.is_empty());
    assert_eq!(report.exit_code(), 0);
}

#[test]
fn findings_point_at_config_and_generated_file() {
    let report = run(&args("v1", Some(&["PG103"])));
    let d = report.diagnostics.iter().find(|d| d.message.contains("UndefinedThing")).unwrap();
    assert!(d.location.as_ref().unwrap().path.ends_with("pkg/toy/toy_gpu_patch_gen_config.py"));
    let generated = &d.related[0].location;
    assert!(generated.path.ends_with("pkg/toy/generated/patched_modeling_toy_gpu.py"), "{generated:?}");
    assert!(generated.line > 0);
}

#[test]
fn json_and_github_formats() {
    let report = run(&args("v1", Some(&["PG102"])));
    let json: serde_json::Value = serde_json::from_str(&command::render_json(&report)).unwrap();
    assert_eq!(json["upstream"], "1.0.0");
    assert_eq!(json["diagnostics"][0]["code"], "PG102");
    assert_eq!(json["diagnostics"][0]["name"], "orphaned-override");
    assert_eq!(json["diagnostics"][0]["location"]["line"], 77);
    let gh = command::render_github(&report, &fixture());
    assert!(gh.starts_with("::error file=pkg/toy/toy_gpu_patch_gen_config.py,line=77,col=25,endLine=77,endColumn=48,title=PG102 orphaned-override::"), "{gh}");
}

#[test]
fn statistics_count_per_rule() {
    let report = run(&args("v1", None));
    let stats = report.statistics();
    let pg201 = stats.iter().find(|(c, _, _)| c == "PG201").unwrap();
    assert_eq!(pg201.2, expected("v1").iter().filter(|(c, _, _)| c == "PG201").count());
}

#[test]
fn rule_docs_have_the_four_sections() {
    for r in RULES {
        let doc = r.doc_text();
        assert!(doc.starts_with(&format!("{} {}: ", r.code, r.name)), "{}", r.code);
        for section in ["## What it does", "## Why is this bad?", "## Example", "## Use instead"] {
            assert!(doc.contains(section), "{} lacks {section}", r.code);
        }
    }
    let one = command::rule_text(&RuleQuery::One("pg101".into())).unwrap();
    assert!(one.starts_with("# PG101 dead-patch-target\n"));
    let by_name = command::rule_text(&RuleQuery::One("dead-patch-target".into())).unwrap();
    assert_eq!(one, by_name);
    assert!(command::rule_text(&RuleQuery::One("PG999".into())).is_err());
    let all = command::rule_text(&RuleQuery::All).unwrap();
    assert_eq!(all.matches("\n## What it does").count(), RULES.len());
}

/// `docs/rules/` is generated from the rule sources; `UPDATE_DOCS=1` rewrites it.
#[test]
fn docs_rules_match_the_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules");
    let files = patchgen_lint::docs::files();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in &files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    for (name, text) in &files {
        let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert_eq!(&on_disk, text, "docs/rules/{name} is stale: run `UPDATE_DOCS=1 cargo test --test lint docs_rules`");
    }
    let listed: BTreeSet<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let wanted: BTreeSet<String> = files.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(listed, wanted, "docs/rules/ holds exactly the generated files");
}

/// A config lint cannot evaluate is `PG000` at the failing node: line,
/// column and range of the unknown keyword (found in the text here).
#[test]
fn a_config_error_is_pg000_at_the_failing_node() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("toy");
    common::copy_tree(&fixture(), &root);
    let text = "from patchgen import PatchConfig\n\nconfig = PatchConfig(\n    source_module=\"transformers.models.toy.modeling_toy\",\n    target_file=\"patched_broken.py\",\n)\nconfig.add_import(\"os\", nmes=[\"path\"])\n";
    std::fs::write(root.join("pkg/toy/broken_patch_gen_config.py"), text).unwrap();
    let mut a = args("v1", None);
    a.modules = vec!["pkg.toy.broken_patch_gen_config".into()];
    let report = command::lint(&a, &root).expect("lint runs");
    let d = report.errors.iter().find(|d| d.code == "PG000").unwrap_or_else(|| panic!("no PG000: {:?}", report.errors));
    assert_eq!(d.message, "`add_import()` got an unexpected keyword argument `nmes`");
    assert_eq!(d.help.as_deref(), Some("did you mean `names=`?"));
    let at = d.location.as_ref().expect("located");
    let (line, column) = text.lines().enumerate().find_map(|(i, l)| l.find("nmes=").map(|c| (i + 1, c + 1))).unwrap();
    assert_eq!((at.line, at.column), (line, column), "{d:?}");
    assert_eq!(at.end, Some((line, column + "nmes=[\"path\"]".len())));
    assert_eq!(report.exit_code(), 2);
}
