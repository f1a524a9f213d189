//! `patchgen reference`: files from a local wheel built here by python3
//! (zipfile + hashlib write the RECORD, as wheel builders do), never the
//! network.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use patchgen_core::reference::{self, Options, Request as ReferenceArgs};

const MODELING_V1: &str = "\"\"\"Toy.\"\"\"\nimport torch\n\n\nclass ToyMLP:\n    def __init__(self, config):\n        self.x = 1\n\n    def forward(self, x):\n        return x\n\n\nclass ToyGone:\n    pass\n\n\ndef rotate_half(x):\n    return x\n";
const MODELING_V2: &str = "\"\"\"Toy.\"\"\"\nimport torch\n\n\nclass ToyMLP:\n    def __init__(self, config, intermediate_size=None):\n        self.x = 1\n\n    def forward(self, x):\n        return x\n\n    def extra(self):\n        return 2\n\n\nclass ToyNew:\n    pass\n\n\ndef rotate_half(x):\n    return x\n";

/// Build `transformers-<version>-py3-none-any.whl` in `dir` with python3:
/// `files` as (member, text); `tamper` rewrites one member after RECORD
/// was computed.
fn build_wheel(dir: &Path, version: &str, files: &[(&str, &str)], tamper: Option<(&str, &str)>) -> PathBuf {
    let wheel = dir.join(format!("transformers-{version}-py3-none-any.whl"));
    let spec = serde_json::json!({
        "wheel": wheel,
        "version": version,
        "files": files.iter().map(|(m, t)| serde_json::json!([m, t])).collect::<Vec<_>>(),
        "tamper": tamper.map(|(m, t)| serde_json::json!([m, t])),
    });
    let script = r#"
import base64, hashlib, json, sys, zipfile
spec = json.loads(sys.stdin.read())
files = [(m, t.encode()) for m, t in spec["files"]]
files.append(("transformers/__init__.py", ('__version__ = "%s"\n' % spec["version"]).encode()))
record_name = "transformers-%s.dist-info/RECORD" % spec["version"]
rows = []
for m, b in files:
    digest = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
    rows.append("%s,sha256=%s,%d" % (m, digest, len(b)))
rows.append(record_name + ",,")
tamper = dict([spec["tamper"]]) if spec["tamper"] else {}
with zipfile.ZipFile(spec["wheel"], "w", zipfile.ZIP_DEFLATED) as z:
    for m, b in files:
        z.writestr(m, tamper[m].encode() if m in tamper else b)
    z.writestr(record_name, "\n".join(rows) + "\n")
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("python3 is needed to build the test wheel");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), spec.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "python3 could not build the wheel");
    wheel
}

fn toy_files(modeling: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("transformers/models/toy/__init__.py", ""),
        ("transformers/models/toy/modeling_toy.py", modeling),
        ("transformers/models/toy/configuration_toy.py", "class ToyConfig:\n    model_type = \"toy\"\n"),
        ("transformers/models/toy_vl/modeling_toy_vl.py", "class ToyVLModel:\n    pass\n"),
        ("transformers/models/toy_vl/configuration_toy_vl.py", "class ToyVLConfig:\n    pass\n"),
        ("transformers/models/toy_vl/processing_toy_vl.py", "class ToyVLProcessor:\n    pass\n"),
        ("transformers/models/toy_vl/video_processing_toy_vl.py", "class ToyVLVideoProcessor:\n    pass\n"),
        ("transformers/models/toy_vl/modular_toy_vl.py", "x = 1\n"),
        ("transformers/models/llama/modeling_llama.py", "class LlamaModel:\n    pass\n"),
    ]
}

struct Setup {
    _dir: tempfile::TempDir,
    project: PathBuf,
    cache: PathBuf,
}

/// A project pinned to 1.0 (dependency group), wheels 1.0 and 2.0 cached.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(project.join("pkg/models")).unwrap();
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(
        project.join("pyproject.toml"),
        "[project]\nname = \"p\"\n[dependency-groups]\nstable = [\"transformers==1.0\"]\n[tool.patchgen]\nsearch_root = \"pkg/models\"\npackage_prefix = \"pkg.models\"\n",
    )
    .unwrap();
    build_wheel(&cache, "1.0", &toy_files(MODELING_V1), None);
    build_wheel(&cache, "2.0", &toy_files(MODELING_V2), None);
    Setup { _dir: dir, project, cache }
}

fn args(model: &str) -> ReferenceArgs {
    ReferenceArgs {
        model: model.into(),
        pin: None,
        old: None,
        new: None,
        also: Vec::new(),
        no_download: true,
        package: "transformers".into(),
    }
}

fn run(s: &Setup, args: ReferenceArgs) -> Result<reference::Report, reference::ReferenceError> {
    reference::run(&Options {
        args,
        cwd: s.project.clone(),
        cache_dir: Some(s.cache.clone()),
        env: patchgen_core::settings::Env::capture(),
        reporter: Default::default(),
    })
}

#[test]
fn files_are_the_wheels_bytes_at_the_pinned_version() {
    let s = setup();
    let report = run(&s, args("toy")).unwrap();
    let pin = report.pin.as_ref().unwrap();
    assert_eq!(pin.version, "1.0");
    assert!(pin.source.contains("[dependency-groups] stable"), "{}", pin.source);
    let dir = s.project.join(".agents_workspace/hf_reference/toy/v1.0");
    assert_eq!(std::fs::read(dir.join("modeling_toy.py")).unwrap(), MODELING_V1.as_bytes());
    // Not multimodal: the modeling file only.
    assert_eq!(report.versions[0].files.len(), 1);
    assert!(reference::render_text(&report).contains("pin 1.0 (from "));

    // --pin, and an --also kind.
    let mut a = args("toy");
    a.pin = Some("2.0".into());
    a.also = vec!["configuration".into()];
    run(&s, a).unwrap();
    let dir = s.project.join(".agents_workspace/hf_reference/toy/v2.0");
    assert_eq!(std::fs::read_to_string(dir.join("modeling_toy.py")).unwrap(), MODELING_V2);
    assert!(dir.join("configuration_toy.py").is_file());
}

#[test]
fn multimodal_models_bring_their_processors_and_configuration() {
    let s = setup();
    let report = run(&s, args("toy_vl")).unwrap();
    let mut names: Vec<String> =
        report.versions[0].files.iter().map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        ["configuration_toy_vl.py", "modeling_toy_vl.py", "processing_toy_vl.py", "video_processing_toy_vl.py"]
    );
}

#[test]
fn the_pin_falls_back_to_the_generated_header_then_the_package() {
    let s = setup();
    std::fs::write(
        s.project.join("pyproject.toml"),
        "[tool.patchgen]\nsearch_root = \"pkg/models\"\npackage_prefix = \"pkg.models\"\n",
    )
    .unwrap();
    let generated = s.project.join("pkg/models/toy/generated");
    std::fs::create_dir_all(&generated).unwrap();
    std::fs::write(generated.join("patched_modeling_toy.py"), "# x\n#  Based on: transformers==2.0\n").unwrap();
    let report = run(&s, args("toy")).unwrap();
    assert_eq!(report.pin.as_ref().unwrap().version, "2.0");
    assert!(report.pin.as_ref().unwrap().source.contains("Based on"));

    std::fs::remove_dir_all(&generated).unwrap();
    // No pin anywhere and no package on the search path: a usage error.
    let err = run(&s, args("toy")).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("--pin"), "{err}");
}

#[test]
fn a_record_mismatch_is_an_error_and_nothing_is_written() {
    let s = setup();
    build_wheel(
        &s.cache,
        "1.0",
        &toy_files(MODELING_V1),
        Some(("transformers/models/toy/modeling_toy.py", "<html>404</html>\n")),
    );
    let err = run(&s, args("toy")).unwrap_err();
    assert_eq!(err.exit_code(), 1);
    let msg = err.to_string();
    assert!(msg.contains("modeling_toy.py") && msg.contains("RECORD"), "{msg}");
    assert!(!s.project.join(".agents_workspace/hf_reference/toy").exists());
}

#[test]
fn a_missing_model_is_named_with_the_nearest_names() {
    let s = setup();
    let err = run(&s, args("toi")).unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.exit_code(), 1);
    assert!(msg.contains("no model `toi`"), "{msg}");
    let help = msg.lines().find(|l| l.contains("nearest model names")).unwrap();
    assert!(help.contains("toy") && help.contains("toy_vl"), "{help}");
}

#[test]
fn old_new_diff_equals_python_difflib() {
    let s = setup();
    let mut a = args("toy");
    a.old = Some("1.0".into());
    a.new = Some("2.0".into());
    let report = run(&s, a).unwrap();
    let base = s.project.join(".agents_workspace/hf_reference/toy");
    let diff = report.diff.as_ref().unwrap();
    assert_eq!(diff.path, base.join("v1.0_to_v2.0.diff"));
    let script = "import difflib, sys\nd = sys.argv[1]\na = open(d + '/v1.0/modeling_toy.py').readlines()\nb = open(d + '/v2.0/modeling_toy.py').readlines()\nsys.stdout.write(''.join(difflib.unified_diff(a, b, 'v1.0/modeling_toy.py', 'v2.0/modeling_toy.py')))\n";
    let out = Command::new("python3").args(["-c", script]).arg(&base).output().expect("python3");
    assert!(out.status.success());
    let expected = String::from_utf8(out.stdout).unwrap();
    assert!(!expected.is_empty());
    assert_eq!(std::fs::read_to_string(&diff.path).unwrap(), expected);

    let symbols = diff.files[0].symbols.as_ref().unwrap();
    assert_eq!(symbols.classes.added, ["ToyNew"]);
    assert_eq!(symbols.classes.removed, ["ToyGone"]);
    assert_eq!(symbols.classes.changed, ["ToyMLP"]);
    assert_eq!(symbols.methods.changed, ["ToyMLP.__init__"]);
    assert_eq!(symbols.methods.added, ["ToyMLP.extra"]);
    assert!(symbols.functions.is_empty());
}

#[test]
fn a_model_directory_or_config_module_names_its_source_module() {
    let s = setup();
    let model = s.project.join("pkg/models/toy2");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(s.project.join("pkg/__init__.py"), "").unwrap();
    std::fs::write(s.project.join("pkg/models/__init__.py"), "").unwrap();
    std::fs::write(model.join("__init__.py"), "").unwrap();
    std::fs::write(
        model.join("toy2_gpu_patch_gen_config.py"),
        "from patchgen import PatchConfig\nconfig = PatchConfig(source_module=\"transformers.models.toy.modeling_toy\", target_file=\"patched_modeling_toy_gpu.py\")\n",
    )
    .unwrap();
    let report = run(&s, args("toy2")).unwrap();
    assert_eq!(report.model, "toy");
    let report = run(&s, args("pkg.models.toy2.toy2_gpu_patch_gen_config")).unwrap();
    assert_eq!(report.model, "toy");
}

#[test]
fn warns_when_git_does_not_ignore_the_reference_dir() {
    if Command::new("git").arg("--version").output().is_err() {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "git is needed");
        return;
    }
    let s = setup();
    // No repository: no warning.
    assert!(run(&s, args("toy")).unwrap().warnings.is_empty());
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&s.project).status().unwrap().success());
    let w = run(&s, args("toy")).unwrap().warnings;
    assert!(w.iter().any(|w| w.contains("not ignored by git")), "{w:?}");
    std::fs::write(s.project.join(".gitignore"), ".agents_workspace/\n").unwrap();
    assert!(run(&s, args("toy")).unwrap().warnings.is_empty());
}

#[test]
fn cli_exit_codes() {
    let s = setup();
    let env = common::TestEnv::get();
    let cache_root = s.cache.parent().unwrap().join("cache-root");
    std::fs::create_dir_all(&cache_root).unwrap();
    std::os::unix::fs::symlink(&s.cache, cache_root.join("wheels")).unwrap();
    let cache = cache_root.to_string_lossy().into_owned();
    let ok = env.patchgen_env(&s.project, "", &["reference", "toy", "--no-download"], &[("PATCHGEN_CACHE", &cache)]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert!(ok.stdout.contains("pin 1.0"), "{}", ok.stdout);
    let missing =
        env.patchgen_env(&s.project, "", &["reference", "toi", "--no-download"], &[("PATCHGEN_CACHE", &cache)]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("nearest model names"), "{}", missing.stderr);
    let usage = env.patchgen_env(&s.project, "", &["reference", "toy", "--old", "1.0"], &[("PATCHGEN_CACHE", &cache)]);
    assert_eq!(usage.code, 2);
}
