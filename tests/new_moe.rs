//! `patchgen new` on MoE models of the real transformers wheels: the MoE
//! needs (fused experts, recipe, converter, expert-parallel plan) checked
//! against python3's own `ast` reading of the upstream modeling file and
//! the recipes of `conversion_mapping.py` as written there; the written
//! converter (pattern B) run by python3 + numpy (`tests/new/converter_check.py`)
//! on tiny checkpoints built by `tests/moe/ckpt.py` and compared tensor by
//! tensor with `patchgen moe convert`'s output; `--dry-run` leaving the
//! project byte-identical while printing the plan a real run then writes.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestEnv;

/// The test project's pyproject (shared with the other `new` tests).
const PYPROJECT: &str = include_str!("new/pyproject.toml");

/// The MoE template (written for these tests): one norm patch.
const QWEN3_MOE_CONFIG: &str = r#"# Test licence header.
"""MoE template for the tests."""

import torch
from patchgen import PatchConfig


config = PatchConfig(
    source_module="transformers.models.qwen3_moe.modeling_qwen3_moe",
    target_file="patched_modeling_qwen3_moe_gpu.py",
    description="Qwen3Moe test template",
)


@config.override_method("Qwen3MoeRMSNorm.forward", description="norm in float32")
def qwen3_moe_rms_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    return (self.weight.float() * hidden_states).to(input_dtype)
"#;

const QWEN3_MOE_PLAN: &str = r#"# Test licence header.
from torch.distributed._tensor import Shard

from ....distributed.parallel_plan import ParallelPlan


def get_parallel_plan():
    ep_plan = {
        "model.layers.*.mlp.experts.gate_up_proj": Shard(0),
        "model.layers.*.mlp.experts.down_proj": Shard(0),
    }
    return ParallelPlan(extra_parallel_plan={"ep": ep_plan})
"#;

/// What the project's converters import (the line `new` learns).
const QWEN3_MOE_CONVERTER: &str = "import torch\n\nfrom ...checkpoint_tensor_loading import ConvertedCheckpointTensor\n\n\ndef create_qwen3_moe_checkpoint_tensor_converter(model):\n    return None\n";

const INIT: &str = "# Test licence header.\n\nfrom ..registry import MODELING_REGISTRY\n\n\n@MODELING_REGISTRY.register(\"qwen3_moe\")\ndef register(architecture):\n    return None\n";

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    common::write_files(
        &root,
        &[
            ("pyproject.toml", PYPROJECT),
            ("pkg/__init__.py", ""),
            ("pkg/checkpoint_tensor_loading.py", "class ConvertedCheckpointTensor:\n    pass\n"),
            ("pkg/models/__init__.py", ""),
            ("pkg/models/registry.py", "MODELING_REGISTRY = None\n"),
            ("pkg/models/qwen3_moe/__init__.py", INIT),
            ("pkg/models/qwen3_moe/qwen3_moe_gpu_patch_gen_config.py", QWEN3_MOE_CONFIG),
            ("pkg/models/qwen3_moe/parallel_plan.py", QWEN3_MOE_PLAN),
            ("pkg/models/qwen3_moe/checkpoint_tensor_converter.py", QWEN3_MOE_CONVERTER),
        ],
    );
    Project { _dir: dir, root }
}

fn oracle_python() -> Option<String> {
    match std::env::var("PATCHGEN_TEST_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").as_deref() == Ok("true") => panic!("PATCHGEN_TEST_PYTHON must be set"),
        _ => {
            eprintln!("skipping: PATCHGEN_TEST_PYTHON is not set (run through scripts/test.sh)");
            None
        }
    }
}

fn new(p: &Project, wheel: &Path, args: &[&str]) -> common::Output {
    let mut all = vec!["new"];
    all.extend_from_slice(args);
    TestEnv::get().patchgen(&p.root, &wheel.to_string_lossy(), &all)
}

/// python3's `ast` reading of the upstream modeling file: every class that
/// assigns `self.gate_up_proj = nn.Parameter(...)`, with the names of all
/// the `nn.Parameter`s it assigns, in order.
fn oracle_fused(wheel: &Path, model: &str) -> Vec<(String, Vec<String>)> {
    let script = r#"
import ast, sys, zipfile
text = zipfile.ZipFile(sys.argv[1]).read(f"transformers/models/{sys.argv[2]}/modeling_{sys.argv[2]}.py").decode()
for node in ast.parse(text).body:
    if not isinstance(node, ast.ClassDef):
        continue
    params = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call):
            f = sub.value.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name == "Parameter":
                for t in sub.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        params.append(t.attr)
    if "gate_up_proj" in params:
        print(node.name, " ".join(params))
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(wheel).arg(model).output().expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut parts = l.split_whitespace();
            (parts.next().unwrap().to_string(), parts.map(str::to_string).collect())
        })
        .collect()
}

fn moe_json(out: &common::Output) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    v["moe"].clone()
}

/// The MoE facts of real modules. Expected values: the fused classes and
/// their parameters from python3's `ast` (above); the recipes as
/// `transformers/conversion_mapping.py` writes them — 5.16.1: `"mixtral"`
/// merges `.experts.*.w1/w3.weight` and renames `.block_sparse_moe.` to
/// `.mlp.`; `"qwen2_moe"` merges `mlp.experts.*.gate_proj/up_proj/down_proj`;
/// `"qwen3_vl_moe"` transposes `mlp.experts.gate_up_proj/down_proj`;
/// gpt_oss has no entry; 5.9.0: `"deepseek_v3": "qwen2_moe"` in
/// `_MODEL_TO_CONVERSION_PATTERN`. The expert FQNs as the modeling files
/// nest the modules (`self.model` → `self.layers = nn.ModuleList(...)` →
/// `self.mlp` → `self.experts`; qwen3_vl_moe's text model through
/// `self.language_model = AutoModel.from_config(config.text_config)`).
#[test]
fn moe_needs_of_real_modules_match_the_upstream_sources() {
    struct Case {
        version: &'static str,
        model: &'static str,
        recipe: &'static str,
        alias: Option<&'static str>,
        converter: bool,
        renamings: &'static [(&'static str, &'static str)],
        stack: &'static str,
        plan_fits: bool,
    }
    let cases = [
        Case {
            version: "5.16.1",
            model: "mixtral",
            recipe: "per-expert (w1/w3/w2)",
            alias: None,
            converter: true,
            renamings: &[(".block_sparse_moe.", ".mlp.")],
            stack: "model.layers.*.mlp.experts",
            plan_fits: true,
        },
        Case {
            version: "5.16.1",
            model: "qwen2_moe",
            recipe: "per-expert (gate_proj/up_proj/down_proj)",
            alias: None,
            converter: true,
            renamings: &[],
            stack: "model.layers.*.mlp.experts",
            plan_fits: true,
        },
        Case {
            version: "5.16.1",
            model: "gpt_oss",
            recipe: "none (direct)",
            alias: None,
            converter: false,
            renamings: &[],
            stack: "model.layers.*.mlp.experts",
            plan_fits: false,
        },
        Case {
            version: "5.16.1",
            model: "qwen3_vl_moe",
            recipe: "fused-transposed",
            alias: None,
            converter: true,
            renamings: &[],
            stack: "model.language_model.layers.*.mlp.experts",
            plan_fits: false,
        },
        Case {
            version: "5.9.0",
            model: "deepseek_v3",
            recipe: "per-expert (gate_proj/up_proj/down_proj)",
            alias: Some("qwen2_moe"),
            converter: true,
            renamings: &[],
            stack: "model.layers.*.mlp.experts",
            plan_fits: true,
        },
    ];
    for c in cases {
        let Some(wheel) = common::wheel(c.version) else { return };
        let p = project();
        // qwen3_vl_moe has no VLM template here: the built-in skeleton, no plan to compare.
        let like: &[&str] = if c.model == "qwen3_vl_moe" { &[] } else { &["--like", "qwen3_moe"] };
        let mut args = vec![c.model, "--dry-run", "--format", "json"];
        args.extend_from_slice(like);
        let out = new(&p, &wheel, &args);
        assert_eq!(out.code, 0, "{}: {}\n{}", c.model, out.stdout, out.stderr);
        let moe = moe_json(&out);
        let fused = oracle_fused(&wheel, c.model);
        assert_eq!(fused.len(), 1, "{}: python3 found {fused:?}", c.model);
        let (class, params) = &fused[0];
        assert_eq!(moe["fused"][0]["class"], class.as_str(), "{}", c.model);
        assert_eq!(moe["recipe"], c.recipe, "{}", c.model);
        assert_eq!(moe["recipe_alias"].as_str(), c.alias, "{}", c.model);
        assert_eq!(moe["converter_needed"], c.converter, "{}", c.model);
        let renamings: Vec<(String, String)> = serde_json::from_value(moe["renamings"].clone()).unwrap();
        let want: Vec<(String, String)> = c.renamings.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        assert_eq!(renamings, want, "{}", c.model);
        let mut keys: Vec<String> = serde_json::from_value(moe["ep_model_keys"].clone()).unwrap();
        let mut expected: Vec<String> = params.iter().map(|p| format!("{}.{p}", c.stack)).collect();
        keys.sort();
        expected.sort();
        assert_eq!(keys, expected, "{}", c.model);
        let template_keys = &moe["ep_template_keys"];
        if c.model == "qwen3_vl_moe" {
            assert!(template_keys.is_null(), "{}", c.model);
        } else {
            let mut t: Vec<String> = serde_json::from_value(template_keys.clone()).unwrap();
            t.sort();
            assert_eq!(t == expected, c.plan_fits, "{}: template {t:?}, model {expected:?}", c.model);
        }
        // The text report says the same.
        let text = new(&p, &wheel, &[&[c.model, "--dry-run"][..], like].concat());
        let needed = if c.converter { "checkpoint converter: needed" } else { "checkpoint converter: not needed" };
        assert!(text.stdout.contains(needed), "{}: {}", c.model, text.stdout);
    }
}

/// `python3 -m py_compile` and ruff over written Python files.
fn compile_and_ruff(p: &Project, files: &[PathBuf]) {
    let out = Command::new("python3").args(["-m", "py_compile"]).args(files).output().unwrap();
    assert!(out.status.success(), "py_compile: {}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(TestEnv::get().ruff_dir.join("ruff"))
        .args(["check", "--quiet", "--no-cache"])
        .args(files)
        .current_dir(&p.root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ruff: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run_py(python: &str, script: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(python).arg(script).args(args).output().expect("python");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// Pattern B: the converter `new` writes agrees with `moe convert` on the
/// same tiny checkpoint (names after the recipe's renamings, dtypes,
/// shapes, bytes; its index mapping names the same tensors), is
/// importable, and lint reports no PG401.
#[test]
fn the_written_converter_agrees_with_moe_convert() {
    let Some(python) = oracle_python() else { return };
    let Some(wheel) = common::wheel("5.16.1") else { return };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ckpt = manifest.join("tests/moe/ckpt.py");
    let check = manifest.join("tests/new/converter_check.py");
    // (model, ckpt.py family, renamings from conversion_mapping.py)
    for (model, family, renames) in [
        ("mixtral", "mixtral", &[".block_sparse_moe.", ".mlp."][..]),
        ("qwen2_moe", "qwen3_moe", &[][..]),
        ("qwen3_vl_moe", "qwen3_vl_moe", &[][..]),
    ] {
        let p = project();
        let out = new(&p, &wheel, &[model]);
        assert_eq!(out.code, 0, "{model}: {}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("lint: ") && !out.stdout.contains(": PG401 "), "{model}: {}", out.stdout);
        let dir = p.root.join("pkg/models").join(model);
        let converter = dir.join("checkpoint_tensor_converter.py");
        let init = std::fs::read_to_string(dir.join("__init__.py")).unwrap();
        assert!(init.contains(&format!("staticmethod(create_{model}_checkpoint_tensor_converter)")), "{init}");
        assert!(init.contains(&format!("staticmethod(convert_{model}_fqn_to_index_mapping)")), "{init}");
        let mut written = vec![converter.clone(), dir.join("__init__.py")];
        if dir.join("parallel_plan.py").exists() {
            written.push(dir.join("parallel_plan.py"));
        }
        compile_and_ruff(&p, &written);

        let tmp = tempfile::tempdir().unwrap();
        let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
        let (ok, msg) = run_py(&python, &ckpt, &["make", family, src.to_str().unwrap(), "--shards", "3"]);
        assert!(ok, "{msg}");
        let o =
            TestEnv::get().patchgen(tmp.path(), "", &["moe", "convert", src.to_str().unwrap(), dst.to_str().unwrap()]);
        assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
        let mut args = vec![converter.to_str().unwrap(), src.to_str().unwrap(), dst.to_str().unwrap()];
        if let [old, new] = renames {
            args.extend_from_slice(&["--rename", old, new]);
        }
        let (ok, msg) = run_py(&python, &check, &args);
        assert!(ok, "{model}: {msg}");
        assert!(msg.starts_with("ok: "), "{msg}");

        if family == "qwen3_vl_moe" {
            // Square experts (hidden == 2 * intermediate): moe convert refuses, so must the converter.
            let sq = tmp.path().join("square");
            let (ok, msg) =
                run_py(&python, &ckpt, &["make", family, sq.to_str().unwrap(), "--hidden", "12", "--inter", "6"]);
            assert!(ok, "{msg}");
            let o = TestEnv::get().patchgen(
                tmp.path(),
                "",
                &["moe", "convert", sq.to_str().unwrap(), tmp.path().join("sq-out").to_str().unwrap()],
            );
            assert_ne!(o.code, 0);
            let (ok, msg) = run_py(
                &python,
                &check,
                &[converter.to_str().unwrap(), sq.to_str().unwrap(), "--expect-error", "same shape"],
            );
            assert!(ok, "{msg}");
        }
    }
}

/// Every path under `root` (hidden ones included) with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if e.file_type().unwrap().is_dir() {
                out.insert(rel, Vec::new());
                stack.push(path);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// `--dry-run` runs generation, pruning and lint in a private copy: the
/// project is byte-identical after (no cache directories either), and the
/// plan it prints is what a real run then writes.
#[test]
fn dry_run_shows_the_final_plan_and_writes_nothing() {
    let wheel = TestEnv::get().transformers();
    let p = project();
    let before = snapshot(&p.root);
    let out = new(&p, &wheel, &["qwen2_moe", "--dry-run"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let after = snapshot(&p.root);
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>());
    assert!(before == after, "a file changed");
    assert!(!p.root.join(".patchgen_cache").exists() && !p.root.join(".ruff_cache").exists());
    assert!(out.stdout.contains("would write:"), "{}", out.stdout);
    assert!(out.stdout.contains("lint: ") && !out.stdout.contains("lint: not run"), "{}", out.stdout);
    assert!(!out.stdout.contains("patchgen-new-dry-run-"), "a temporary path leaked: {}", out.stdout);
    let planned: Vec<PathBuf> = out
        .stdout
        .lines()
        .skip_while(|l| *l != "would write:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| PathBuf::from(l.trim().split(" (").next().unwrap()))
        .collect();
    assert!(!planned.is_empty());
    // The real run writes exactly the planned files (generated ones included).
    let real = new(&p, &wheel, &["qwen2_moe"]);
    assert_eq!(real.code, 0, "{}\n{}", real.stdout, real.stderr);
    let written: Vec<PathBuf> = snapshot(&p.root)
        .into_iter()
        .filter(|(k, v)| !before.contains_key(k) && !v.is_empty())
        .map(|(k, _)| p.root.join(k))
        .collect();
    let mut planned_sorted = planned.clone();
    planned_sorted.sort();
    let mut written_sorted = written.clone();
    written_sorted.sort();
    let canon = |v: Vec<PathBuf>| -> Vec<PathBuf> {
        v.into_iter().map(|p| p.parent().unwrap().canonicalize().unwrap().join(p.file_name().unwrap())).collect()
    };
    assert_eq!(canon(planned_sorted), canon(written_sorted));
    // The dropped/carried lines of both runs agree.
    let patches = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with("  reuse") || l.starts_with("  dropped"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(patches(&out.stdout), patches(&real.stdout));
}

/// DeepSeek-V4 (5.9.0): the recipe renames with regular expressions in the
/// base model's namespace (`^layers\.(\d+)\.ffn\.` → `layers.\1.mlp.`),
/// which transformers skips for the generated classes like the expert
/// merge. PG401's decision (fused `DeepseekV4Experts`, per-expert w1/w3/w2
/// recipe) does not depend on an experts patch being carried (the template's
/// has no counterpart here): the converter is written, replays the
/// renamings and the `model.` prefix, and `__init__.py` maps the base
/// model's index keys without the prefix (as VeOmni's own deepseek_v4
/// package does). The converter is run by python3 + numpy on raw-named keys
/// whose expected names are written by hand from `conversion_mapping.py`
/// (`tests/new/converter_renaming_check.py`).
#[test]
fn deepseek_v4_converter_replays_the_recipe_renamings() {
    let Some(python) = oracle_python() else { return };
    let Some(wheel) = common::wheel("5.9.0") else { return };
    let p = project();
    let out = new(&p, &wheel, &["deepseek_v4"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("lint: ") && !out.stdout.contains(": PG401 "), "{}", out.stdout);
    assert!(out.stdout.contains("experts replacement: not carried"), "{}", out.stdout);
    assert!(out.stdout.contains("checkpoint converter: needed"), "{}", out.stdout);
    let dir = p.root.join("pkg/models/deepseek_v4");
    let init = std::fs::read_to_string(dir.join("__init__.py")).unwrap();
    assert!(init.contains("staticmethod(create_deepseek_v4_checkpoint_tensor_converter)"), "{init}");
    // DeepseekV4Model holds no `self.model`: its index keys have no prefix.
    assert!(
        init.contains(
            "DeepseekV4Model._convert_fqn_to_index_mapping = staticmethod(\n        partial(convert_deepseek_v4_fqn_to_index_mapping, target_model_prefix=\"\")\n    )"
        ),
        "{init}"
    );
    assert!(
        !init.contains("DeepseekV4ForCausalLM._convert_fqn_to_index_mapping = staticmethod(\n        partial"),
        "{init}"
    );
    let converter = dir.join("checkpoint_tensor_converter.py");
    compile_and_ruff(&p, &[converter.clone(), dir.join("__init__.py")]);
    let check = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/new/converter_renaming_check.py");
    let (ok, msg) = run_py(&python, &check, &[converter.to_str().unwrap()]);
    assert!(ok && msg.starts_with("ok: "), "{msg}");
}

/// python3's `ast` reading of a configuration class in the wheel: the
/// annotated fields whose default is `None`.
fn oracle_none_defaults(wheel: &Path, model: &str, class: &str) -> Vec<String> {
    let script = r#"
import ast, sys, zipfile
m, cls = sys.argv[2], sys.argv[3]
text = zipfile.ZipFile(sys.argv[1]).read(f"transformers/models/{m}/configuration_{m}.py").decode()
for node in ast.parse(text).body:
    if isinstance(node, ast.ClassDef) and node.name == cls:
        for s in node.body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.value, ast.Constant) and s.value.value is None:
                print(s.target.id)
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(wheel).arg(model).arg(class).output().expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

/// dots1 (5.16.1) leaves its MoE counts `None` (`n_routed_experts`,
/// `num_experts_per_tok`, `n_shared_experts`: python3's `ast` of the
/// wheel's configuration says so). A toy config gives each a small
/// concrete value, listed in the README; with the experts count known, the
/// converter (recipe `qwen2_moe` through the alias) is written and lint
/// reports no PG401.
#[test]
fn dots1_toy_config_sets_the_moe_counts_upstream_leaves_none() {
    let Some(wheel) = common::wheel("5.16.1") else { return };
    let none = oracle_none_defaults(&wheel, "dots1", "Dots1Config");
    for k in ["n_routed_experts", "num_experts_per_tok", "n_shared_experts"] {
        assert!(none.iter().any(|n| n == k), "python3: Dots1Config's None defaults are {none:?}");
    }
    let p = project();
    let out = new(&p, &wheel, &["dots1"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("lint: ") && !out.stdout.contains(": PG401 "), "{}", out.stdout);
    let toy_dir = p.root.join("tests/toy_config/dots1_toy");
    let toy: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(toy_dir.join("config.json")).unwrap()).unwrap();
    let int = |k: &str| toy[k].as_i64().unwrap_or_else(|| panic!("{k}: {}", toy[k]));
    let (experts, top_k, shared) = (int("n_routed_experts"), int("num_experts_per_tok"), int("n_shared_experts"));
    assert!(experts >= 2 && top_k >= 1 && top_k <= experts && shared >= 1, "{toy}");
    // The MoE dims stay pairwise distinct, hidden != 2*I and != I.
    let (h, i, d) = (int("hidden_size"), int("moe_intermediate_size"), int("intermediate_size"));
    assert!(h != 2 * i && h != i && i != d, "{toy}");
    let readme = std::fs::read_to_string(toy_dir.join("README.md")).unwrap();
    for k in ["n_routed_experts", "num_experts_per_tok", "n_shared_experts"] {
        assert!(readme.contains(&format!("- **{k}**: null → ")), "{k}: {readme}");
    }
    let converter = std::fs::read_to_string(p.root.join("pkg/models/dots1/checkpoint_tensor_converter.py")).unwrap();
    assert!(converter.contains("num_experts=model.config.n_routed_experts"), "{converter}");
}

/// gpt_oss: `GptOssMLP` is the MoE block (its `__init__` builds
/// `self.router` and `self.experts`) and upstream decorates it with
/// `@use_kernel_forward_from_hub("MegaBlocksMoeMLP")`. The config replaces
/// it with the upstream class verbatim minus that decorator, as VeOmni's
/// gpt_oss config does; python3's `ast` compares the two class bodies
/// (the upstream's with the hub decorator removed, the config's with its
/// `config.replace_class` decorator removed, names aside). The MLP
/// decision is then "patched", as in the real config.
#[test]
fn gpt_oss_moe_block_loses_the_hub_decorator() {
    for version in ["5.9.0", "5.16.1"] {
        let Some(wheel) = common::wheel(version) else { return };
        let p = project();
        let out = new(&p, &wheel, &["gpt_oss", "--format", "json"]);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(v["backends"][0]["decisions"]["mlp"], "patched", "{version}");
        let config = p.root.join("pkg/models/gpt_oss/gpt_oss_gpu_patch_gen_config.py");
        let script = r#"
import ast, sys, zipfile
up = ast.parse(zipfile.ZipFile(sys.argv[1]).read("transformers/models/gpt_oss/modeling_gpt_oss.py").decode())
cfg = ast.parse(open(sys.argv[2]).read())
def find(tree, pred):
    return [n for n in tree.body if isinstance(n, ast.ClassDef) and pred(n)]
(u,) = find(up, lambda n: n.name == "GptOssMLP")
hub = [d for d in u.decorator_list if "use_kernel_forward_from_hub" in ast.unparse(d)]
assert len(hub) == 1, "upstream GptOssMLP has no hub decorator"
(c,) = find(cfg, lambda n: any(ast.unparse(d).startswith("config.replace_class('GptOssMLP'") for d in n.decorator_list))
u.decorator_list = [d for d in u.decorator_list if d not in hub]
c.decorator_list = [d for d in c.decorator_list if not ast.unparse(d).startswith("config.")]
u.name = c.name
assert ast.unparse(u) == ast.unparse(c), ast.unparse(c)
print("ok")
"#;
        let o = Command::new("python3").arg("-c").arg(script).arg(&wheel).arg(&config).output().unwrap();
        assert!(
            o.status.success(),
            "{version}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        compile_and_ruff(&p, std::slice::from_ref(&config));
        // Lint's PG403 says the same of a config without that replacement.
        let module = "pkg.models.gpt_oss.gpt_oss_gpu_patch_gen_config";
        let pg403 = |p: &Project| -> Vec<String> {
            let o = TestEnv::get().patchgen(
                &p.root,
                &wheel.to_string_lossy(),
                &["lint", module, "--select", "PG403", "--no-cache", "--format", "json"],
            );
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout));
            v["diagnostics"].as_array().unwrap().iter().map(|d| d["message"].as_str().unwrap().to_string()).collect()
        };
        let hub = |m: &Vec<String>| m.iter().any(|m| m.starts_with("`GptOssMLP` is the MoE block"));
        assert!(!hub(&pg403(&p)), "{version}");
        let text = std::fs::read_to_string(&config).unwrap();
        let start = text.find("# Patch: GptOssMLP\n").unwrap();
        let end = text[start..].find("\n\n\n# Patch:").map_or(text.len(), |e| start + e);
        std::fs::write(&config, format!("{}{}", &text[..start], &text[end..])).unwrap();
        let messages = pg403(&p);
        assert!(hub(&messages), "{version}: {messages:?}");
        assert!(
            messages.iter().any(|m| m.contains("keeps `@use_kernel_forward_from_hub(\"MegaBlocksMoeMLP\")`")),
            "{version}: {messages:?}"
        );
    }
}
