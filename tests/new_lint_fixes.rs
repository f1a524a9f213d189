//! `patchgen new` answering lint errors of unpatched upstream code with the
//! fix the rule names (PG306: the constructor builds the generated class
//! with `_from_config`; PG305: `_init_weights` branches re-keyed on the
//! classes owning the tensors), and dropping template helpers whose every
//! user was dropped. Expected code comes from python3's `ast` applied to
//! the real upstream modeling file (the transformation done independently
//! in Python), and "fixed" means the rule itself reports nothing on the
//! written config while it reports the finding on the same config without
//! the scaffold's override.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestEnv;

const PYPROJECT: &str = include_str!("new/pyproject.toml");

/// Declares the kernel slots, patches nothing: `new --like` it writes the
/// OpSlot guards over the new model's own norm and RoPE.
const SLOTS_CONFIG: &str = include_str!("new/qwen2_slots_config.py");

/// A template whose helpers serve patches the new model (olmo2) has no
/// target for: `_qwen3_qa_helper` (copied: it spells the prefix) calls the
/// question-answering head olmo2 lacks, `_Qwen3Inner` is used only by it;
/// `kept_for_mlp` serves a patch that is carried; `read_from_outside` is
/// used by no patch (kept: something outside the generated module may).
const HELPERS_CONFIG: &str = r#""""A template with helpers."""

from patchgen import PatchConfig


config = PatchConfig(
    source_module="transformers.models.qwen3.modeling_qwen3",
    target_file="patched_modeling_qwen3_gpu.py",
)


@config.add_helper
class _Qwen3Inner:
    """Mentions kept_for_mlp in a docstring only."""

    def run(self, x):
        return x


@config.add_helper
def _qwen3_qa_helper(self, x):
    return Qwen3ForQuestionAnswering.forward(_Qwen3Inner().run(self), x)  # noqa: F821


@config.add_helper
def kept_for_mlp(x):
    return x


@config.add_helper
def read_from_outside():
    return 1


@config.override_method("Qwen3ForQuestionAnswering.describe", description="uses the QA helper")
def qwen3_qa_describe(self, x):
    return _qwen3_qa_helper(self, x)  # noqa: F821


@config.override_method("Qwen3MLP.forward", description="uses a helper")
def qwen3_mlp_forward(self, x):
    return kept_for_mlp(self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x)))  # noqa: F821
"#;

const INIT: &str = "from ..registry import MODELING_REGISTRY\n\n\n@MODELING_REGISTRY.register(\"qwen2\")\ndef register(architecture):\n    return None\n";

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
            ("pkg/models/__init__.py", ""),
            ("pkg/models/registry.py", "MODELING_REGISTRY = None\n"),
            ("pkg/models/qwen2/__init__.py", INIT),
            ("pkg/models/qwen2/qwen2_gpu_patch_gen_config.py", SLOTS_CONFIG),
            ("pkg/models/qwen3/__init__.py", ""),
            ("pkg/models/qwen3/qwen3_gpu_patch_gen_config.py", HELPERS_CONFIG),
        ],
    );
    Project { _dir: dir, root }
}

fn patchgen(p: &Project, wheel: &Path, args: &[&str]) -> common::Output {
    TestEnv::get().patchgen(&p.root, &wheel.to_string_lossy(), args)
}

fn read(p: &Project, rel: &str) -> String {
    std::fs::read_to_string(p.root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The error codes `patchgen lint` reports for a config module.
fn lint_errors(p: &Project, wheel: &Path, module: &str) -> Vec<String> {
    let out = patchgen(p, wheel, &["lint", module, "--no-cache", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| format!("{} {}", d["code"].as_str().unwrap(), d["message"].as_str().unwrap()))
        .collect()
}

/// `text` without the block from the line `# Patch: <target>` to the next
/// top-level statement that is not part of it (the scaffold's override).
fn without_override(text: &str, target: &str) -> String {
    let start = text.find(&format!("# Patch: {target}\n")).unwrap_or_else(|| panic!("no override of {target}"));
    let rest = &text[start..];
    let def = rest.find("\ndef ").unwrap();
    // The function ends at the next line starting at column 0 (not blank).
    let body = &rest[def + 1..];
    let end = body
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| body[i..].chars().next().is_some_and(|c| !c.is_whitespace()))
        .unwrap_or(body.len());
    format!("{}{}", &text[..start], &body[end..])
}

/// Run a python3 script with arguments; its stdout.
fn python(script: &str, args: &[&str]) -> String {
    let o = Command::new("python3").args(["-c", script]).args(args).output().expect("python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// `ast.dump` of `Class.method` of the generated file, and of the same
/// method of the wheel's modeling file after `transform` (Python source
/// defining `transform(tree) -> tree` over the method's `FunctionDef`).
fn generated_and_expected(
    generated: &Path,
    wheel: &Path,
    model: &str,
    qual: &str,
    transform: &str,
) -> (String, String) {
    let script = format!(
        r#"
import ast, sys, zipfile
generated, wheel, model, qual = sys.argv[1:5]
cls, meth = qual.split(".")
def method(src):
    for node in ast.parse(src).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == meth:
                    return f
{transform}
ours = method(open(generated).read())
theirs = transform(method(zipfile.ZipFile(wheel).read(f"transformers/models/{{model}}/modeling_{{model}}.py").decode()))
# The name and decorators are not what is compared.
for f in (ours, theirs):
    f.name = meth
    f.decorator_list = []
print(ast.dump(ours))
print(ast.dump(theirs))
"#
    );
    let out = python(&script, &[&generated.to_string_lossy(), &wheel.to_string_lossy(), model, qual]);
    let mut lines = out.lines();
    (lines.next().unwrap().to_string(), lines.next().unwrap().to_string())
}

#[test]
fn a_composite_constructor_builds_the_generated_text_model() {
    let Some(wheel) = common::wheel("5.9.0") else { return };
    let p = project();
    // Gemma3's RoPE gets the project's OpSlot guard; `Gemma3Model.__init__`
    // builds its language model with `AutoModel.from_config`, and
    // `__init__.py` registers the composite (`gemma3`) too: PG306.
    let out = patchgen(&p, &wheel, &["new", "gemma3", "--like", "qwen2"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("own     Gemma3Model.__init__ (own code)"), "{}", out.stdout);
    let init = read(&p, "pkg/models/gemma3/__init__.py");
    assert!(init.contains("@MODELING_REGISTRY.register(\"gemma3\")"), "{init}");

    // The generated constructor is upstream's, the text model's call
    // building the generated class (python3 applies the rule's "Use instead"
    // to the wheel's own method); the vision tower (Siglip, not in the
    // module) stays AutoModel.
    let generated = p.root.join("pkg/models/gemma3/generated/patched_modeling_gemma3_gpu.py");
    let transform = r#"
class T(ast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        if ast.unparse(node.func) != "AutoModel.from_config":
            return node
        arg = node.args[0] if node.args else next(k.value for k in node.keywords if k.arg == "config")
        if ast.unparse(arg) == "config.text_config":
            node.func = ast.Attribute(value=ast.Name(id="Gemma3TextModel", ctx=ast.Load()), attr="_from_config", ctx=ast.Load())
        return node
def transform(f):
    return T().visit(f)
"#;
    let (ours, expected) = generated_and_expected(&generated, &wheel, "gemma3", "Gemma3Model.__init__", transform);
    assert_eq!(ours, expected);
    assert!(ours.contains("attr='_from_config'"), "{ours}");
    assert!(ours.contains("Name(id='AutoModel'"), "the vision tower stays AutoModel: {ours}");

    // The rule: silent on the written config, the finding back without
    // the override.
    let module = "pkg.models.gemma3.gemma3_gpu_patch_gen_config";
    assert!(!lint_errors(&p, &wheel, module).iter().any(|e| e.starts_with("PG306")));
    let path = "pkg/models/gemma3/gemma3_gpu_patch_gen_config.py";
    let config = read(&p, path);
    std::fs::write(p.root.join(path), without_override(&config, "Gemma3Model.__init__")).unwrap();
    let errors = lint_errors(&p, &wheel, module);
    assert!(errors.iter().any(|e| e.starts_with("PG306 `Gemma3Model` builds `config.text_config`")), "{errors:?}");
}

#[test]
fn an_init_weights_branch_on_a_container_is_keyed_on_the_owner() {
    let Some(wheel) = common::wheel("5.16.1") else { return };
    let p = project();
    // Qwen3-Next's `_init_weights` initialises `module.gate.weight` under
    // `isinstance(module, Qwen3NextSparseMoeBlock)`; the block owns no
    // tensor (transformers 5.16 skips it in custom code): PG305. The
    // router the block builds as `self.gate` owns `weight`.
    let facts = python(
        r#"
import ast, sys, zipfile
src = zipfile.ZipFile(sys.argv[1]).read("transformers/models/qwen3_next/modeling_qwen3_next.py").decode()
classes = {n.name: n for n in ast.parse(src).body if isinstance(n, ast.ClassDef)}
init = next(f for f in classes["Qwen3NextSparseMoeBlock"].body if getattr(f, "name", "") == "__init__")
gate = next(ast.unparse(s.value.func) for s in init.body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "self.gate")
params = [ast.unparse(s.targets[0]) for s in ast.walk(classes[gate]) if isinstance(s, ast.Assign) and "Parameter" in ast.unparse(s.value)]
print(gate, params)
"#,
        &[&wheel.to_string_lossy()],
    );
    assert_eq!(facts.trim(), "Qwen3NextTopKRouter ['self.weight']");
    let out = patchgen(&p, &wheel, &["new", "qwen3_next"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let qual = "Qwen3NextPreTrainedModel._init_weights";
    assert!(out.stdout.contains(&format!("own     {qual} (own code)")), "{}", out.stdout);

    let generated = p.root.join("pkg/models/qwen3_next/generated/patched_modeling_qwen3_next_gpu.py");
    let transform = r#"
class T(ast.NodeTransformer):
    def visit_If(self, node):
        self.generic_visit(node)
        if ast.unparse(node.test) == "isinstance(module, Qwen3NextSparseMoeBlock)":
            node.test = ast.parse("isinstance(module, Qwen3NextTopKRouter)", mode="eval").body
            src = "\n".join(ast.unparse(s) for s in node.body).replace("module.gate.", "module.")
            node.body = ast.parse(src).body
        return node
def transform(f):
    return ast.parse(ast.unparse(T().visit(f))).body[0]
"#;
    let (ours, expected) = generated_and_expected(&generated, &wheel, "qwen3_next", qual, transform);
    // Line numbers differ: compare without attributes.
    assert_eq!(ours, expected);
    assert!(ours.contains("Qwen3NextTopKRouter"), "{ours}");

    let module = "pkg.models.qwen3_next.qwen3_next_gpu_patch_gen_config";
    assert!(!lint_errors(&p, &wheel, module).iter().any(|e| e.starts_with("PG305")));
    let path = "pkg/models/qwen3_next/qwen3_next_gpu_patch_gen_config.py";
    let config = read(&p, path);
    std::fs::write(p.root.join(path), without_override(&config, qual)).unwrap();
    let errors = lint_errors(&p, &wheel, module);
    assert!(
        errors.iter().any(|e| e.starts_with(&format!("PG305 `{qual}` branches on `Qwen3NextSparseMoeBlock`"))),
        "{errors:?}"
    );
}

#[test]
fn helpers_whose_users_were_all_dropped_go_too() {
    let Some(wheel) = common::wheel("5.9.0") else { return };
    let p = project();
    // olmo2 has no question-answering head (its `__all__`).
    let all = python(
        r#"
import ast, sys, zipfile
src = zipfile.ZipFile(sys.argv[1]).read("transformers/models/olmo2/modeling_olmo2.py").decode()
for n in ast.parse(src).body:
    if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__all__":
        print(ast.literal_eval(n.value))
"#,
        &[&wheel.to_string_lossy()],
    );
    assert!(!all.contains("ForQuestionAnswering"), "{all}");
    let out = patchgen(&p, &wheel, &["new", "olmo2", "--like", "qwen3"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("dropped Qwen3ForQuestionAnswering.describe"), "{}", out.stdout);
    // What the written config defines or registers as helpers (python3).
    let path = p.root.join("pkg/models/olmo2/olmo2_gpu_patch_gen_config.py");
    let helpers = python(
        r#"
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
names = []
for n in tree.body:
    if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and any(ast.unparse(d) == "config.add_helper" for d in n.decorator_list):
        names.append(n.name)
    if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and ast.unparse(n.value.func) == "config.add_helper":
        names.append(ast.unparse(n.value.args[0]))
print(sorted(names))
"#,
        &[&path.to_string_lossy()],
    );
    assert_eq!(helpers.trim(), "['kept_for_mlp', 'read_from_outside']");
    for dropped in ["_qwen3_qa_helper", "_Olmo2Inner"] {
        assert!(out.stdout.contains(&format!("warning: helper `{dropped}` not carried")), "{}", out.stdout);
    }
    // Kept by the template's helper, the copied one would name a class
    // olmo2 lacks: lint (PG103) is silent without it.
    let errors = lint_errors(&p, &wheel, "pkg.models.olmo2.olmo2_gpu_patch_gen_config");
    assert!(!errors.iter().any(|e| e.starts_with("PG103")), "{errors:?}");
}

#[test]
fn a_branch_on_torch_layers_initialises_as_transformers_does() {
    let Some(wheel) = common::wheel("5.16.1") else { return };
    let p = project();
    // NanoChat's `_init_weights` scales `module.o_proj.weight` under
    // `isinstance(module, NanoChatAttention)`; the attention owns no tensor
    // and `o_proj` is an `nn.Linear`: no class of the module to re-key on.
    let facts = python(
        r#"
import ast, sys, zipfile
src = zipfile.ZipFile(sys.argv[1]).read("transformers/models/nanochat/modeling_nanochat.py").decode()
classes = {n.name: n for n in ast.parse(src).body if isinstance(n, ast.ClassDef)}
init = next(f for f in classes["NanoChatAttention"].body if getattr(f, "name", "") == "__init__")
print(next(ast.unparse(s.value.func) for s in ast.walk(init) if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "self.o_proj"))
"#,
        &[&wheel.to_string_lossy()],
    );
    assert_eq!(facts.trim(), "nn.Linear");
    let out = patchgen(&p, &wheel, &["new", "nanochat"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let qual = "NanoChatPreTrainedModel._initialize_weights";
    assert!(out.stdout.contains(&format!("own     {qual} (own code)")), "{}", out.stdout);
    // `_init_weights` is upstream's; `_initialize_weights` only passes
    // `is_custom_code=False` on.
    let generated = p.root.join("pkg/models/nanochat/generated/patched_modeling_nanochat_gpu.py");
    let same = "def transform(f):\n    return f\n";
    let (ours, upstream) =
        generated_and_expected(&generated, &wheel, "nanochat", "NanoChatPreTrainedModel._init_weights", same);
    assert_eq!(ours, upstream);
    let body = python(
        r#"
import ast, sys
for n in ast.parse(open(sys.argv[1]).read()).body:
    if isinstance(n, ast.ClassDef) and n.name == "NanoChatPreTrainedModel":
        f = next(f for f in n.body if getattr(f, "name", "") == "_initialize_weights")
        print(ast.unparse(f.body))
"#,
        &[&generated.to_string_lossy()],
    );
    assert_eq!(body.trim(), "super()._initialize_weights(module, is_custom_code=False)");

    let module = "pkg.models.nanochat.nanochat_gpu_patch_gen_config";
    assert!(!lint_errors(&p, &wheel, module).iter().any(|e| e.starts_with("PG305")));
    let path = "pkg/models/nanochat/nanochat_gpu_patch_gen_config.py";
    let config = read(&p, path);
    std::fs::write(p.root.join(path), without_override(&config, qual)).unwrap();
    let errors = lint_errors(&p, &wheel, module);
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("PG305 `NanoChatPreTrainedModel._init_weights` branches on `NanoChatAttention`")),
        "{errors:?}"
    );
}
