//! `patchgen bump` on the demo project (examples/demo: toylib 1.0.0 in
//! `upstream/`, 2.0.0 in `upstream-2.0/`), checked against `git merge-file
//! --diff3` on the same three texts and against the files themselves.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Output, TestEnv, copy_tree};

const TOY: &str = "demo.toy.toy_gpu_patch_gen_config";
const CONFIG: &str = "demo/toy/toy_gpu_patch_gen_config.py";

fn demo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo"), &root);
    (dir, root)
}

fn bump(root: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["bump", "--package", "toylib", "--from", "upstream", "--to", "upstream-2.0"];
    args.extend_from_slice(extra);
    args.push(TOY);
    TestEnv::get().patchgen(root, "upstream", &args)
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

/// `git merge-file -p --diff3` of the attention override, dedented and
/// renamed as a person would prepare it.
fn git_merge(ours: &str, base: &str, theirs: &str) -> (String, i32) {
    let dir = tempfile::tempdir().unwrap();
    let write = |n: &str, t: &str| {
        let p = dir.path().join(n);
        std::fs::write(&p, t).unwrap();
        p
    };
    let (o, b, t) = (write("o", ours), write("b", base), write("t", theirs));
    let out = Command::new("git")
        .args(["merge-file", "-p", "--diff3", "-L", "config", "-L", "toylib 1.0.0", "-L", "toylib 2.0.0"])
        .args([&o, &b, &t])
        .output()
        .expect("git on PATH");
    (String::from_utf8(out.stdout).unwrap(), out.status.code().unwrap())
}

/// `ToyAttention.forward` of an upstream version, dedented.
fn upstream_forward(root: &Path, dir: &str) -> String {
    let text = read(root, &format!("{dir}/toylib/modeling_toy.py"));
    let start = text
        .find("    def forward(\n        self,\n        hidden_states: torch.Tensor,\n        position_embeddings")
        .unwrap();
    let end = start + text[start..].find("\n\n\n").unwrap() + 1;
    text[start..end].lines().map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l))).collect()
}

fn patch_forward(config: &str) -> String {
    let start = config.find("def toy_attention_forward(").unwrap();
    let end = start + config[start..].find("\n\n\n").unwrap() + 1;
    config[start..end].to_string()
}

#[test]
fn carries_a_hunk_and_writes_a_conflict_as_git_does() {
    let (_keep, root) = demo();
    let before = read(&root, CONFIG);
    let out = bump(&root, &["--format", "json"]);
    assert_eq!(out.code, 1, "a conflict remains: {}{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["command"], "bump");
    assert_eq!((doc["from"].as_str(), doc["to"].as_str()), (Some("1.0.0"), Some("2.0.0")));
    let config = &doc["configs"][0];
    let attention =
        config["targets"].as_array().unwrap().iter().find(|t| t["target"] == "ToyAttention.forward").unwrap();
    assert_eq!(attention["status"], "conflict");
    assert_eq!(attention["upstream_hunks"], 2);
    assert_eq!(attention["carried"], 1);
    let after = read(&root, CONFIG);
    let marker = attention["conflicts"][0]["line"].as_u64().unwrap() as usize;
    assert_eq!(after.lines().nth(marker - 1), Some("<<<<<<< config"));

    // The oracle: git merge-file on the same three texts.
    let base = upstream_forward(&root, "upstream");
    let theirs = upstream_forward(&root, "upstream-2.0");
    let ours = patch_forward(&before).replace("def toy_attention_forward(", "def forward(");
    let (git, conflicts) = git_merge(&ours, &base, &theirs);
    assert_eq!(conflicts, 1);
    let expected = git.replace("def forward(", "def toy_attention_forward(");
    assert_eq!(patch_forward(&after), expected);

    // Nothing else of the config changed.
    let (b, a) = (before.replace(&patch_forward(&before), ""), after.replace(&patch_forward(&after), ""));
    assert_eq!(a, b);

    // The other targets are unchanged, the config is not generated, and the
    // drift gate names the marker with its own code.
    let rms = config["targets"].as_array().unwrap().iter().find(|t| t["target"] == "ToyRMSNorm.forward").unwrap();
    assert_eq!(rms["status"], "unchanged");
    assert_eq!(config["generation"], "skipped");
    let check = TestEnv::get().patchgen(&root, "upstream-2.0", &["--check", "--format", "json"]);
    assert_ne!(check.code, 0);
    let doc: serde_json::Value = serde_json::from_str(&check.stdout).unwrap();
    let d = doc["diagnostics"].as_array().unwrap().iter().find(|d| d["code"] == "PGE011").expect("PGE011");
    assert_eq!(d["location"]["line"].as_u64(), Some(marker as u64));
    assert!(!check.stdout.contains("syntax error"));
}

#[test]
fn idempotent_and_from_equals_to_changes_nothing() {
    let (_keep, root) = demo();
    let out = bump(&root, &["--conflicts", "leave"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let once = read(&root, CONFIG);
    assert!(once.contains("        **kwargs,\n") || once.contains("    **kwargs,\n"), "the carried hunk");
    assert!(!once.contains("<<<<<<<"), "--conflicts=leave writes no marker");
    let again = bump(&root, &["--conflicts", "leave"]);
    assert_eq!(read(&root, CONFIG), once, "a second run changes nothing: {}", again.stdout);
    let same = TestEnv::get().patchgen(
        &root,
        "upstream",
        &["bump", "--package", "toylib", "--from", "upstream-2.0", "--to", "upstream-2.0", TOY],
    );
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
    assert_eq!(read(&root, CONFIG), once);
}

#[test]
fn diff_writes_nothing() {
    let (_keep, root) = demo();
    let before = read(&root, CONFIG);
    let out = bump(&root, &["--diff"]);
    assert_eq!(read(&root, CONFIG), before);
    assert!(out.stdout.contains("+<<<<<<< config"), "{}", out.stdout);
    assert!(out.stdout.contains("--- a/demo/toy/toy_gpu_patch_gen_config.py"), "{}", out.stdout);
}

#[test]
fn refuses_a_dirty_work_tree() {
    let (_keep, root) = demo();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
            .arg(&root)
            .args(args)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "demo"]);
    std::fs::write(root.join(CONFIG), read(&root, CONFIG) + "\n# edited\n").unwrap();
    let path = format!("{}:{}", TestEnv::get().ruff_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut args = vec!["bump", "--package", "toylib", "--from", "upstream", "--to", "upstream-2.0", TOY];
    let out = TestEnv::get().patchgen_env(&root, "upstream", &args, &[("PATH", &path)]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("--allow-dirty"), "{}", out.stderr);
    args.push("--allow-dirty");
    let out = TestEnv::get().patchgen_env(&root, "upstream", &args, &[("PATH", &path)]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
}

#[test]
fn survey_places_each_upstream_hunk_in_the_patch() {
    let (_keep, root) = demo();
    let out = TestEnv::get().patchgen(
        &root,
        "upstream",
        &["survey", "--package", "toylib", "--from", "upstream", "--to", "upstream-2.0", "--format", "json", TOY],
    );
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let f = doc["findings"].as_array().unwrap().iter().find(|f| f["target"] == "ToyAttention.forward").unwrap();
    assert_eq!(f["kind"], "signature_changed");
    let hunks = f["details"]["body"]["hunks"].as_array().unwrap();
    let status: Vec<&str> = hunks.iter().map(|h| h["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["carryable", "conflict"]);
    assert_eq!(f["details"]["body"]["change"], "code");
    let config = read(&root, CONFIG);
    // An insertion: the place in the config is before `) -> torch.Tensor:`.
    let at = &hunks[0]["config_lines"];
    let line = at["line"].as_u64().unwrap() as usize;
    assert_eq!(at["end"].as_u64(), Some(line as u64));
    assert_eq!(config.lines().nth(line - 1), Some(") -> torch.Tensor:"));
    assert!(config.lines().nth(line - 2).unwrap().contains("attention_mask: Optional[torch.Tensor] = None,"));
    assert!(f["next"].as_str().unwrap().contains("patchgen bump"));
}

/// The mechanical fixes of `lint --fix` run inside the bump, at the new
/// upstream (the `fixes` lint fixture, upstream v1 → v2): the renamed
/// class retargeted, the stale drops and the shadowing placeholder gone;
/// linting the result at v2 finds none of them again.
#[test]
fn applies_the_lint_fixes_a_bump_needs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/fixes"), &root);
    let module = "pkg.mini.mini_gpu_patch_gen_config";
    let env = TestEnv::get();
    // `--conflicts leave`: the indexer override conflicts (a config holding markers gets no fix).
    let args = [
        "bump",
        "--from",
        "upstream/v1",
        "--to",
        "upstream/v2",
        "--allow-dirty",
        "--conflicts",
        "leave",
        "--format",
        "json",
        module,
    ];
    let out = env.patchgen(&root, "upstream/v1", &args);
    let doc: serde_json::Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    let config = &doc["configs"][0];
    let mut codes: Vec<&str> =
        config["fixes"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    codes.sort();
    // PG101 twice: the renamed MoE class, and `MiniMlp` (a misspelt `MiniMLP`, in both versions).
    assert_eq!(codes, ["PG101", "PG101", "PG107", "PG107", "PG107", "PG108"], "{}", out.stdout);
    let moe =
        config["targets"].as_array().unwrap().iter().find(|t| t["target"] == "MiniNaiveMoe").expect("the moe target");
    assert_eq!(moe["status"], "retargeted");
    let text = read(&root, "pkg/mini/mini_gpu_patch_gen_config.py");
    assert!(text.contains("@config.replace_class(\"MiniExperts\")"), "{text}");
    assert!(
        !text.contains("gone_name") && !text.contains("never_imported") && !text.contains("fast_conv = None"),
        "{text}"
    );
    let lint = env.patchgen(
        &root,
        "upstream/v2",
        &["lint", "--upstream", "upstream/v2", "--select", "PG101,PG107,PG108", "--format", "json", module],
    );
    let after: serde_json::Value = serde_json::from_str(&lint.stdout).unwrap();
    let left: Vec<(String, String)> = after["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap().to_string(), d["message"].as_str().unwrap().to_string()))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Carrying is independent of config order: two configs sharing a patch
/// function (the NPU config imports the GPU config's and registers it
/// too) bumped in either order give the same files, byte for byte, and the
/// shared function is ported once, in the config that defines it.
#[test]
fn carrying_does_not_depend_on_config_order() {
    let gpu = "pkg.mini.mini_gpu_patch_gen_config";
    let npu = "pkg.mini.mini_npu_patch_gen_config";
    let run = |order: [&str; 2]| {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/fixes"), &root);
        std::fs::write(
            root.join("pkg/mini/mini_npu_patch_gen_config.py"),
            "from patchgen import PatchConfig\n\nfrom .mini_gpu_patch_gen_config import mini_decoder_layer_forward_patched, mini_indexer_forward_patched\n\nconfig = PatchConfig(\n    source_module=\"transformers.models.mini.modeling_mini\",\n    target_file=\"patched_modeling_mini_npu.py\",\n)\n\nconfig.override_method(\"MiniIndexer.forward\", replacement=mini_indexer_forward_patched)\nconfig.override_method(\"MiniDecoderLayer.forward\", replacement=mini_decoder_layer_forward_patched)\n",
        )
        .unwrap();
        let args = [
            "bump",
            "--from",
            "upstream/v1",
            "--to",
            "upstream/v2",
            "--allow-dirty",
            "--no-fix",
            "--format",
            "json",
            order[0],
            order[1],
        ];
        let out = TestEnv::get().patchgen(&root, "upstream/v1", &args);
        let doc: serde_json::Value =
            serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
        let mut statuses: Vec<(String, String, String)> = doc["configs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| {
                c["targets"].as_array().unwrap().iter().map(move |t| {
                    (
                        c["config"].as_str().unwrap().to_string(),
                        t["target"].as_str().unwrap().to_string(),
                        t["status"].as_str().unwrap().to_string(),
                    )
                })
            })
            .collect();
        statuses.sort();
        let files: Vec<(String, String)> =
            ["pkg/mini/mini_gpu_patch_gen_config.py", "pkg/mini/mini_npu_patch_gen_config.py"]
                .iter()
                .map(|f| (f.to_string(), read(&root, f)))
                .collect();
        (statuses, files)
    };
    let (a_status, a_files) = run([gpu, npu]);
    let (b_status, b_files) = run([npu, gpu]);
    assert_eq!(a_files, b_files);
    assert_eq!(a_status, b_status);
    // The shared function is ported in the GPU config, which defines it.
    let shared: Vec<&(String, String, String)> = a_status.iter().filter(|(_, _, s)| s == "shared").collect();
    assert!(!shared.is_empty() && shared.iter().all(|(c, _, _)| c == npu), "{a_status:?}");
    assert_ne!(
        a_files[0].1,
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/lint/fixes/pkg/mini/mini_gpu_patch_gen_config.py")
        )
        .unwrap(),
        "the bump changed the GPU config"
    );
}
