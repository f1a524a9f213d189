//! The model-contract (PG3xx), MoE (PG4xx) and convention (PG5xx) lint
//! rules on the fixture project `tests/fixtures/lint/models/`: every rule
//! fires where a fixture config makes its mistake (in more than one shape)
//! and stays silent on the configs that do the same thing right (the
//! `*_npu_*` configs, `toyfused`, `toyvltext`). Snapshots hold the rendered
//! diagnostics; the assertions next to them pin the must-not-fire cases.

use std::path::{Path, PathBuf};

use patchgen_lint::{LintReport, Options as LintArgs, lint, render_text};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/models")
}

/// Lint arguments for the project at `project`.
fn args(select: Option<&[&str]>, upstream: &str, project: &Path) -> LintArgs {
    LintArgs {
        modules: Vec::new(),
        select: select.map(|s| s.iter().map(|c| c.to_string()).collect()),
        extend_select: Vec::new(),
        ignore: Vec::new(),
        upstream: Some(upstream.to_string()),
        config_name: "config".into(),
        project: Some(project.to_path_buf()),
        no_download: true,
        jobs: Some(1),
        no_cache: true,
        verbose: false,
        unsafe_fixes: false,
        env: patchgen_core::settings::Env::capture(),
        reporter: Default::default(),
    }
}

/// Lint the fixture with `select`, against `upstream` (a directory).
fn lint_fixture(select: &[&str], upstream: &str) -> (LintReport, String) {
    let dir = fixture();
    let report = lint(&args(Some(select), upstream, &dir), &dir).expect("the fixture project lints");
    assert!(report.errors.is_empty(), "configs failed: {:?}", report.errors);
    let text = render_text(&report, &dir);
    (report, text)
}

/// The fixture's upstream as another transformers version: a copy with
/// `__version__` rewritten.
fn upstream_as(version: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy(&fixture().join("upstream"), tmp.path());
    std::fs::write(tmp.path().join("transformers/__init__.py"), format!("__version__ = \"{version}\"\n")).unwrap();
    tmp
}

/// `path:line` of every finding, relative to the fixture.
fn places(report: &LintReport) -> Vec<String> {
    let root = fixture();
    report
        .diagnostics
        .iter()
        .map(|d| {
            let l = d.location.as_ref().expect("located");
            format!("{}:{}", l.path.strip_prefix(&root).unwrap_or(&l.path).display(), l.line)
        })
        .collect()
}

fn assert_silent_on(report: &LintReport, files: &[&str]) {
    for p in places(report) {
        assert!(!files.iter().any(|f| p.starts_with(f)), "unexpected finding at {p}");
    }
}

#[test]
fn pg301_logits_to_keep_order() {
    let (report, text) = lint_fixture(&["PG301"], "upstream");
    // The renamed-variable shape fires on the loss call; the slice-first
    // NPU config and the name_map-reused dense forward do not.
    assert_eq!(places(&report), ["pkg/models/toy/toy_gpu_patch_gen_config.py:68"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg302_output_fields_dropped() {
    let (report, text) = lint_fixture(&["PG302"], "upstream");
    assert_eq!(
        places(&report),
        ["pkg/models/toy/toy_gpu_patch_gen_config.py:75", "pkg/models/toymoe/toymoe_gpu_patch_gen_config.py:56"]
    );
    assert!(report.diagnostics[1].message.contains("`router_logits`"), "the name_map case names the MoE field");
    insta::assert_snapshot!(text);
}

#[test]
fn pg303_auto_docstring_contract() {
    let (report, text) = lint_fixture(&["PG303"], "upstream");
    // Undocumented new parameter (warning) and an undocumented dataclass
    // return type (error) on GPU; the NPU config documents both.
    assert_eq!(
        places(&report),
        ["pkg/models/toy/toy_gpu_patch_gen_config.py:57", "pkg/models/toy/toy_gpu_patch_gen_config.py:59"]
    );
    insta::assert_snapshot!(text);
}

#[test]
fn pg304_partial_rotary_full_kernel() {
    let (report, text) = lint_fixture(&["PG304"], "upstream");
    assert_silent_on(&report, &["pkg/models/toy/toy_npu"]);
    assert_eq!(places(&report), ["pkg/models/toy/toy_gpu_patch_gen_config.py:38"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg305_init_weights_container_only_from_5_16() {
    let (before, _) = lint_fixture(&["PG305"], "upstream");
    assert!(before.diagnostics.is_empty(), "5.9 still initialises parameter-less modules");
    let upstream = upstream_as("5.16.1");
    let (report, text) = lint_fixture(&["PG305"], upstream.path().to_str().unwrap());
    // A single class and a tuple member; the leaf router next to it is fine.
    assert_eq!(
        places(&report),
        ["pkg/models/toymoe/toymoe_gpu_patch_gen_config.py:34", "pkg/models/toymoe/toymoe_gpu_patch_gen_config.py:37"]
    );
    insta::assert_snapshot!(text);
}

#[test]
fn pg306_automodel_bypass() {
    let (report, text) = lint_fixture(&["PG306"], "upstream");
    // GPU keeps the AutoModel constructor of a patched tower; NPU overrides
    // it; the text-only registration never builds the composite; the
    // unpatched text tower is not reported.
    assert_eq!(places(&report), ["pkg/models/toyvl/toyvl_gpu_patch_gen_config.py:13"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg401_moe_converter_missing() {
    let (report, text) = lint_fixture(&["PG401"], "upstream");
    // toymoe: alias of a per-expert recipe, no converter; toyfused has one.
    assert_eq!(places(&report), ["pkg/models/toymoe/__init__.py:4"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg402_converter_shape_ambiguity() {
    let (report, text) = lint_fixture(&["PG402"], "upstream");
    assert_eq!(places(&report), ["pkg/models/toyfused/checkpoint_tensor_converter.py:21"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg403_experts_implementation_retained() {
    let (report, text) = lint_fixture(&["PG403"], "upstream");
    // Points at the override of the decorated class; the replaced class of
    // toyfused drops the decorator.
    assert_eq!(places(&report), ["pkg/models/toymoe/toymoe_gpu_patch_gen_config.py:25"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg404_liger_mlp_intermediate_size() {
    let (report, text) = lint_fixture(&["PG404"], "upstream");
    assert_eq!(places(&report), ["pkg/models/toymoe/toymoe_gpu_patch_gen_config.py:16"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg5xx_are_off_by_default() {
    let dir = fixture();
    let report = lint(&args(None, "upstream", &dir), &dir).unwrap();
    assert!(!report.rules.iter().any(|r| r.starts_with("PG5")), "{:?}", report.rules);
    for code in ["PG301", "PG302", "PG303", "PG304", "PG305", "PG306", "PG401", "PG402", "PG403", "PG404"] {
        assert!(report.rules.iter().any(|r| r == code), "{code} is on by default");
    }
}

#[test]
fn pg501_patch_markers() {
    let (report, text) = lint_fixture(&["PG501"], "upstream");
    assert_silent_on(&report, &["pkg/models/toy/toy_npu"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg502_registry_hygiene() {
    let (_, text) = lint_fixture(&["PG502"], "upstream");
    insta::assert_snapshot!(text);
}

#[test]
fn pg503_test_coverage() {
    let (report, text) = lint_fixture(&["PG503"], "upstream");
    assert_silent_on(&report, &["pkg/models/toyfused"]);
    insta::assert_snapshot!(text);
}

#[test]
fn pg504_pin_consistency() {
    let (report, text) = lint_fixture(&["PG504"], "upstream");
    assert_eq!(
        places(&report),
        ["pkg/models/toy/toy_gpu_patch_gen_config.py:12", "pkg/models/toy/toy_gpu_patch_gen_config.py:60"]
    );
    insta::assert_snapshot!(text);
}

#[test]
fn noqa_on_the_pointed_line_silences() {
    // Copy the fixture, add `# noqa: PG403` where PG403 points, lint again.
    let tmp = tempfile::tempdir().unwrap();
    copy(&fixture(), tmp.path());
    let cfg = tmp.path().join("pkg/models/toymoe/toymoe_gpu_patch_gen_config.py");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let edited: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == 25 { format!("{l}  # noqa: PG403") } else { l.to_string() })
        .collect();
    std::fs::write(&cfg, edited.join("\n") + "\n").unwrap();
    let report = lint(&args(Some(&["PG403"]), "upstream", tmp.path()), tmp.path()).unwrap();
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    assert_eq!(report.suppressed, 1);
}

fn copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
