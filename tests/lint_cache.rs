//! `lint` through the result cache gives the report of `lint --no-cache`
//! (issue 15: "used by check, generate/--all and lint").
//!
//! A copy of the lint fixture project goes through random sequences of
//! changes — a config edited (a finding added or fixed), a project module
//! it imports, an upstream module (a class removed: findings appear), the
//! upstream switched between two versions, `[tool.patchgen.lint]`
//! settings, a checked-in generated file written, changed or deleted, a
//! file deleted, a file rewritten with the same bytes — and after each
//! step lint runs with the cache and without: same findings (rendered
//! text), same errors, same exit code. Expected values come from the
//! uncached run, an independent path (nothing is read from the cache).

mod common;

use std::path::{Path, PathBuf};

use patchgen_lint::{self as command, Options as LintArgs};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/toy")
}

fn args(upstream: &str, no_cache: bool) -> LintArgs {
    LintArgs {
        modules: Vec::new(),
        select: Some(vec!["ALL".into()]),
        extend_select: Vec::new(),
        ignore: Vec::new(),
        upstream: Some(format!("upstream/{upstream}")),
        config_name: "config".into(),
        project: None,
        no_download: true,
        jobs: Some(2),
        no_cache,
        verbose: true,
        unsafe_fixes: false,
        env: patchgen_core::settings::Env::capture(),
        reporter: Default::default(),
    }
}

#[derive(Clone, Debug)]
enum Op {
    EditConfig(u8),
    EditModule(u8),
    EditUpstream(u8),
    SwitchUpstream,
    LintSettings(u8),
    CheckedIn(u8),
    Delete(u8),
    Touch(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..3).prop_map(Op::EditConfig),
        (0u8..2).prop_map(Op::EditModule),
        (0u8..3).prop_map(Op::EditUpstream),
        Just(Op::SwitchUpstream),
        (0u8..3).prop_map(Op::LintSettings),
        (0u8..3).prop_map(Op::CheckedIn),
        (0u8..2).prop_map(Op::Delete),
        (0u8..3).prop_map(Op::Touch),
    ]
}

const GPU: &str = "pkg/toy/toy_gpu_patch_gen_config.py";
const OPS: &str = "pkg/ops.py";
const CHECKED_IN: &str = "pkg/toy/generated/patched_modeling_toy_gpu.py";

struct Project {
    _top: tempfile::TempDir,
    root: PathBuf,
    upstream: &'static str,
}

impl Project {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn apply(&mut self, op: &Op) {
        let original = |rel: &str| std::fs::read_to_string(fixture().join(rel)).unwrap_or_default();
        match op {
            Op::EditConfig(0) => self.write(GPU, &original(GPU)),
            // A patch on a method that does not exist upstream.
            Op::EditConfig(1) => self.write(
                GPU,
                &format!(
                    "{}\n\n@config.override_method(\"ToyModel.no_such_method\")\ndef extra(self):\n    return 1\n",
                    original(GPU)
                ),
            ),
            Op::EditConfig(_) => self.write(GPU, &original(GPU).replace("fused_op", "fused_op_renamed")),
            Op::EditModule(0) => self.write(OPS, &original(OPS)),
            Op::EditModule(_) => self.write(OPS, &format!("{}\n\ndef later():\n    return 2\n", original(OPS))),
            Op::EditUpstream(k) => {
                let rel = format!("upstream/{}/transformers/models/toy/modeling_toy.py", self.upstream);
                let text = original(&rel);
                let text = match k {
                    0 => text,
                    1 => format!("{text}\n\nclass ToyAddedLater:\n    pass\n"),
                    _ => text.replacen("class ", "class Renamed", 1),
                };
                self.write(&rel, &text);
            }
            Op::SwitchUpstream => self.upstream = if self.upstream == "v1" { "v2" } else { "v1" },
            Op::LintSettings(k) => {
                let base = original("pyproject.toml");
                let text = match k {
                    0 => base,
                    1 => format!("{base}\"pkg/toy/*.py\" = [\"PG104\"]\n"),
                    _ => base.replace("extend-framework-hooks = [\"toy_runtime_hook\"]", ""),
                };
                self.write("pyproject.toml", &text);
            }
            Op::CheckedIn(0) => {
                let _ = std::fs::remove_file(self.path(CHECKED_IN));
            }
            Op::CheckedIn(1) => self.write(CHECKED_IN, "# Based on: transformers==0.0.1\nx = 1\n"),
            Op::CheckedIn(_) => self.write(CHECKED_IN, "# Based on: transformers==9.9.9\nclass ToyModel:\n    pass\n"),
            Op::Delete(0) => {
                let _ = std::fs::remove_file(self.path(OPS));
            }
            Op::Delete(_) => {
                let _ = std::fs::remove_file(self.path("pkg/other/other_npu_patch_gen_config.py"));
            }
            Op::Touch(k) => {
                let rel = [GPU, OPS, "pyproject.toml"][*k as usize];
                if let Ok(bytes) = std::fs::read(self.path(rel)) {
                    std::fs::write(self.path(rel), bytes).unwrap();
                }
            }
        }
    }

    /// (exit code, rendered findings and errors, cache note).
    fn lint(&self, no_cache: bool) -> (i32, String, Option<String>) {
        match command::lint(&args(self.upstream, no_cache), &self.root) {
            Ok(r) => (r.exit_code(), command::render_text(&r, &self.root), r.cache_note.clone()),
            Err(e) => (2, e.to_string(), None),
        }
    }
}

fn case(ops: &[Op], hits: &std::sync::Mutex<(usize, usize)>) -> Result<(), TestCaseError> {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("toy");
    common::copy_tree(&fixture(), &root);
    let mut p = Project { _top: top, root, upstream: "v1" };
    let _ = p.lint(false);
    for (i, op) in ops.iter().enumerate() {
        p.apply(op);
        let (code, text, note) = p.lint(false);
        let (fresh_code, fresh_text, fresh_note) = p.lint(true);
        prop_assert_eq!(fresh_note, None);
        prop_assert_eq!(code, fresh_code, "step {} ({:?}) of {:?}", i, op, ops);
        prop_assert_eq!(&text, &fresh_text, "step {} ({:?}) of {:?}", i, op, ops);
        // The same again, now that the entry may have been stored.
        let (code2, text2, note2) = p.lint(false);
        prop_assert_eq!((code2, &text2), (fresh_code, &fresh_text), "step {} again", i);
        let mut h = hits.lock().unwrap();
        for n in [note, note2].into_iter().flatten() {
            if n == "hit" {
                h.0 += 1;
            } else if n.starts_with("miss") {
                h.1 += 1;
            }
        }
    }
    prop_assert!(!p.path(".patchgen_cache").join("entries").read_dir().map(|d| d.count() == 0).unwrap_or(true));
    Ok(())
}

#[test]
fn lint_with_the_cache_reports_what_lint_without_it_does() {
    let cases = std::env::var("PATCHGEN_CACHE_PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(8);
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let hits = std::sync::Mutex::new((0, 0));
    let result = runner.run(&proptest::collection::vec(op(), 1..6), |ops| case(&ops, &hits));
    if let Err(e) = result {
        panic!("{e}");
    }
    let (h, m) = *hits.lock().unwrap();
    eprintln!("lint cache hits {h}, misses {m}");
    assert!(h > 0 && m > 0, "hits {h} misses {m}");
}
