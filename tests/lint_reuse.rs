//! PG307 reuse-upstream-differs on the fixture project
//! `tests/fixtures/lint/reuse/` against the transformers 5.9.0 wheel: the
//! reuses of Qwen3's norm, MLP and rotary patches that `patchgen new` used
//! to write for olmo2, apertus, arcee, cohere, ernie4_5, helium and phi3,
//! written by hand. The expected findings come from the independent script
//! `scripts/reuse-check.py` (python's `ast` over the configs and the
//! wheel): the same calls, the same first differing upstream lines; the
//! mistral config and the NPU config sharing by import stay silent.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use patchgen_lint::{Options as LintArgs, lint, render_text};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/reuse")
}

#[test]
fn pg307_reports_each_unfaithful_reuse_at_its_call() {
    let Some(wheel) = common::wheel("5.9.0") else { return };
    let dir = fixture();
    let args = LintArgs {
        modules: Vec::new(),
        select: Some(vec!["PG307".into()]),
        extend_select: Vec::new(),
        ignore: Vec::new(),
        upstream: Some(wheel.to_string_lossy().into_owned()),
        config_name: "config".into(),
        project: Some(dir.clone()),
        no_download: true,
        jobs: Some(1),
        no_cache: true,
        verbose: false,
        unsafe_fixes: false,
        env: patchgen_core::settings::Env::capture(),
        reporter: Default::default(),
    };
    let report = lint(&args, &dir).expect("the fixture project lints");
    assert!(report.errors.is_empty(), "configs failed: {:?}", report.errors);
    let mut ours: Vec<String> = report
        .diagnostics
        .iter()
        .map(|d| {
            let l = d.location.as_ref().expect("located");
            let upstream_line = d.message.split(".py:").nth(1).and_then(|s| s.split(' ').next()).unwrap_or("?");
            format!("{}:{} {upstream_line}", l.path.strip_prefix(&dir).unwrap_or(&l.path).display(), l.line)
        })
        .collect();
    ours.sort();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/reuse-check.py");
    let out = Command::new("python3").arg(&script).arg(&dir).arg(&wheel).output().expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut expected: Vec<String> = stdout
        .lines()
        .filter(|l| l.contains(" differs from "))
        .map(|l| {
            let place = l.split(": ").next().unwrap();
            let upstream_line = l.split("upstream line ").nth(1).and_then(|s| s.split(':').next()).unwrap();
            format!("{place} {upstream_line}")
        })
        .collect();
    expected.sort();
    assert_eq!(expected.len(), 10, "the script finds the 10 unfaithful reuses:\n{stdout}");
    assert_eq!(ours, expected, "{}", render_text(&report, &dir));
    let olmo2_norm =
        report.diagnostics.iter().find(|d| d.message.contains("`Olmo2RMSNorm.forward`")).expect("olmo2 norm");
    assert!(olmo2_norm.message.contains("written for `Qwen3RMSNorm.forward`"), "{}", olmo2_norm.message);
    // Olmo2's forward differs from its signature on (no annotation on `hidden_states`).
    assert!(
        olmo2_norm.message.contains("modeling_olmo2.py:60 `def forward(self, hidden_states)"),
        "{}",
        olmo2_norm.message
    );
}
