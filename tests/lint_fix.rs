//! `patchgen lint --fix | --diff | --add-noqa` and the rules about what an
//! upstream change leaves behind (PG106 attribute drift, PG107 stale drop,
//! PG108 placeholder shadowing upstream), on the fixture project
//! `tests/fixtures/lint/fixes` (its `# LINT:` markers are the expected
//! findings) and on copies of it and of `tests/fixtures/lint/models`:
//! - every fix round-trips: the finding it fixes is gone after `--fix`;
//! - the JSON `fix` field is what `--fix` writes: its edits, applied by
//!   Python (the independent oracle: positions are lines and characters),
//!   give the fixed files byte for byte;
//! - a fix touches no line outside its edits (Python's `difflib` lists the
//!   lines that changed);
//! - `--diff` shows what `--fix` then writes, and writes nothing;
//! - `--add-noqa` silences every finding.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use patchgen_lint::fix::{self, Mode, Selection};
use patchgen_lint::{LintReport, Options, lint, render_text};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint").join(name)
}

fn args(upstream: &str, select: Option<&[&str]>, project: &Path) -> Options {
    Options {
        select: select.map(|s| s.iter().map(|c| c.to_string()).collect()),
        upstream: Some(upstream.to_string()),
        project: Some(project.to_path_buf()),
        no_download: true,
        jobs: Some(2),
        no_cache: true,
        ..Options::default()
    }
}

/// A copy of fixture `name` in a temporary directory.
fn copy(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    common::copy_tree(&fixture(name), tmp.path());
    tmp
}

/// `(code, file, line)` of every finding, relative to `root`.
fn found(report: &LintReport, root: &Path) -> BTreeSet<(String, String, usize)> {
    report
        .diagnostics
        .iter()
        .map(|d| {
            let l = d.location.as_ref().expect("located");
            (d.code.clone(), l.path.strip_prefix(root).unwrap_or(&l.path).display().to_string(), l.line)
        })
        .collect()
}

/// The findings the `# LINT:` markers of the `fixes` fixture announce at `version`.
fn expected(version: &str) -> BTreeSet<(String, String, usize)> {
    let rel = "pkg/mini/mini_gpu_patch_gen_config.py";
    let text = std::fs::read_to_string(fixture("fixes").join(rel)).unwrap();
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let Some((_, marks)) = line.split_once("# LINT: ") else { continue };
        for item in marks.split(", ").filter(|m| m.starts_with("PG")) {
            let only = item[5..].trim().strip_prefix('(').and_then(|r| r.get(..2));
            if only.is_none_or(|v| v == version) {
                out.insert((item[..5].to_string(), rel.to_string(), i + 1));
            }
        }
    }
    out
}

#[test]
fn new_rules_find_what_the_markers_announce() {
    let root = fixture("fixes");
    for version in ["v1", "v2"] {
        let a = args(&format!("upstream/{version}"), Some(&["PG101", "PG106", "PG107", "PG108"]), &root);
        let report = lint(&a, &root).unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(found(&report, &root), expected(version), "{version}: findings (left) vs markers (right)");
        insta::assert_snapshot!(format!("fixes_{version}"), render_text(&report, &root));
    }
}

#[test]
fn messages_name_what_the_attribute_and_the_target_became() {
    let root = fixture("fixes");
    let report = lint(&args("upstream/v2", None, &root), &root).unwrap();
    let messages: Vec<&str> = report.diagnostics.iter().map(|d| d.message.as_str()).collect();
    let has = |needle: &str| messages.iter().any(|m| m.contains(needle));
    assert!(has(
        "reads `self.layer_type`, which `MiniDecoderLayer` does not define at transformers 2.0.0; did you mean `self.block_type`?"
    ));
    assert!(has("did you mean `self.scorer.weights_proj`?"));
    // `skip_topk`, a near name the body reads too, is another attribute: no suggestion.
    let next = messages.iter().find(|m| m.contains("reads `self.next_skip_topk`")).expect("next_skip_topk reported");
    assert!(!next.contains("did you mean"), "{next}");
    assert!(has(
        "`MiniNaiveMoe`; the patch is not applied although the generated header lists it; did you mean `MiniExperts`?"
    ));
    assert!(has("`MiniMlp`; the patch is not applied although the generated header lists it; did you mean `MiniMLP`?"));
    // A typo is a typo, not a pin bump: no `survey` advice.
    let typo = report.diagnostics.iter().find(|d| d.message.contains("`MiniMlp`")).unwrap();
    assert!(!typo.help.as_deref().unwrap_or_default().contains("survey"), "{:?}", typo.help);
    // JSON: every finding has a `fix` (null or an object of ruff's shape).
    let json: serde_json::Value = serde_json::from_str(&patchgen_lint::render_json(&report)).unwrap();
    for d in json["diagnostics"].as_array().unwrap() {
        let fix = &d["fix"];
        assert!(fix.is_null() || fix["edits"][0]["start"]["line"].is_u64(), "{d}");
        if !fix.is_null() {
            assert!(["safe", "unsafe", "display-only"].contains(&fix["applicability"].as_str().unwrap()));
        }
    }
}

/// Every project file under `root` (relative path → text).
fn files(root: &Path) -> std::collections::BTreeMap<String, String> {
    common::walk(root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .map(|p| (p.strip_prefix(root).unwrap().display().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect()
}

/// Python applying the edits of `fixes` (JSON) to the files under `root`,
/// printing the fixed files as JSON: lines are 1-based, columns 1-based
/// characters, edits applied from the last to the first.
const APPLY: &str = r#"
import json, sys
fixes = json.load(open(sys.argv[1]))
out = {}
by_path = {}
for fix in fixes:
    for e in fix["edits"]:
        key = (e["path"], e["start"]["line"], e["start"]["column"], e["end"]["line"], e["end"]["column"], e["content"])
        by_path.setdefault(e["path"], set()).add(key)
for path, edits in by_path.items():
    lines = open(path, encoding="utf-8", newline="").read().split("\n")
    def offset(line, column):
        return sum(len(l) + 1 for l in lines[: line - 1]) + column - 1
    text = "\n".join(lines)
    for (_, sl, sc, el, ec, content) in sorted(edits, key=lambda k: (k[1], k[2]), reverse=True):
        text = text[: offset(sl, sc)] + content + text[offset(el, ec):]
    out[path] = text
json.dump(out, sys.stdout)
"#;

/// Python's `difflib`: the 1-based lines of `old` that `new` changed.
const CHANGED: &str = r#"
import difflib, json, sys
old = open(sys.argv[1], encoding="utf-8").read().splitlines()
new = open(sys.argv[2], encoding="utf-8").read().splitlines()
changed = []
for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
    if tag != "equal":
        changed.extend(range(i1 + 1, max(i2, i1 + 1) + 1))
json.dump(changed, sys.stdout)
"#;

fn python(script: &str, args: &[&Path]) -> serde_json::Value {
    let out = Command::new("python3").arg("-c").arg(script).args(args).output().expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// For each (fixture, upstream, code): the fixes of that code's findings,
/// applied by `--fix --unsafe-fixes` on a copy, equal Python applying the
/// JSON edits; no line outside the edits changed; the findings are gone.
#[test]
fn each_fix_round_trips_and_is_what_the_json_says() {
    let cases: &[(&str, &str, &str)] = &[
        ("fixes", "upstream/v2", "PG101"),
        ("fixes", "upstream/v1", "PG101"),
        ("fixes", "upstream/v2", "PG106"),
        ("fixes", "upstream/v2", "PG107"),
        ("fixes", "upstream/v2", "PG108"),
        ("models", "upstream", "PG301"),
        ("models", "upstream", "PG303"),
        ("models", "upstream", "PG306"),
    ];
    for &(name, upstream, code) in cases {
        let tmp = copy(name);
        let root = tmp.path();
        let mut a = args(upstream, Some(&[code]), root);
        a.unsafe_fixes = true;
        let before = lint(&a, root).unwrap();
        let fixes: Vec<&patchgen_diagnostics::fix::Fix> =
            before.diagnostics.iter().filter_map(|d| d.the_fix()).collect();
        assert!(!fixes.is_empty(), "{name} {upstream} {code}: a finding with a fix");
        let fixed_messages: BTreeSet<&str> =
            before.diagnostics.iter().filter(|d| d.the_fix().is_some()).map(|d| d.message.as_str()).collect();
        let json = tmp.path().join("fixes.json");
        std::fs::write(&json, serde_json::to_string(&fixes).unwrap()).unwrap();
        let originals = files(root);
        let expected = python(APPLY, &[&json]);
        let report = fix::run(&a, root, Mode::Write, Selection::SafeAndUnsafe).unwrap();
        let outcome = report.fixed.as_ref().unwrap();
        assert!(outcome.reverted.is_empty(), "{code}: {:?}", outcome.reverted);
        assert_eq!(outcome.rounds, 1, "{code}: one round fixes them all");
        // The fixed files are what the JSON edits give.
        for (path, text) in expected.as_object().unwrap() {
            assert_eq!(&std::fs::read_to_string(path).unwrap(), text.as_str().unwrap(), "{code}: {path}");
        }
        // No line outside the edits changed.
        let edited: BTreeSet<(String, usize)> = fixes
            .iter()
            .flat_map(|f| &f.edits)
            .flat_map(|e| (e.start.line..=e.end.line).map(move |l| (e.path.display().to_string(), l)))
            .collect();
        for (rel, old) in &originals {
            let path = root.join(rel);
            let now = std::fs::read_to_string(&path).unwrap();
            if &now == old {
                continue;
            }
            let old_copy = tmp.path().join("old.py");
            std::fs::write(&old_copy, old).unwrap();
            for line in python(CHANGED, &[&old_copy, &path]).as_array().unwrap() {
                let line = line.as_u64().unwrap() as usize;
                let key = (path.display().to_string(), line);
                // A line changed by an insertion at its start belongs to the edit before it too.
                let near = edited.contains(&key) || edited.contains(&(key.0.clone(), line.saturating_sub(1)));
                assert!(near, "{code}: {rel}:{line} changed outside the fix's edits");
            }
        }
        // Round trip: the fixed findings are gone.
        let after = lint(&a, root).unwrap();
        assert!(after.errors.is_empty(), "{code}: {:?}", after.errors);
        for d in &after.diagnostics {
            assert!(!fixed_messages.contains(d.message.as_str()), "{code}: still there after --fix: {}", d.message);
        }
    }
}

#[test]
fn safe_fixes_only_without_unsafe_fixes_and_diff_writes_nothing() {
    let tmp = copy("fixes");
    let root = tmp.path();
    let a = args("upstream/v2", None, root);
    let originals = files(root);
    let diff = fix::run(&a, root, Mode::Diff, Selection::Safe).unwrap();
    assert_eq!(files(root), originals, "--diff writes nothing");
    let outcome = diff.fixed.clone().unwrap();
    assert_eq!(diff.exit_code(), 1);
    let summary = patchgen_lint::run::summary(&diff);
    assert_eq!(summary, "Would fix 3 errors (5 additional fixes available with `--unsafe-fixes`).\n");
    // `--fix` then writes exactly what the diff showed.
    let written = fix::run(&a, root, Mode::Write, Selection::Safe).unwrap();
    for f in &outcome.files {
        let rel = f.path.strip_prefix(root).unwrap().display().to_string();
        let now = std::fs::read_to_string(&f.path).unwrap();
        assert_eq!(common::apply_unified_diff(&originals[&rel], &f.diff), now, "{rel}");
    }
    let summary = patchgen_lint::run::summary(&written);
    assert_eq!(
        summary,
        "Found 9 errors (3 fixed, 6 remaining).\nNo fixes available (5 hidden fixes can be enabled with the `--unsafe-fixes` option).\n"
    );
    // Only safe fixes: the unsafe findings are all still there.
    let codes: Vec<&str> = written.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes.iter().filter(|c| **c == "PG107").count(), 0);
    assert_eq!(codes.iter().filter(|c| **c == "PG106" || **c == "PG101" || **c == "PG108").count(), 6);
}

#[test]
fn add_noqa_silences_every_finding() {
    let tmp = copy("fixes");
    let root = tmp.path();
    let a = args("upstream/v2", None, root);
    let report = fix::run(&a, root, Mode::AddNoqa, Selection::Safe).unwrap();
    assert_eq!(report.exit_code(), 0);
    assert_eq!(patchgen_lint::run::summary(&report), "Added 9 noqa directives.\n");
    let after = lint(&a, root).unwrap();
    assert!(after.diagnostics.is_empty(), "{}", render_text(&after, root));
    assert_eq!(after.suppressed, 9);
}

/// PG306's fix of an `__init__` override the config already has, with two
/// `AutoModel.from_config` calls (the same callee for the vision and the
/// text model): each call gets the generated class of its own sub-config
/// (it once gave both the first one's, found on VeOmni's qwen3_vl).
#[test]
fn pg306_fixes_each_call_of_a_config_override_by_its_sub_config() {
    let tmp = copy("models");
    let root = tmp.path();
    let config = root.join("pkg/models/toyvl/toyvl_gpu_patch_gen_config.py");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "\n\n@config.override_method(\"ToyVLModel.__init__\", description=\"own constructor\")\ndef toyvl_model_init_patched(self, config):\n    super(ToyVLModel, self).__init__(config)\n    self.visual = AutoModel.from_config(config.vision_config)\n    self.language_model = AutoModel.from_config(config=config.text_config)\n",
    );
    std::fs::write(&config, &text).unwrap();
    let mut a = args("upstream", Some(&["PG306"]), root);
    a.unsafe_fixes = true;
    let report = fix::run(&a, root, Mode::Write, Selection::SafeAndUnsafe).unwrap();
    let outcome = report.fixed.as_ref().unwrap();
    assert!(outcome.reverted.is_empty(), "{:?}", outcome.reverted);
    let fixed = std::fs::read_to_string(&config).unwrap();
    assert!(fixed.contains("    self.visual = ToyVLVisionModel._from_config(config.vision_config)\n"), "{fixed}");
    assert!(
        fixed.contains("    self.language_model = ToyVLTextModel._from_config(config=config.text_config)\n"),
        "{fixed}"
    );
}
