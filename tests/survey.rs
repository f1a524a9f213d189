//! `patchgen survey` on the hand-made upstream pair in
//! `tests/fixtures_survey/` (toylib 1.0.0 → 2.0.0): every kind and detail,
//! through the library API and `run_cli`, as JSON, text and markdown.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use patchgen_core::settings::Env;
use patchgen_core::survey::{self, Options, report};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures_survey")
}

fn options(from: &Path, to: &Path) -> Options {
    let mut o =
        Options::new(&from.to_string_lossy(), &to.to_string_lossy(), fixtures().join("project"), Env::capture());
    o.package = "toylib".into();
    o.download = false;
    o
}

fn dirs() -> Options {
    options(&fixtures().join("upstream/old"), &fixtures().join("upstream/new"))
}

fn json(opts: &Options) -> Value {
    let report = survey::survey(opts).expect("survey runs");
    serde_json::from_str(&report::json(&report)).expect("valid JSON")
}

const GPU: &str = "pkg.patches.toy_gpu_patch_gen_config";
const NPU: &str = "pkg.patches.toy_npu_patch_gen_config";
const CLEAN: &str = "pkg.patches.toy_clean_patch_gen_config";

fn finding<'a>(doc: &'a Value, config: &str, target: &str) -> &'a Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["config"] == config && f["target"] == target)
        .unwrap_or_else(|| panic!("no finding for {config} {target}"))
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect()
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array().map(|a| a.iter().map(|x| x["name"].as_str().unwrap()).collect()).unwrap_or_default()
}

#[test]
fn report_header_and_schema() {
    let doc = json(&dirs());
    assert_eq!(doc["package"], "toylib");
    assert_eq!(doc["from"], "1.0.0");
    assert_eq!(doc["to"], "2.0.0");
    assert_eq!(strs(&doc["configs"]), [CLEAN, GPU, NPU]);
    assert_eq!(doc["errors"], serde_json::json!([]));
    let kinds = ["unchanged", "signature_changed", "decorators_changed", "removed", "new_upstream", "added_by_config"];
    for f in doc["findings"].as_array().unwrap() {
        for key in ["config", "target", "patch", "kind", "drifted", "registered_at", "details"] {
            assert!(f.get(key).is_some(), "{key} missing in {f}");
        }
        assert!(kinds.contains(&f["kind"].as_str().unwrap()), "{f}");
        assert!(f["details"].get("from").is_some() && f["details"].get("to").is_some());
    }
}

#[test]
fn every_kind() {
    let doc = json(&dirs());
    let kind = |target: &str| finding(&doc, GPU, target)["kind"].as_str().unwrap().to_string();
    assert_eq!(kind("ToyMLP.forward"), "unchanged");
    assert_eq!(kind("ToyAttention.forward"), "signature_changed");
    assert_eq!(kind("ToyModel.forward"), "decorators_changed");
    assert_eq!(kind("ToyModel._update_mask"), "removed");
    assert_eq!(kind("old_helper"), "removed");
    assert_eq!(kind("ToyModel.get_parallel_plan"), "new_upstream");
    assert_eq!(kind("ToyModel.dummy_forward"), "added_by_config");
    assert_eq!(kind("ToyAttention._injected_helper"), "added_by_config");
    assert_eq!(finding(&doc, GPU, "ToyModel.dummy_forward")["drifted"], false);
    assert_eq!(finding(&doc, GPU, "ToyModel.get_parallel_plan")["details"]["from"], Value::Null);
    assert_eq!(finding(&doc, GPU, "ToyModel.get_parallel_plan")["details"]["to"]["line"], 102);
}

#[test]
fn signature_details() {
    let doc = json(&dirs());
    let sig = &finding(&doc, GPU, "ToyAttention.forward")["details"]["signature"];
    assert_eq!(
        sig["from"],
        "(self, hidden_states, attention_mask, position_ids=None, past_key_value=None, use_cache=False, *, output_attentions=False, **kwargs)"
    );
    assert_eq!(strs(&sig["removed"]), ["use_cache"]);
    assert_eq!(strs(&sig["added"]), ["args", "cache_position"]);
    assert_eq!(sig["renamed"], serde_json::json!([{"from": "past_key_value", "to": "past_key_values"}]));
    assert_eq!(strs(&sig["reordered"]["from"]), ["self", "hidden_states", "attention_mask", "position_ids"]);
    assert_eq!(strs(&sig["reordered"]["to"]), ["self", "hidden_states", "position_ids", "attention_mask"]);
    assert_eq!(
        sig["kind_changed"],
        serde_json::json!([{"name": "output_attentions", "from": "keyword_only", "to": "positional_or_keyword"}])
    );
    assert_eq!(
        sig["default_changed"],
        serde_json::json!([
            {"name": "attention_mask", "from": null, "to": "None"},
            {"name": "position_ids", "from": "None", "to": null}
        ])
    );
    assert_eq!(strs(&sig["replacement_stale"]), ["past_key_value", "use_cache"]);

    // *args / **kwargs gone, a parameter became positional-only.
    let sig = &finding(&doc, GPU, "toy_rotate")["details"]["signature"];
    assert_eq!(sig["to"], "(x, /, dim=-1)");
    assert_eq!(strs(&sig["removed"]), ["args", "kwargs"]);
    assert_eq!(sig["kind_changed"][0]["to"], "positional_only");
    assert_eq!(strs(&sig["replacement_stale"]), ["args", "kwargs"]);
}

#[test]
fn decorator_details() {
    let doc = json(&dirs());
    let d = &finding(&doc, GPU, "ToyModel.forward")["details"]["decorators"];
    assert_eq!(strs(&d["removed"]), ["@can_return_tuple"]);
    assert_eq!(strs(&d["added"]), ["@capture_outputs", "@merge_with_config_defaults"]);
    assert_eq!(d["changed"][0]["to"], "@auto_docstring(custom_intro=\"The toy model.\")");
    let d = &finding(&doc, GPU, "apply_rotary_pos_emb")["details"]["decorators"];
    assert_eq!(strs(&d["removed"]), ["@use_kernel_func_from_hub(\"rotary_pos_emb\")"]);
    assert_eq!(strs(&d["added"]), ["@use_kernel_forward_from_hub(\"rotary_pos_emb\")"]);
}

#[test]
fn replace_class_bases_and_init() {
    let doc = json(&dirs());
    let f = finding(&doc, GPU, "ToyRMSNorm");
    assert_eq!(f["patch"], "replace_class");
    assert_eq!(f["kind"], "signature_changed");
    assert_eq!(f["details"]["bases"], serde_json::json!({"from": ["nn.Module"], "to": ["ToyNormBase"]}));
    let sig = &f["details"]["signature"];
    assert_eq!(sig["to"], "(self, hidden_size, eps=1e-5, *, elementwise_affine=True)");
    assert_eq!(strs(&sig["added"]), ["elementwise_affine"]);
    assert_eq!(sig["default_changed"][0], serde_json::json!({"name": "eps", "from": "1e-6", "to": "1e-5"}));
    assert_eq!(strs(&sig["replacement_stale"]), Vec::<&str>::new());
    assert!(f["details"].get("decorators").is_none(), "the class decorator is unchanged");
}

#[test]
fn names_the_new_module_no_longer_provides() {
    let doc = json(&dirs());
    // Used by a replacement body whose contract is unchanged: still drift.
    let f = finding(&doc, GPU, "ToyMLP.forward");
    assert_eq!(f["kind"], "unchanged");
    assert_eq!(f["drifted"], true);
    assert_eq!(names(&f["details"]["missing_names"]), ["helper_scale"]);
    assert_eq!(f["details"]["missing_names"][0]["from"]["line"], 19);
    // In an annotation; not: builtins, parameters, locals, comprehension
    // variables, names the config's imports / post-import blocks provide.
    let f = finding(&doc, GPU, "ToyAttention.forward");
    assert_eq!(names(&f["details"]["missing_names"]), ["Optional"]);
    // Helpers and post-import blocks.
    let f = finding(&doc, GPU, "toy_scale_helper");
    assert_eq!((f["patch"].as_str(), f["kind"].as_str()), (Some("add_helper"), Some("added_by_config")));
    assert_eq!(names(&f["details"]["missing_names"]), ["GLOBAL_SCALE"]);
    let f = finding(&doc, GPU, "post-import block 1");
    assert_eq!(f["patch"], "add_post_import_block");
    assert_eq!(names(&f["details"]["missing_names"]), ["math"]);
    // Nothing else is reported for names.
    let total: usize = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["config"] == GPU)
        .map(|f| names(&f["details"]["missing_names"]).len())
        .sum();
    assert_eq!(total, 4);
}

#[test]
fn attributes_the_new_class_no_longer_provides() {
    let doc = json(&dirs());
    let f = finding(&doc, GPU, "ToyAttention.forward");
    // `scaling` moved into a submodule; `dropout` was set by the base class
    // in another module. Not reported: `q_proj` (still set), `cached` (the
    // body sets it itself).
    assert_eq!(
        f["details"]["missing_attributes"],
        serde_json::json!([
            {"name": "dropout", "defined_in": "ToyBaseLayer", "line": 7},
            {"name": "scaling", "defined_in": "ToyAttention", "line": 63}
        ])
    );
    // `act_fn` became a class attribute, `up_proj` moved to a base class in
    // the same module: still provided.
    assert!(finding(&doc, GPU, "ToyMLP.forward")["details"].get("missing_attributes").is_none());
    // `self._injected_helper()` is a method the config itself adds.
    assert!(finding(&doc, GPU, "ToyAttention.reset")["details"].get("missing_attributes").is_none());
}

#[test]
fn inherited_methods_are_found_along_the_bases() {
    let doc = json(&dirs());
    let f = finding(&doc, GPU, "ToyAttention.reset");
    assert_eq!(f["kind"], "unchanged");
    assert_eq!(f["details"]["from"]["defined_in"], "ToyBaseLayer");
    assert!(f["details"]["from"]["file"].as_str().unwrap().ends_with("modeling_base.py"));
    assert!(f["details"]["to"].get("defined_in").is_none());
}

#[test]
fn a_config_that_only_extends_another_is_surveyed() {
    let doc = json(&dirs());
    let targets = |config: &str| -> Vec<(String, String)> {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["config"] == config)
            .map(|f| (f["target"].as_str().unwrap().to_string(), f["kind"].as_str().unwrap().to_string()))
            .collect()
    };
    assert_eq!(targets(NPU), targets(GPU));
    assert!(targets(NPU).len() > 10);
}

#[test]
fn only_selected_configs() {
    let mut opts = dirs();
    opts.configs = vec![CLEAN.into()];
    let report = survey::survey(&opts).unwrap();
    assert_eq!(report.configs.len(), 1);
    assert_eq!(report.exit_code(), 0);
    opts.configs = vec!["pkg.patches.no_such_patch_gen_config".into()];
    let err = survey::survey(&opts).expect_err("unknown module is a usage error");
    assert!(err.to_string().contains("no_such_patch_gen_config"), "{err}");
}

fn zip_dir(dir: &Path, wheel: &Path) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(wheel).unwrap());
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for path in common::walk(dir) {
        let name = path.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
        zip.start_file(name, opts).unwrap();
        std::io::Write::write_all(&mut zip, &std::fs::read(&path).unwrap()).unwrap();
    }
    zip.finish().unwrap();
}

/// Findings without upstream locations (which differ between a directory
/// and a wheel).
fn located_free(doc: &Value) -> Vec<Value> {
    let mut findings = doc["findings"].as_array().unwrap().clone();
    for f in &mut findings {
        let details = f["details"].as_object_mut().unwrap();
        details.remove("from");
        details.remove("to");
        details.remove("missing_names");
    }
    findings
}

#[test]
fn versions_from_the_wheel_cache_and_wheel_files() {
    let cache = tempfile::tempdir().unwrap();
    let old = cache.path().join("toylib-1.0.0-py3-none-any.whl");
    zip_dir(&fixtures().join("upstream/old"), &old);
    zip_dir(&fixtures().join("upstream/new"), &cache.path().join("toylib-2.0.0-py3-none-any.whl"));
    let reference = json(&dirs());

    let mut opts = Options::new("1.0.0", "2.0.0", fixtures().join("project"), Env::capture());
    opts.package = "toylib".into();
    opts.download = false;
    opts.cache_dir = Some(cache.path().to_path_buf());
    let doc = json(&opts);
    assert_eq!(doc["from"], "1.0.0");
    assert!(doc["from_location"].as_str().unwrap().ends_with("toylib-1.0.0-py3-none-any.whl"));
    assert_eq!(located_free(&doc), located_free(&reference));
    assert!(doc["findings"][0]["details"]["from"]["file"].as_str().unwrap().contains(".whl!toylib/"));

    // A wheel file as the argument.
    let mut opts = options(&old, &fixtures().join("upstream/new"));
    opts.cache_dir = Some(cache.path().to_path_buf());
    assert_eq!(located_free(&json(&opts)), located_free(&reference));

    // A version that is not cached, without pip: a usage error that says so.
    let mut opts = Options::new("1.0.0", "3.0.0", fixtures().join("project"), Env::capture());
    opts.package = "toylib".into();
    opts.download = false;
    opts.cache_dir = Some(cache.path().to_path_buf());
    let err = survey::survey(&opts).expect_err("usage error");
    assert!(err.to_string().contains("--to no wheel of toylib==3.0.0"), "{err}");
}

fn cli(args: &[&str]) -> i32 {
    let project = fixtures().join("project");
    let mut argv: Vec<OsString> = vec![
        "patchgen".into(),
        "survey".into(),
        "--project".into(),
        project.into(),
        "--package".into(),
        "toylib".into(),
    ];
    argv.extend(args.iter().map(OsString::from));
    patchgen::run_argv(argv)
}

#[test]
fn exit_codes() {
    let old = fixtures().join("upstream/old");
    let new = fixtures().join("upstream/new");
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    assert_eq!(cli(&["--from", old, "--to", new]), 1, "drift");
    assert_eq!(cli(&["--from", old, "--to", new, "--format", "json"]), 1);
    assert_eq!(cli(&["--from", old, "--to", new, "--config", CLEAN]), 0, "nothing drifted");
    assert_eq!(cli(&["--from", old, "--to", old]), 0, "same version");
    assert_eq!(cli(&["--from", old, "--to", "/no/such/dir"]), 2);
    assert_eq!(cli(&["--from", old, "--to", new, "--format", "yaml"]), 2);
    assert_eq!(cli(&["--from", old]), 2, "--to is required");
    assert_eq!(cli(&["--from", old, "--to", new, "--config", "pkg.nope"]), 2);
    assert_eq!(cli(&["--from", old, "--to", "9.9.9", "--no-download"]), 2);
    assert_eq!(cli(&["--help"]), 0);
}

/// Absolute fixture paths replaced, so snapshots are machine-independent.
fn redact(s: &str) -> String {
    s.replace(&fixtures().to_string_lossy().into_owned(), "<fixtures>")
}

#[test]
fn text_and_markdown_snapshots() {
    let mut opts = dirs();
    opts.configs = vec![GPU.into(), CLEAN.into()];
    let report = survey::survey(&opts).unwrap();
    insta::with_settings!({ snapshot_path => "fixtures_survey/snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("text", redact(&report::text(&report, false)));
        insta::assert_snapshot!("text_verbose", redact(&report::text(&report, true)));
        insta::assert_snapshot!("markdown", redact(&report::markdown(&report)));
    });
}

#[test]
fn a_config_whose_module_is_nowhere_is_an_error() {
    let mut opts = dirs();
    opts.project_dir = fixtures().join("project_missing");
    let report = survey::survey(&opts).unwrap();
    assert_eq!(report.exit_code(), 1);
    let doc: Value = serde_json::from_str(&report::json(&report)).unwrap();
    assert_eq!(doc["findings"], serde_json::json!([]));
    assert_eq!(doc["errors"][0]["config"], "pkg.patches.gone_patch_gen_config");
    assert!(doc["errors"][0]["message"].as_str().unwrap().contains("`toylib.modeling_gone` is in neither version"));
    assert!(report::text(&report, false).contains("error: upstream module `toylib.modeling_gone`"));
}

/// `--format json` is the document every command writes (`docs/json.md`):
/// `version`, `command`, and one `PGS…` diagnostic per drifted finding, at
/// the line that registers the patch, next to the survey's own fields.
#[test]
fn json_is_the_shared_document() {
    let doc = json(&dirs());
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["command"], "survey");
    let drifted: Vec<&Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["drifted"] == true).collect();
    let diagnostics = doc["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), drifted.len() + doc["errors"].as_array().unwrap().len());
    for (d, f) in diagnostics.iter().zip(&drifted) {
        assert!(d["code"].as_str().unwrap().starts_with("PGS"), "{d}");
        assert_eq!(d["severity"], "warning");
        assert_eq!(d["config"], f["config"]);
        assert_eq!(d["location"]["path"], f["registered_at"]["file"]);
        assert_eq!(d["location"]["line"], f["registered_at"]["line"]);
        let first = d["message"].as_str().unwrap().lines().next().unwrap().to_string();
        assert_eq!(
            first,
            format!("{} `{}`: {} (1.0.0 → 2.0.0)", str_of(&f["patch"]), str_of(&f["target"]), str_of(&f["kind"]))
        );
    }
    let codes: Vec<&str> = diagnostics.iter().map(|d| d["code"].as_str().unwrap()).collect();
    for code in ["PGS001", "PGS002", "PGS003"] {
        assert!(codes.contains(&code), "{code} in {codes:?}");
    }
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap()
}

/// `--format github`: one workflow annotation per drifted finding.
#[test]
fn github_annotations() {
    let report = survey::survey(&dirs()).expect("survey runs");
    let lines: String =
        report::diagnostics(&report).iter().map(|d| patchgen_diagnostics::render::github(d, &fixtures())).collect();
    insta::with_settings!({snapshot_path => "snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("survey_github", lines);
    });
}
