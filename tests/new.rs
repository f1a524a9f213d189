//! `patchgen new`: a small project of our own (templates written for these
//! tests) over the real transformers 5.9.0 wheel; the written files are
//! checked with ruff, python3's `py_compile`, and the toy config against
//! python3's own reading of the configuration defaults.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::TestEnv;

/// The test project's pyproject (shared with the other `new` tests).
const PYPROJECT: &str = include_str!("new/pyproject.toml");

const QWEN3_CONFIG: &str = r#"# Test licence header.
"""Template for the tests: a few qwen3 patches."""

import torch
from patchgen import PatchConfig


config = PatchConfig(
    source_module="transformers.models.qwen3.modeling_qwen3",
    target_file="patched_modeling_qwen3_gpu.py",
    description="Qwen3 test template",
)

config.add_post_import_block(
    """
    NORM_IN_FLOAT32 = True
    """
)


# Patch: Qwen3RMSNorm.forward
# 1. weight applied in float32 — precision
@config.override_method("Qwen3RMSNorm.forward", description="Qwen3RMSNorm in float32")
def qwen3_rms_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    return (self.weight.float() * hidden_states).to(input_dtype)


@config.override_method("Qwen3MLP.forward", description="Qwen3MLP unchanged")
def qwen3_mlp_forward(self, x):
    return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


@config.replace_function("apply_rotary_pos_emb", description="RoPE in float32")
def apply_rotary_pos_emb_fp32(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim).float()
    sin = sin.unsqueeze(unsqueeze_dim).float()
    q_embed = (q.float() * cos) + (rotate_half(q.float()) * sin)
    k_embed = (k.float() * cos) + (rotate_half(k.float()) * sin)
    return q_embed.to(q.dtype), k_embed.to(k.dtype)


@config.override_method("Qwen3ForCausalLM.forward", description="Qwen3ForCausalLM without cache arguments")
def qwen3_causal_lm_forward(self, input_ids=None, attention_mask=None, labels=None, **kwargs):
    outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    return self.lm_head(outputs.last_hidden_state)


@config.override_method("Qwen3Attention.describe", description="A method the project adds")
def qwen3_attention_describe(self):
    return "Qwen3Attention"


@config.override_method("Qwen3Model.only_in_qwen3", description="A method only this template has")
def qwen3_model_only(self):
    return 1
"#;

const QWEN3_5_CONFIG: &str = r#""""A project config with a `1 + weight` norm patch (the donor)."""

import torch
from patchgen import PatchConfig


config = PatchConfig(
    source_module="transformers.models.qwen3_5.modeling_qwen3_5",
    target_file="patched_modeling_qwen3_5_gpu.py",
)


@config.override_method("Qwen3_5RMSNorm.forward", description="1 + weight norm in float32")
def qwen3_5_rms_norm_forward(self, x):
    output = self._norm(x.float())
    output = output * (1.0 + self.weight.float())
    return output.type_as(x)
"#;

const OLMO2_CONFIG: &str = r#""""A template that swaps the MLP class."""

from patchgen import PatchConfig


config = PatchConfig(
    source_module="transformers.models.olmo2.modeling_olmo2",
    target_file="patched_modeling_olmo2_gpu.py",
)


@config.replace_class("Olmo2MLP", description="a fused MLP")
class FusedOlmo2MLP(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config.hidden_size
"#;

const QWEN2_CONFIG: &str = include_str!("new/qwen2_slots_config.py");

const INIT: &str = "# Test licence header.\n\nfrom ..registry import MODELING_REGISTRY\n\n\n@MODELING_REGISTRY.register(\"qwen3\")\ndef register(architecture):\n    return None\n";

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn project() -> Project {
    project_with(QWEN3_CONFIG)
}

/// The test project with another qwen3 template config.
fn project_with(qwen3_config: &str) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let files: [(&str, &str); 10] = [
        ("pkg/models/qwen2/qwen2_gpu_patch_gen_config.py", QWEN2_CONFIG),
        ("pyproject.toml", PYPROJECT),
        ("pkg/__init__.py", ""),
        ("pkg/models/__init__.py", ""),
        ("pkg/models/registry.py", "MODELING_REGISTRY = None\n"),
        ("pkg/models/qwen3/__init__.py", INIT),
        ("pkg/models/qwen3/qwen3_gpu_patch_gen_config.py", qwen3_config),
        ("pkg/models/qwen3_5/qwen3_5_gpu_patch_gen_config.py", QWEN3_5_CONFIG),
        ("pkg/models/olmo2/olmo2_gpu_patch_gen_config.py", OLMO2_CONFIG),
        ("pkg/models/qwen3_5/__init__.py", ""),
    ];
    common::write_files(&root, &files);
    std::fs::write(root.join("pkg/models/olmo2/__init__.py"), "").unwrap();
    Project { _dir: dir, root }
}

fn new(p: &Project, args: &[&str]) -> common::Output {
    let env = TestEnv::get();
    let wheel = env.transformers();
    let mut all = vec!["new"];
    all.extend_from_slice(args);
    env.patchgen(&p.root, &wheel.to_string_lossy(), &all)
}

fn read(p: &Project, rel: &str) -> String {
    std::fs::read_to_string(p.root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn ruff_check(p: &Project, files: &[PathBuf]) {
    let env = TestEnv::get();
    let out = Command::new(env.ruff_dir.join("ruff"))
        .arg("check")
        .arg("--quiet")
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

fn py_compile(files: &[PathBuf]) {
    let out = Command::new("python3").args(["-m", "py_compile"]).args(files).output().expect("python3");
    assert!(out.status.success(), "py_compile: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_dense_text_model_by_reuse_of_the_template() {
    let p = project();
    let out = new(&p, &["mistral"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("category: text"), "{}", out.stdout);
    assert!(out.stdout.contains("template: qwen3"), "{}", out.stdout);

    let config = read(&p, "pkg/models/mistral/mistral_gpu_patch_gen_config.py");
    assert!(config.starts_with("# Test licence header."), "{config}");
    assert!(
        config.contains(
            "patchgen pkg.models.mistral.mistral_gpu_patch_gen_config -o pkg/models/mistral/generated --diff"
        )
    );
    assert!(config.contains("from pkg.models.qwen3.qwen3_gpu_patch_gen_config import ("), "{config}");
    assert!(config.contains("_NAME_MAP = {\"Qwen3\": \"Mistral\"}"), "{config}");
    assert!(config.contains("\"MistralRMSNorm.forward\""));
    assert!(config.contains("# Patch: Qwen3RMSNorm.forward\n# 1. weight applied in float32"), "{config}");
    // The template's own method is injected into the new class; one whose
    // class has no counterpart is left out.
    // A method only the template injects: carried, or dropped for what lint says (PG102).
    assert!(
        config.contains("\"MistralAttention.describe\"")
            || out.stdout.lines().any(|l| l.contains("dropped Qwen3Attention.describe") && l.contains("lint PG102")),
        "{}",
        out.stdout
    );
    assert!(!config.contains("only_in_qwen3") || config.contains("MistralModel.only_in_qwen3"));
    // The reused forward lacks parameters the upstream method takes.
    let todo = config.lines().find(|l| l.contains("TODO(patchgen new)")).expect("a TODO");
    assert!(todo.contains("MistralForCausalLM.forward") && todo.contains("upstream only: position_ids"), "{todo}");
    assert!(out.stdout.contains("TODO(patchgen new)"));

    let init = read(&p, "pkg/models/mistral/__init__.py");
    assert!(init.contains("from ..registry import MODELING_REGISTRY"));
    assert!(init.contains("@MODELING_REGISTRY.register(\"mistral\")"));
    assert!(init.contains("architecture = architecture or \"MistralForCausalLM\""));
    let pos = |s: &str| init.find(s).unwrap_or_else(|| panic!("{s} in {init}"));
    assert!(pos("\"ForSequenceClassification\" in") < pos("\"Model\" in"));

    let generated = p.root.join("pkg/models/mistral/generated/patched_modeling_mistral_gpu.py");
    let text = std::fs::read_to_string(&generated).unwrap();
    assert!(text.contains("method_override: MistralRMSNorm.forward"), "{}", &text[..800]);
    assert!(p.root.join("pkg/models/mistral/generated/patched_modeling_mistral_gpu.diff").is_file());
    // Generation again, as the user would run it.
    let env = TestEnv::get();
    let again = env.patchgen(
        &p.root,
        &env.transformers().to_string_lossy(),
        &["pkg.models.mistral.mistral_gpu_patch_gen_config", "--diff"],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);

    let py = [
        p.root.join("pkg/models/mistral/mistral_gpu_patch_gen_config.py"),
        p.root.join("pkg/models/mistral/__init__.py"),
        generated,
    ];
    ruff_check(&p, &py);
    py_compile(&py);

    // Phase 6: this project has no test tables (tests/new_test_rows.rs has them).
    assert!(
        out.stdout.contains("tests/models/test_models_patch.py: no row — the project has no such file"),
        "{}",
        out.stdout
    );
}

#[test]
fn the_toy_config_keeps_every_default_it_does_not_shrink() {
    let p = project();
    assert_eq!(new(&p, &["mistral"]).code, 0);
    let toy: serde_json::Value = serde_json::from_str(&read(&p, "tests/toy_config/mistral_toy/config.json")).unwrap();
    assert_eq!(toy["architectures"][0], "MistralForCausalLM");
    assert_eq!(toy["model_type"], "mistral");
    assert_eq!(toy["hidden_size"], 64);
    assert_eq!(toy["num_key_value_heads"], 2);
    let readme = read(&p, "tests/toy_config/mistral_toy/README.md");
    assert!(readme.contains("- **hidden_size**: 4096 → 64 (small)"), "{readme}");
    // python3 reads the class-level defaults of MistralConfig itself.
    let script = r#"
import ast, json, sys, zipfile
src = zipfile.ZipFile(sys.argv[1]).read("transformers/models/mistral/configuration_mistral.py").decode()
out = {}
for node in ast.parse(src).body:
    if isinstance(node, ast.ClassDef) and node.name == "MistralConfig":
        for s in node.body:
            if isinstance(s, ast.AnnAssign) and s.value is not None:
                try:
                    out[s.target.id] = ast.literal_eval(s.value)
                except ValueError:
                    pass
print(json.dumps(out))
"#;
    let wheel = TestEnv::get().transformers();
    let o = Command::new("python3").args(["-c", script]).arg(&wheel).output().expect("python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let defaults: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert!(defaults.len() > 10);
    let changed: Vec<String> =
        readme.lines().filter_map(|l| l.strip_prefix("- **")?.split("**").next().map(str::to_string)).collect();
    for (k, v) in &defaults {
        if changed.contains(k) {
            assert_ne!(&toy[k], v, "{k} is listed as changed");
        } else {
            assert_eq!(&toy[k], v, "{k}: toy {} vs default {v}", toy[k]);
        }
    }
}

#[test]
fn never_overwrites_and_dry_run_writes_nothing() {
    let p = project();
    let dry = new(&p, &["mistral", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(dry.stdout.contains("would write:"));
    assert!(!p.root.join("pkg/models/mistral").exists());
    assert!(!p.root.join("tests").exists());
    assert_eq!(new(&p, &["mistral"]).code, 0);
    let before = read(&p, "pkg/models/mistral/mistral_gpu_patch_gen_config.py");
    let again = new(&p, &["mistral"]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("already has a config for `mistral`"), "{}", again.stderr);
    assert_eq!(read(&p, "pkg/models/mistral/mistral_gpu_patch_gen_config.py"), before);
    // A directory with other files: the files `new` would write must not exist.
    std::fs::create_dir_all(p.root.join("pkg/models/llama")).unwrap();
    std::fs::write(p.root.join("pkg/models/llama/__init__.py"), "# mine\n").unwrap();
    let clash = new(&p, &["llama"]);
    assert_eq!(clash.code, 2);
    assert!(clash.stderr.contains("__init__.py: already exists"), "{}", clash.stderr);
    assert_eq!(read(&p, "pkg/models/llama/__init__.py"), "# mine\n");
}

#[test]
fn partial_rotary_keeps_the_upstream_rope_and_says_why() {
    let p = project();
    let out = new(&p, &["glm"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let config = read(&p, "pkg/models/glm/glm_gpu_patch_gen_config.py");
    assert!(!config.contains("replacement=apply_rotary_pos_emb_fp32"), "{config}");
    let comment = config.lines().find(|l| l.contains("apply_rotary_pos_emb is not replaced")).expect("comment");
    assert!(comment.contains("partial_rotary_factor defaults to 0.5"), "{comment}");
    assert!(out.stdout.contains("rotary upstream (partial rotary)"));
}

#[test]
fn a_one_plus_weight_norm_reuses_the_projects_variant() {
    let p = project();
    let out = new(&p, &["gemma"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let config = read(&p, "pkg/models/gemma/gemma_gpu_patch_gen_config.py");
    assert!(config.contains("from pkg.models.qwen3_5.qwen3_5_gpu_patch_gen_config import"), "{config}");
    assert!(config.contains("replacement=qwen3_5_rms_norm_forward"), "{config}");
    assert!(config.contains("computes `1 + weight`"), "{config}");
    assert!(out.stdout.contains("norm 1+weight"));
}

#[test]
fn an_mlp_taking_intermediate_size_is_not_swapped() {
    let p = project();
    let out = new(&p, &["deepseek_v3", "--like", "olmo2"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("category: moe"), "{}", out.stdout);
    let config = read(&p, "pkg/models/deepseek_v3/deepseek_v3_gpu_patch_gen_config.py");
    assert!(!config.contains("replacement=FusedOlmo2MLP"), "{config}");
    assert!(
        config.contains("DeepseekV3MLP is not swapped: `DeepseekV3MLP.__init__` takes `intermediate_size`"),
        "{config}"
    );
    assert!(out.stdout.contains("MoE: experts replacement"), "{}", out.stdout);
    let toy: serde_json::Value =
        serde_json::from_str(&read(&p, "tests/toy_config/deepseek_v3_toy/config.json")).unwrap();
    let (h, i) = (toy["hidden_size"].as_i64().unwrap(), toy["moe_intermediate_size"].as_i64().unwrap());
    assert!(h != i && h != 2 * i, "{toy}");
}

#[test]
fn categories_come_with_their_evidence() {
    let p = project();
    let vl = new(&p, &["qwen2_vl", "--dry-run"]);
    assert!(vl.stdout.contains("category: vlm"), "{}", vl.stdout);
    assert!(vl.stdout.contains("evidence: vision tower:"), "{}", vl.stdout);
    assert!(vl.stdout.contains("built-in skeleton"), "{}", vl.stdout);
    let moe = new(&p, &["qwen3_moe", "--dry-run"]);
    assert!(moe.stdout.contains("category: moe") && moe.stdout.contains("evidence: experts:"), "{}", moe.stdout);
    let forced = new(&p, &["qwen3_moe", "--dry-run", "--category", "text"]);
    assert!(forced.stdout.contains("--category text (detected: moe)"), "{}", forced.stdout);
    let missing = new(&p, &["qwen4"]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("transformers.models.qwen4.modeling_qwen4"), "{}", missing.stderr);
    let help = missing.stderr.lines().find(|l| l.contains("nearest model names")).expect("suggestions");
    assert!(help.contains("qwen3") && help.contains("qwen2"), "{help}");
}

/// python3's `ast.dump` of `Class.method` in a file (of the wheel when
/// `member` is given), decorators included, comments not.
fn method_ast(path: &std::path::Path, member: Option<&str>, class: &str, method: &str) -> String {
    let script = r#"
import ast, sys, zipfile
path, member, cls, meth = sys.argv[1:5]
src = zipfile.ZipFile(path).read(member).decode() if member else open(path).read()
for node in ast.parse(src).body:
    if isinstance(node, ast.ClassDef) and node.name == cls:
        for f in node.body:
            if isinstance(f, ast.FunctionDef) and f.name == meth:
                print(ast.dump(f))
"#;
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .arg(member.unwrap_or(""))
        .args([class, method])
        .output()
        .expect("python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn upstream_code_the_projects_ruff_rejects_is_overridden_verbatim() {
    // Qwen2.5-Omni's upstream `generate` has a mutable default
    // (`talker_eos_token_id: list[int] = [8292, 8294]`): the project's ruff
    // (B selected) rejects it and its safe fix cannot repair it. The test
    // project has no omni template: the skeleton generates upstream as is.
    let p = project();
    let out = new(&p, &["qwen2_5_omni"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("own     Qwen2_5OmniForConditionalGeneration.generate"), "{}", out.stdout);
    let config = read(&p, "pkg/models/qwen2_5_omni/qwen2_5_omni_gpu_patch_gen_config.py");
    let todo = config
        .lines()
        .find(|l| l.contains("TODO(patchgen new): upstream `Qwen2_5OmniForConditionalGeneration.generate`"));
    assert!(todo.is_some_and(|t| t.contains("B006")), "{config}");
    assert!(config.contains("\"Qwen2_5OmniForConditionalGeneration.generate\""), "{config}");
    let noqa = config.lines().find(|l| l.contains("talker_eos_token_id: list[int] = [8292, 8294]")).expect("default");
    assert!(noqa.ends_with("# noqa: B006"), "{noqa}");
    // The names its signature reads are imported where upstream gets them.
    assert!(config.contains("import torch"), "{config}");

    let generated = p.root.join("pkg/models/qwen2_5_omni/generated/patched_modeling_qwen2_5_omni_gpu.py");
    // Upstream behaviour kept: python3 sees the same method, decorators included.
    let wheel = TestEnv::get().transformers();
    let member = "transformers/models/qwen2_5_omni/modeling_qwen2_5_omni.py";
    let upstream = method_ast(&wheel, Some(member), "Qwen2_5OmniForConditionalGeneration", "generate");
    assert!(upstream.contains("List(elts=[Constant(value=8292), Constant(value=8294)]"), "{upstream}");
    assert_eq!(method_ast(&generated, None, "Qwen2_5OmniForConditionalGeneration", "generate"), upstream);

    let py = [
        p.root.join("pkg/models/qwen2_5_omni/qwen2_5_omni_gpu_patch_gen_config.py"),
        p.root.join("pkg/models/qwen2_5_omni/__init__.py"),
        generated,
    ];
    ruff_check(&p, &py);
    py_compile(&py);
}

/// python3's `ast.dump` of each statement of a top-level function's (or
/// `Class.method`'s) body, one per line.
fn body_asts(path: &std::path::Path, member: Option<&str>, qualname: &str) -> Vec<String> {
    let script = r#"
import ast, sys, zipfile
path, member, qual = sys.argv[1:4]
src = zipfile.ZipFile(path).read(member).decode() if member else open(path).read()
cls, _, name = qual.rpartition(".")
body = ast.parse(src).body
if cls:
    body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
f = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)
for s in f.body:
    print(ast.dump(s))
"#;
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .arg(member.unwrap_or(""))
        .arg(qualname)
        .output()
        .expect("python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn kernel_patches_the_template_lacks_are_the_projects_opslot_guards() {
    // The olmo2 template patches neither the norm nor RoPE; the project
    // declares both slots (the qwen2 config): Qwen3-VL's standard text norm
    // and full-head RoPE get the guard over their own upstream code.
    let p = project();
    let out = new(&p, &["qwen3_vl", "--like", "olmo2"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("decisions: rotary replaced; MLP none; norm standard"), "{}", out.stdout);
    let config = read(&p, "pkg/models/qwen3_vl/qwen3_vl_gpu_patch_gen_config.py");
    assert!(config.contains("from pkg.ops import OpSlot"), "{config}");
    assert!(config.contains("veomni_apply_rotary_pos_emb = OpSlot(\"rotary_pos_emb\", \"full\")"), "{config}");
    assert!(config.contains("return veomni_rms_norm(hidden_states, self.weight, self.variance_epsilon)"), "{config}");
    let generated = p.root.join("pkg/models/qwen3_vl/generated/patched_modeling_qwen3_vl_gpu.py");
    let wheel = TestEnv::get().transformers();
    let member = "transformers/models/qwen3_vl/modeling_qwen3_vl.py";
    for (qual, guard) in
        [("apply_rotary_pos_emb", "veomni_apply_rotary_pos_emb"), ("Qwen3VLTextRMSNorm.forward", "veomni_rms_norm")]
    {
        // Upstream's statements, the guard `if` inserted after the docstring.
        let mut ours = body_asts(&generated, None, qual);
        let theirs = body_asts(&wheel, Some(member), qual);
        let at = ours.iter().position(|s| s.starts_with("If(") && s.contains(guard)).expect("the guard");
        ours.remove(at);
        assert_eq!(ours, theirs, "{qual}");
    }
    let py = [p.root.join("pkg/models/qwen3_vl/qwen3_vl_gpu_patch_gen_config.py"), generated];
    ruff_check(&p, &py);
    py_compile(&py);
}

/// The parameters of `class_name.method` in the wheel's `modeling_<model>.py`
/// (python3's `ast` on the real file).
fn upstream_params(wheel: &std::path::Path, model: &str, class_name: &str, method: &str) -> Vec<String> {
    let script = r#"
import ast, sys, zipfile
wheel, model, cls, meth = sys.argv[1:]
src = zipfile.ZipFile(wheel).read(f"transformers/models/{model}/modeling_{model}.py")
for node in ast.parse(src).body:
    if isinstance(node, ast.ClassDef) and node.name == cls:
        for f in node.body:
            if isinstance(f, ast.FunctionDef) and f.name == meth:
                a = f.args
                print("\n".join(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs))
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(wheel)
        .args([model, class_name, method])
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn a_reuse_lint_rejects_is_dropped_unless_the_template_has_the_same_finding() {
    let p = project();
    let wheel = TestEnv::get().transformers();
    let out = new(&p, &["mistral"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let config = read(&p, "pkg/models/mistral/mistral_gpu_patch_gen_config.py");

    // Inherited: upstream `MistralForCausalLM.forward` takes `logits_to_keep`
    // and the template's replacement does not (PG301 in the template's own
    // config, at the replacement's `def`): the reuse stays, reported and
    // marked at the reuse with the template's file and line.
    assert!(upstream_params(&wheel, "mistral", "MistralForCausalLM", "forward").contains(&"logits_to_keep".into()));
    let def = QWEN3_CONFIG.lines().position(|l| l.starts_with("def qwen3_causal_lm_forward(")).unwrap() + 1;
    assert!(!QWEN3_CONFIG.lines().nth(def - 1).unwrap().contains("logits_to_keep"));
    let at = format!("pkg/models/qwen3/qwen3_gpu_patch_gen_config.py:{def}");
    assert!(
        out.stdout.lines().any(|l| l.trim_start().starts_with(&format!("inherited from {at}: PG301 "))
            && l.ends_with("(the template has it too; fix it there)")),
        "{}",
        out.stdout
    );
    let todo = format!("# TODO(patchgen new): inherited PG301 from {at} (the template has it too; fix it there)\n");
    let marked = config.find(&todo).unwrap_or_else(|| panic!("{config}"));
    // The reuse is kept, right under the mark.
    assert!(
        config[marked + todo.len()..].starts_with("config.override_method(\n    \"MistralForCausalLM.forward\","),
        "{config}"
    );

    // Dropped on a rule outside the old signature/name list: the template
    // injects `describe`, which upstream `MistralAttention` lacks (PG102,
    // located at the written config's call, not the template's).
    assert!(upstream_params(&wheel, "mistral", "MistralAttention", "describe").is_empty());
    assert!(out.stdout.lines().any(|l| l.contains("dropped Qwen3Attention.describe: lint PG102")), "{}", out.stdout);
    assert!(!config.contains("\"MistralAttention.describe\""), "{config}");

    // What lint still finds in the written config is inherited only.
    let lint = TestEnv::get().patchgen(
        &p.root,
        &wheel.to_string_lossy(),
        &["lint", "pkg.models.mistral.mistral_gpu_patch_gen_config", "--format", "json"],
    );
    let report: serde_json::Value =
        serde_json::from_str(&lint.stdout).unwrap_or_else(|e| panic!("{e}: {}", lint.stdout));
    let errors: Vec<&serde_json::Value> =
        report["diagnostics"].as_array().unwrap().iter().filter(|d| d["severity"] == "error").collect();
    assert!(!errors.is_empty());
    for e in errors {
        let path = e["location"]["path"].as_str().unwrap_or_default();
        assert!(path.ends_with("pkg/models/qwen3/qwen3_gpu_patch_gen_config.py"), "{e}");
        assert_eq!(e["location"]["line"], def, "{e}");
    }
}

/// The template's causal-LM forward shaped as VeOmni d9774494's qwen3 one:
/// the fused loss gets the unsliced hidden states, `logits_to_keep` slices
/// only in the `else:` branch (lint PG301 in the template's own config).
const QWEN3_FORWARD_PG301: &str = r#"@config.override_method("Qwen3ForCausalLM.forward", description="Qwen3ForCausalLM with a fused loss")
def qwen3_causal_lm_forward(
    self,
    input_ids=None,
    attention_mask=None,
    position_ids=None,
    past_key_values=None,
    inputs_embeds=None,
    labels=None,
    use_cache=None,
    cache_position=None,
    logits_to_keep=0,
    **kwargs,
):
    outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, **kwargs)
    hidden_states = outputs.last_hidden_state
    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
    loss = None
    if labels is not None:
        if fused_loss.use_non_eager_impl:
            loss, logits = fused_loss(labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight)
        else:
            logits = self.lm_head(hidden_states)
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs)
    else:
        logits = self.lm_head(hidden_states[:, slice_indices, :])
    return CausalLMOutputWithPast(
        loss=loss,
        logits=logits,
        past_key_values=outputs.past_key_values,
        hidden_states=outputs.hidden_states,
        attentions=outputs.attentions,
    )
"#;

/// What the copy's body must be: upstream's order (slice, then logits and
/// loss), written by hand from the rule's "Use instead".
const MISTRAL_FORWARD_FIXED: &str = r#"
def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None, labels=None, use_cache=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, **kwargs)
    hidden_states = outputs.last_hidden_state
    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
    hidden_states = hidden_states[:, slice_indices, :]
    loss = None
    if labels is not None:
        if fused_loss.use_non_eager_impl:
            loss, logits = fused_loss(labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight)
        else:
            logits = self.lm_head(hidden_states)
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs)
    else:
        logits = self.lm_head(hidden_states)
    return CausalLMOutputWithPast(
        loss=loss,
        logits=logits,
        past_key_values=outputs.past_key_values,
        hidden_states=outputs.hidden_states,
        attentions=outputs.attentions,
    )
"#;

#[test]
fn an_inherited_pg301_is_fixed_in_a_copy_of_the_templates_forward() {
    // The template's buggy forward, and the slot its fused loss calls.
    let old_forward = &QWEN3_CONFIG[QWEN3_CONFIG.find("@config.override_method(\"Qwen3ForCausalLM.forward\"").unwrap()
        ..QWEN3_CONFIG.find("@config.override_method(\"Qwen3Attention.describe\"").unwrap()];
    let template = QWEN3_CONFIG
        .replace(old_forward, &format!("{QWEN3_FORWARD_PG301}\n\n"))
        .replace("    NORM_IN_FLOAT32 = True\n", "    NORM_IN_FLOAT32 = True\n    from pkg.ops import OpSlot\n    fused_loss = OpSlot(\"cross_entropy_loss\", \"causal\")\n");
    let p = project_with(&template);
    let wheel = TestEnv::get().transformers();
    let lint = |module: &str| -> Vec<serde_json::Value> {
        let out = TestEnv::get().patchgen(&p.root, &wheel.to_string_lossy(), &["lint", module, "--format", "json"]);
        let report: serde_json::Value =
            serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
        report["diagnostics"].as_array().unwrap().clone()
    };
    // The template's own config has the error, at its loss call.
    let def = template.lines().position(|l| l.starts_with("def qwen3_causal_lm_forward(")).unwrap() + 1;
    let loss = template.lines().position(|l| l.contains("loss, logits = fused_loss(")).unwrap() + 1;
    let theirs = lint("pkg.models.qwen3.qwen3_gpu_patch_gen_config");
    assert!(theirs.iter().any(|d| d["code"] == "PG301" && d["location"]["line"] == loss), "{theirs:?}");

    let out = new(&p, &["mistral"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let from = format!("pkg/models/qwen3/qwen3_gpu_patch_gen_config.py:{def}");
    assert!(
        out.stdout.contains(&format!("copy    MistralForCausalLM.forward ← {from} (PG301 fixed)")),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("inherited from"), "{}", out.stdout);
    // Nothing printed (the "Next:" list included) still names the template's
    // function as reused.
    // (`cache_position`, which the upstream forward lacks, makes one.)
    assert!(!out.stdout.contains("the reused `qwen3_causal_lm_forward`"), "{}", out.stdout);
    let next = &out.stdout[out.stdout.find("\nNext:").expect("a Next: list")..];
    assert!(next.contains("the copied `mistral_causal_lm_forward`"), "{}", out.stdout);

    // The copy: in the config, fixed, renamed, re-aimed, said so; not imported.
    let config = read(&p, "pkg/models/mistral/mistral_gpu_patch_gen_config.py");
    assert!(!config.contains("qwen3_causal_lm_forward"), "{config}");
    assert!(!config.contains("TODO(patchgen new): inherited"), "{config}");
    let note =
        config.find(&format!("# patchgen new: copied from {from}, not reused:")).unwrap_or_else(|| panic!("{config}"));
    let decorator = "@config.override_method(\n    \"MistralForCausalLM.forward\",\n    description=\"MistralForCausalLM with a fused loss\",\n)\ndef mistral_causal_lm_forward(\n";
    let at = config.find(decorator).unwrap_or_else(|| panic!("{config}"));
    assert!(note < at && !config[note..at].contains("\n\n"), "{config}");
    assert!(config[note..at].contains("Once fixed there, this copy can become a reuse again."), "{config}");

    // Lint of what was written: no PG301, no error.
    let ours = lint("pkg.models.mistral.mistral_gpu_patch_gen_config");
    assert!(ours.iter().all(|d| d["code"] != "PG301" && d["severity"] != "error"), "{ours:?}");

    // The generated forward is the hand-written fixed one (python3's ast).
    let generated = p.root.join("pkg/models/mistral/generated/patched_modeling_mistral_gpu.py");
    let expected = p.root.join("expected_forward.py");
    std::fs::write(&expected, MISTRAL_FORWARD_FIXED).unwrap();
    let mut ours = body_asts(&generated, None, "MistralForCausalLM.forward");
    // The copy documents the parameter the upstream lacks (PG303): a
    // docstring the hand-written forward does not have; the code is the same.
    if ours.first().is_some_and(|s| s.starts_with("Expr(value=Constant(value=")) {
        let doc = ours.remove(0);
        assert!(doc.contains("cache_position"), "{doc}");
    }
    assert_eq!(ours, body_asts(&expected, None, "forward"));
    assert!(ours.iter().any(|s| s.contains("Name(id='fused_loss'")), "{ours:?}");

    let env = TestEnv::get();
    let again =
        env.patchgen(&p.root, &wheel.to_string_lossy(), &["pkg.models.mistral.mistral_gpu_patch_gen_config", "--diff"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let py = [p.root.join("pkg/models/mistral/mistral_gpu_patch_gen_config.py"), generated];
    ruff_check(&p, &py);
    py_compile(&py);
}
