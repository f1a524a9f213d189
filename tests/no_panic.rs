//! patchgen never panics, hangs or overflows the stack, whatever the input:
//! config evaluation and generation return `Ok` or `Err`.
//!
//! Everything runs on a thread with the workers' 256 MiB stack
//! (`patchgen_core::workers::STACK_SIZE`), as evaluation and generation do in
//! every command. A short proptest run over inputs made of realistic fragments and
//! random text, then explicit regressions (deep nesting, import cycles,
//! binary garbage, empty files). The long-running version of these
//! properties is the cargo-fuzz harness in `fuzz/` (see `fuzz/README.md`).

use std::path::PathBuf;
use std::time::Duration;

use patchgen_config::loader::{MemoryLoader, ProjectLoader};
use patchgen_config::{PatchPlan, evaluate};
use patchgen_core::codegen;
use patchgen_python::pysource::ParsedFile;
use proptest::prelude::*;

use patchgen_core::workers::STACK_SIZE;
const MOD_A: &str = "pkg.a_patch_gen_config";
const MOD_B: &str = "pkg.b_patch_gen_config";

/// Run `f` on a fresh 256 MiB-stack thread; a panic there is re-raised here.
/// (A stack overflow aborts the whole test binary, which fails the run too.)
fn on_big_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let handle = std::thread::Builder::new().stack_size(STACK_SIZE).spawn(f).expect("spawn a big-stack thread");
    match handle.join() {
        Ok(r) => r,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// The outcome of evaluating one in-memory module, as a short string
/// (`Ok(plan)`, `Ok(None)` or `Err(message)`).
fn outcome(loader: &MemoryLoader, module: &str) -> (String, Option<PatchPlan>) {
    match evaluate(loader, module, "config") {
        Ok(Some(e)) => (format!("Ok(plan with {} patches)", e.plan.patches.len()), Some(e.plan)),
        Ok(None) => ("Ok(None)".into(), None),
        Err(e) => (format!("Err({})", e.message), None),
    }
}

/// Evaluate `a` (and `b`) as `pkg.a_patch_gen_config` (`pkg.b_…`), which
/// may import each other. Returns each module's outcome and the plans.
fn eval_modules(a: &str, b: Option<&str>) -> (Vec<String>, Vec<PatchPlan>) {
    let mut mods: Vec<(&str, &str)> = vec![(MOD_A, a)];
    if let Some(b) = b {
        mods.push((MOD_B, b));
    }
    let loader = MemoryLoader::new(mods.iter().copied());
    let mut outcomes = Vec::new();
    let mut plans = Vec::new();
    for (name, _) in &mods {
        let (o, plan) = outcome(&loader, name);
        outcomes.push(o);
        plans.extend(plan);
    }
    (outcomes, plans)
}

/// Generate `plan` over `upstream` and diff the result as the pipeline does.
fn generate_and_diff(plan: &PatchPlan, upstream: &ParsedFile) -> Result<(), String> {
    let raw = codegen::generate(plan, upstream, "5.9.0").map_err(|e| e.message)?;
    let _ = patchgen_core::pipeline::build_diff(&upstream.text, &raw, &plan.source_module, &plan.target_file);
    Ok(())
}

const FIXED_CONFIG: &str = r#"
from patchgen import PatchConfig
import torch

config = PatchConfig(source_module="m.modeling_m", target_file="patched_m.py", description="fixed")
config.add_import("torch.nn", names=["Linear"])
config.add_import("math", is_from_import=False)
config.drop_import_names("os", "Optional")
config.add_post_import_block("FLAG = True")
config.exclude_from_output("C", "h", "X")


# helper comment
@config.add_helper
def helper_one(x):
    return x


@config.add_helper_after("A")
class AfterA:
    pass


@config.add_helper_after("f")
def after_f():
    return 1


@config.replace_class("B", description="replace B")
class FastB(object):
    def forward(self, x):
        return x


@config.override_method("A.forward", description="(nested (parens))")
@torch.no_grad()
def a_forward(self, x, *args, **kwargs):
    # body comment
    return x * 2


@config.override_method("A.__init__")
def a_init(self):
    super().__init__()


@config.replace_function("f", name_map={"g": "g2", "A": "AA"})
def fast_f(a, b=1):
    return g(a) + b


@config.replace_function("g")
async def fast_g(x):
    return x
"#;

const TOY_UPSTREAM: &str = r#""""Toy upstream."""
import os
from typing import Optional
from .configuration_m import MConfig
from ... import utils as u

X = 1
__all__ = ["A", "B", "C", "f", "g", "h", "X"]


@decorator(arg=(1, 2))
class A(nn.Module):
    def __init__(self):
        super().__init__()

    # comment before forward
    @torch.no_grad()
    def forward(self, x):
        return x


class B:
    def forward(self, x): return x


class C: pass


def f(a, b=1):
    return g(a) + b


async def g(x):
    return x


def h():
    ...
"#;

fn fixed_plan() -> PatchPlan {
    let loader = MemoryLoader::new([(MOD_A, FIXED_CONFIG)]);
    match evaluate(&loader, MOD_A, "config") {
        Ok(Some(e)) => e.plan,
        Ok(None) => panic!("the fixed config defines no `config`"),
        Err(e) => panic!("the fixed config does not evaluate: {}", e.message),
    }
}

// ---------------------------------------------------------------------------
// Property tests: realistic fragments, shuffled, cut and salted with random
// text.

/// Lines of config modules. Self-referential containers (`a.append(a)`)
/// are left out: they overflow the stack today, see
/// `cyclic_list_equality_does_not_overflow` below.
const CONFIG_FRAGMENTS: &[&str] = &[
    "from patchgen import PatchConfig\n",
    "from patchgen import *\n",
    "from patchgen import PatchConfig, Patch, PatchType, ImportSpec, PositionedHelper, create_patch_from_external\n",
    "import copy\n",
    "import torch\nfrom torch import nn\n",
    "from typing import Optional\n",
    "config = PatchConfig(source_module=\"m.modeling_m\", target_file=\"patched.py\")\n",
    "config = PatchConfig(\"m\", description=\"d\", transformers_version=\"1.0\")\n",
    "from pkg.b_patch_gen_config import config\n",
    "from pkg.b_patch_gen_config import config as base\n",
    "from pkg.a_patch_gen_config import config as me\n",
    "from pkg.b_patch_gen_config import *\n",
    "from . import b_patch_gen_config\n",
    "from .a_patch_gen_config import *\n",
    "import pkg.b_patch_gen_config as other\n",
    "config = copy.deepcopy(base)\n",
    "config.helpers.extend(base.helpers)\n",
    "config.patches = [p for p in config.patches if p.target != \"A.forward\"]\n",
    "config.target_file = \"t.py\"\n",
    "config.exclude_from_output(\"A\", \"f\")\n",
    "config.add_import(\"torch.nn\", names=[\"Linear\"], alias=None)\n",
    "config.drop_import_names(\"os\")\n",
    "config.drop_imported_names.update({\"x\"})\n",
    "config.add_post_import_block(\"\"\"\n    X = 1\n    \"\"\")\n",
    "config.replace_function(\"f\", replacement=f_impl)\n",
    "config.replace_class(\"A\", replacement=Impl, name_map={\"A\": \"B\"})\n",
    "config.patches.append(create_patch_from_external(\"A\", \"ext\", \"A2\"))\n",
    "config.additional_imports.append(ImportSpec(module=\"x\", names=[\"y\"]))\n",
    "config.positioned_helpers.append(PositionedHelper(target=\"A\", helper=f_impl))\n",
    "def f_impl(x):\n    return x\n",
    "class Impl(nn.Module):\n    def forward(self, x):\n        return x\n",
    "@config.replace_class(\"A\", description=\"d\")\nclass A2:\n    pass\n",
    "@config.override_method(\"A.forward\")\n@torch.no_grad()\ndef fwd(self, x):\n    # c\n    return x\n",
    "@config.override_method(\n    \"B.forward\",\n    description=\"(x)\",\n)\ndef fwd2(self):\n    ...\n",
    "@config.replace_function(\"f\", name_map={\"g\": \"h\"})\nasync def f2():\n    pass\n",
    "@config.modify_init(\"A\")\ndef init(self):\n    pass\n",
    "@config.add_helper\ndef helper(x):\n    return x\n",
    "@config.add_helper()\nclass H:\n    x = 1\n",
    "@config.add_helper_after(\"A\")\ndef after(x):\n    return x\n",
    "# a comment\n",
    "\n",
    "x = [1, \"a\", (2, 3), {\"k\": None}, {1, 2}]\n",
    "y = x[1:] + x[:-1]\nz = y * 2\n",
    "d = {\"a\": 1} | {\"b\": 2}\n",
    "s = \"ab\" * 3 + str(len(x)) + f\"{x}\"\n",
    "t = sorted([\"b\", \"a\"])\n",
    "if s == \"x\":\n    pass\nelif not x:\n    y = 1\nelse:\n    y = 2\n",
    "for i in range(3):\n    pass\n",
    "try:\n    import foo\nexcept ImportError:\n    foo = None\n",
    "with open(\"f\") as fh:\n    pass\n",
    "n = 2 ** 70 + 9223372036854775807 * 9223372036854775807\n",
    "m = -9223372036854775808 // -1\n",
    "lambda_ = lambda q: q\n",
    "del x\n",
    "assert True\n",
    "global g\n",
];

const UPSTREAM_FRAGMENTS: &[&str] = &[
    "import os\n",
    "from typing import Optional\n",
    "from . import sibling\n",
    "from ....... import deep\n",
    "from ..x import (\n    a,\n    b as c,\n)\n",
    "__all__ = [\"A\", \"B\", \"f\"]\n",
    "__all__ = (\"A\",)\n",
    "\"\"\"docstring\"\"\"\n",
    "X: int = 1\n",
    "class A:\n    def forward(self, x):\n        return x\n",
    "class A(nn.Module):\n    \"\"\"Doc.\"\"\"\n\n    def __init__(self):\n        super().__init__()\n\n    # c\n    @torch.no_grad()\n    def forward(self, x,\n                y):\n        return (x +\n                y)\n",
    "class B: pass\n",
    "class B:\n    forward = None\n",
    "@dec(\n    a=1,\n)\nclass C:\n    def forward(self): ...\n",
    "def f(a, b=1):\n    return a\n",
    "async def g():\n    pass\n",
    "def h(): return [\n1]\n",
    "if TYPE_CHECKING:\n    import x\n",
    "# comment\n",
    "\n",
    "\t\n",
    "    \n",
];

/// A module: some fragments, with random text mixed in and maybe cut short.
fn module_strategy(fragments: &'static [&'static str]) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        8 => prop::sample::select(fragments).prop_map(str::to_string),
        1 => "\\PC{0,24}",
        1 => prop::collection::vec(any::<u8>(), 0..24).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => "[ \t]{0,8}[()\\[\\]{}:@#\"'\\\\\n]{1,4}",
    ];
    (prop::collection::vec(piece, 0..16), any::<prop::sample::Index>(), any::<bool>()).prop_map(
        |(pieces, cut, do_cut)| {
            let mut text = pieces.concat();
            if do_cut && !text.is_empty() {
                let mut at = cut.index(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text.truncate(at);
            }
            text
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Evaluating one or two (mutually importing) config modules never
    /// panics; every plan that comes out generates without panicking.
    #[test]
    fn evaluate_never_panics(a in module_strategy(CONFIG_FRAGMENTS), b in prop::option::of(module_strategy(CONFIG_FRAGMENTS))) {
        on_big_stack(move || {
            let (_, plans) = eval_modules(&a, b.as_deref());
            let upstream = ParsedFile::parse(PathBuf::new(), TOY_UPSTREAM).expect("toy upstream parses");
            for plan in &plans {
                let _ = generate_and_diff(plan, &upstream);
            }
        });
    }

    /// Generating over any upstream module never panics, with the fixed
    /// plan and with a generated config's plan.
    #[test]
    fn generate_never_panics(upstream in module_strategy(UPSTREAM_FRAGMENTS), config in module_strategy(CONFIG_FRAGMENTS)) {
        on_big_stack(move || {
            let Ok(parsed) = ParsedFile::parse(PathBuf::new(), &upstream) else { return };
            let (_, mut plans) = eval_modules(&config, None);
            plans.push(fixed_plan());
            for plan in &plans {
                let _ = generate_and_diff(plan, &parsed);
            }
        });
    }
}

// ---------------------------------------------------------------------------
// Provenance (issue 25): every generated line has an origin.

/// Codegen's trace of `plan` over `upstream`: one origin per raw line, and
/// each line copied from upstream is that upstream line. Returns the raw
/// text and trace when generation succeeds.
fn check_trace(plan: &PatchPlan, upstream: &ParsedFile) -> Option<(String, patchgen_core::provenance::raw::RawTrace)> {
    use patchgen_core::provenance::raw::RawOrigin;
    let (raw, trace) = codegen::generate_traced(plan, upstream, "5.9.0", &codegen::Cache::default()).ok()?;
    assert_eq!(raw, codegen::generate(plan, upstream, "5.9.0").unwrap(), "tracing changes no byte");
    let lines: Vec<&str> = raw.split('\n').collect();
    assert_eq!(trace.lines.len(), lines.len(), "one origin per raw line");
    // Upstream line numbers count `\n`-separated lines only when that is the only break.
    if upstream.only_newline_breaks() && patchgen_python::pytext::only_newline_breaks(&raw) {
        let up: Vec<&str> = upstream.text.split('\n').collect();
        for (i, o) in trace.lines.iter().enumerate() {
            if let RawOrigin::Upstream { line } = o {
                assert_eq!(Some(&lines[i]), up.get(*line as usize - 1), "raw line {} is upstream line {line}", i + 1);
            }
        }
    }
    Some((raw, trace))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// For random configs over random upstream modules, every raw line has
    /// an origin and every upstream origin is the line's own text.
    #[test]
    fn every_raw_line_has_an_origin(upstream in module_strategy(UPSTREAM_FRAGMENTS), config in module_strategy(CONFIG_FRAGMENTS)) {
        on_big_stack(move || {
            let Ok(parsed) = ParsedFile::parse(PathBuf::new(), &upstream) else { return };
            let (_, mut plans) = eval_modules(&config, None);
            plans.push(fixed_plan());
            for plan in &plans {
                let _ = check_trace(plan, &parsed);
            }
        });
    }
}

/// Through ruff (when `PATCHGEN_TEST_RUFF` is set): every line of the final
/// file has an origin, and every line the map says ruff did not touch and
/// codegen copied from upstream is that upstream line's text.
#[test]
fn every_final_line_has_an_origin() {
    use patchgen_core::provenance::map::{SourceMap, Step};
    use patchgen_core::provenance::raw::RawOrigin;
    use proptest::strategy::ValueTree;
    let Some(ruff) = std::env::var_os("PATCHGEN_TEST_RUFF") else {
        eprintln!("skipping: PATCHGEN_TEST_RUFF is not set");
        return;
    };
    // Fragments use names nothing defines: only the rules that reject a
    // file without fixing it are ignored.
    let ignore = ["F821", "F822", "F811", "F841", "E999"].map(String::from).to_vec();
    let ruff = patchgen_core::normalize::Ruff {
        program: ruff.into(),
        extra_ignore: ignore,
        isolated: true,
        env: patchgen_core::settings::Env::capture(),
    };
    let upstreams = [TOY_UPSTREAM.to_string(), UPSTREAM_FRAGMENTS.join("\n")];
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let configs = module_strategy(CONFIG_FRAGMENTS);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("patched_m.py");
    let mut checked = 0;
    for case in 0..24 {
        let config = configs.new_tree(&mut runner).unwrap().current();
        let upstream = &upstreams[case % upstreams.len()];
        let Ok(parsed) = ParsedFile::parse(PathBuf::new(), upstream) else { continue };
        let (_, mut plans) = eval_modules(&config, None);
        plans.push(fixed_plan());
        for plan in &plans {
            let Some((raw, trace)) = check_trace(plan, &parsed) else { continue };
            let steps = match ruff.steps(&raw, &target) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("ruff: {e}");
                    continue;
                }
            };
            let map = SourceMap::build(&raw, &trace, &steps.fixed, &steps.formatted, &steps.fixes);
            let final_lines = patchgen_python::pytext::splitlines(&steps.formatted);
            assert_eq!(map.lines.len(), final_lines.len(), "one origin per final line");
            let up = parsed.splitlines();
            for (i, m) in map.lines.iter().enumerate() {
                if let (Step::Kept, Some(RawOrigin::Upstream { line })) = (m.step, m.raw) {
                    assert_eq!(Some(&final_lines[i]), up.get(line as usize - 1), "final line {}", i + 1);
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} plans went through ruff");
}

// ---------------------------------------------------------------------------
// Regressions.

const HEADER: &str = "from patchgen import PatchConfig\nconfig = PatchConfig(source_module=\"m\")\n";

fn nested(open: &str, inner: &str, close: &str, depth: usize) -> String {
    let mut s = String::with_capacity(depth * (open.len() + close.len()) + inner.len());
    for _ in 0..depth {
        s.push_str(open);
    }
    s.push_str(inner);
    for _ in 0..depth {
        s.push_str(close);
    }
    s
}

/// Deeply nested expressions of every shape, 100,000 levels.
fn deep_expressions() -> Vec<(&'static str, String)> {
    const DEPTH: usize = 100_000;
    vec![
        ("parens", nested("(", "1", ")", DEPTH)),
        ("lists", nested("[", "", "]", DEPTH)),
        ("tuples", nested("(", "1,", ",)", DEPTH)),
        ("dicts", nested("{1: ", "2", "}", DEPTH)),
        ("calls", nested("f(", "", ")", DEPTH)),
        ("not", nested("not ", "x", "", DEPTH)),
        ("unary minus", nested("-", "1", "", DEPTH)),
        ("binop chain", format!("1{}", "+1".repeat(DEPTH))),
        ("attribute chain", format!("a{}", ".b".repeat(DEPTH))),
        ("call chain", format!("f{}", "()".repeat(DEPTH))),
        ("subscript chain", format!("x{}", "[0]".repeat(DEPTH))),
        ("power chain", format!("2{}", "**2".repeat(DEPTH))),
        ("lambdas", format!("{}0", "lambda: ".repeat(DEPTH))),
        ("conditional chain", format!("1{}", " if x else 1".repeat(DEPTH))),
    ]
}

/// The statements deep expressions are put in: evaluated ones, ones the
/// evaluator only scans for names, and ones it does not look into.
fn deep_statements(expr: &str) -> Vec<String> {
    vec![
        format!("x = {expr}\n"),
        format!("config.description = {expr}\n"),
        format!("for i in {expr}:\n    pass\n"),
        format!("@{expr}\ndef f():\n    pass\n"),
        format!("def f(a={expr}):\n    pass\n"),
        format!("class K({expr}):\n    pass\n"),
    ]
}

/// 100,000 nested parentheses (and other deep nests) in a config: `Ok` or
/// `Err`, no stack overflow on the CLI's stack.
#[test]
fn deep_nesting_in_config() {
    on_big_stack(|| {
        for (what, expr) in deep_expressions() {
            for stmt in deep_statements(&expr) {
                let text = format!("{HEADER}{stmt}");
                let (outcomes, _) = eval_modules(&text, None);
                assert_eq!(outcomes.len(), 1, "{what}");
            }
        }
    });
}

/// 100,000 nested parentheses (and other deep nests) in an upstream module,
/// at module level and inside a patched class and function.
#[test]
fn deep_nesting_in_upstream() {
    on_big_stack(|| {
        let plan = fixed_plan();
        for (what, expr) in deep_expressions() {
            let modules = [
                format!("{TOY_UPSTREAM}\nx = {expr}\n"),
                format!("{TOY_UPSTREAM}\nclass A:\n    def forward(self):\n        return {expr}\n"),
                format!("{TOY_UPSTREAM}\ndef f(a={expr}):\n    pass\n"),
                format!("{TOY_UPSTREAM}\n__all__ = [{expr}]\n"),
            ];
            for text in modules {
                if let Ok(parsed) = ParsedFile::parse(PathBuf::new(), &text) {
                    let _ = generate_and_diff(&plan, &parsed);
                }
                let _ = what;
            }
        }
    });
}

/// Deep nesting in a replacement's source (it is re-parsed by codegen).
#[test]
fn deep_nesting_in_replacement_source() {
    on_big_stack(|| {
        let upstream = ParsedFile::parse(PathBuf::new(), TOY_UPSTREAM).expect("toy upstream parses");
        let expr = nested("(", "1", ")", 100_000);
        let text = format!(
            "{HEADER}\n@config.override_method(\"A.forward\")\ndef fwd(self):\n    return {expr}\n\n\n\
             @config.replace_function(\"f\")\ndef f2():\n    return {expr}\n"
        );
        let (_, plans) = eval_modules(&text, None);
        for plan in &plans {
            let _ = generate_and_diff(plan, &upstream);
        }
    });
}

/// A config that imports itself, in every import form.
#[test]
fn config_importing_itself() {
    let forms = [
        "from pkg.a_patch_gen_config import config\n",
        "from pkg.a_patch_gen_config import *\n",
        "import pkg.a_patch_gen_config\nx = pkg.a_patch_gen_config.config\n",
        "from . import a_patch_gen_config\nx = a_patch_gen_config.config\n",
        "from .a_patch_gen_config import config as me\nme.target_file = \"x.py\"\n",
    ];
    for form in forms {
        for text in [format!("{form}{HEADER}"), format!("{HEADER}{form}")] {
            let (outcomes, _) = on_big_stack(move || eval_modules(&text, None));
            assert_eq!(outcomes.len(), 1);
        }
    }
}

/// Two configs importing each other (a cycle), both ways round.
#[test]
fn configs_importing_each_other() {
    let a = format!("from pkg.b_patch_gen_config import y\n{HEADER}x = 1\n");
    let b = format!("from pkg.a_patch_gen_config import x\n{HEADER}y = 2\n");
    let (outcomes, _) = on_big_stack(move || eval_modules(&a, Some(&b)));
    assert_eq!(outcomes.len(), 2);
    for o in &outcomes {
        assert!(o.starts_with("Err("), "a circular import fails as in Python: {o}");
    }

    // A cycle through star imports and through the config objects.
    let a = format!("{HEADER}from pkg.b_patch_gen_config import *\nconfig.helpers.extend(other.helpers)\n");
    let b = format!("from pkg.a_patch_gen_config import *\nother = config\n{HEADER}");
    let (outcomes, _) = on_big_stack(move || eval_modules(&a, Some(&b)));
    assert_eq!(outcomes.len(), 2);
}

/// Binary garbage: through the in-memory loader (lossily decoded) and
/// through the file loader (which must reject invalid UTF-8 with an error).
#[test]
fn binary_garbage() {
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    bytes.extend_from_slice(b"\xff\xfe\x00\x00\xc3\x28\xe2\x82");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..4096 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.push(state as u8);
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let text2 = text.clone();
    let (outcomes, _) = on_big_stack(move || eval_modules(&text, Some(&text2)));
    assert!(outcomes.iter().all(|o| o.starts_with("Err(")), "{outcomes:?}");

    let text = String::from_utf8_lossy(&bytes).into_owned();
    on_big_stack(move || {
        if let Ok(parsed) = ParsedFile::parse(PathBuf::new(), &text) {
            let _ = generate_and_diff(&fixed_plan(), &parsed);
        }
    });

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("pkg")).expect("mkdir");
    std::fs::write(dir.path().join("pkg/a_patch_gen_config.py"), &bytes).expect("write");
    let root = dir.path().to_path_buf();
    let result = on_big_stack(move || {
        let loader = ProjectLoader::new(vec![root]);
        evaluate(&loader, MOD_A, "config").map(|e| e.is_some()).map_err(|e| e.message)
    });
    assert!(result.is_err(), "invalid UTF-8 is an error: {result:?}");
}

/// An empty config has no `config`; an empty upstream generates.
#[test]
fn empty_files() {
    let (outcomes, _) = on_big_stack(|| eval_modules("", Some("")));
    assert_eq!(outcomes, ["Ok(None)", "Ok(None)"]);
    let generated = on_big_stack(|| {
        let parsed = ParsedFile::parse(PathBuf::new(), "").expect("empty module parses");
        let plan = fixed_plan();
        codegen::generate(&plan, &parsed, "5.9.0").map_err(|e| e.message)
    });
    // The fixed config's `add_helper_after` targets do not exist: an error,
    // not a panic.
    assert!(generated.is_err(), "{generated:?}");
}

/// Evaluation of a few hostile-but-small configs finishes quickly.
#[test]
fn small_inputs_stay_fast() {
    let cases = [
        format!("{HEADER}s = 'x' * 99999\nt = s + s\n"),
        format!("{HEADER}x = [{}]\n", "1, ".repeat(50_000)),
        format!("{HEADER}{}", "config.exclude_from_output('A')\n".repeat(5_000)),
    ];
    for text in cases {
        let start = std::time::Instant::now();
        let (outcomes, _) = on_big_stack(move || eval_modules(&text, None));
        assert_eq!(outcomes.len(), 1);
        assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    }
}

// ---------------------------------------------------------------------------
// Regressions for bugs fuzzing and review found (each once aborted the test
// binary with a stack overflow or ate gigabytes).

/// Was a bug: `==` / `in` / `.index()` / `.remove()` / set and dict keys on a
/// self-referential list recurse without bound in `Value::py_eq` →
/// `seq_eq` (src/config/value.rs) and overflow even the 256 MiB stack
/// (the process aborts). Python answers `a == a` with `True` (containers
/// compare items with `x is y or x == y`) and raises `RecursionError` for two
/// distinct cyclic lists: either an answer or an `EvalError` is fine here.
#[test]
fn cyclic_list_equality_does_not_overflow() {
    let cases = [
        "a = []\na.append(a)\nb = a == a\n",
        "a = []\na.append(a)\nb = []\nb.append(b)\nc = a == b\n",
        "a = []\na.append(a)\nb = []\nb.append(b)\nc = b in a\n",
        "a = []\na.append(a)\nb = [a].index(a)\n",
        "a = []\na.append(a)\na.remove(a)\n",
        "t = ([],)\nt[0].append(t)\nb = t == t\n",
        "a = []\na.append(a)\ns = set()\ns.add((a,))\ns.add((a,))\n",
        "a = []\na.append(a)\nd = {(a,): 1}\nd[(a,)] = 2\n",
    ];
    for case in cases {
        let text = format!("{HEADER}{case}");
        let (outcomes, _) = on_big_stack(move || eval_modules(&text, None));
        assert_eq!(outcomes.len(), 1);
    }
}

/// Was a bug: `copy.deepcopy` of a `PatchConfig` or `Patch` that (directly)
/// contains itself recurses without bound in `deep_copy`
/// (src/config/value.rs): the `Config` and `Patch` arms record the copy in
/// `memo` only after copying the fields, unlike the `List` and `Dict` arms.
#[test]
fn deepcopy_of_self_containing_object_does_not_overflow() {
    let cases = [
        "import copy\nconfig.description = config\nc = copy.deepcopy(config)\n",
        "import copy\nconfig.target_file = config\nc = copy.deepcopy(config)\n",
        "from patchgen import Patch, PatchType\nimport copy\np = Patch(PatchType.CLASS_REPLACEMENT, 'A', None)\np.target = p\nq = copy.deepcopy(p)\n",
    ];
    for case in cases {
        let text = format!("{HEADER}{case}");
        let (outcomes, _) = on_big_stack(move || eval_modules(&text, None));
        assert_eq!(outcomes.len(), 1);
    }
    // The same through a second config, as `copy.deepcopy(base_config)` is used.
    let b = format!("{HEADER}config.description = config\n");
    let a =
        "import copy\nfrom pkg.b_patch_gen_config import config as base\nconfig = copy.deepcopy(base)\n".to_string();
    let (outcomes, _) = on_big_stack(move || eval_modules(&a, Some(&b)));
    assert_eq!(outcomes.len(), 2);
}

/// Was a bug (resource exhaustion): values built by repetition have no size
/// limit, so a few lines allocate gigabytes. `s = "x" * 99999` then
/// `s = s * 99999` builds a 10 GB string (about 20 GB peak, 30 s); 40 lines
/// of `a += a` never finish. Expected: an `EvalError` once a value passes a
/// cap (e.g. 10^7 items or characters). The sizes here are kept small
/// enough (≈ 4 GB peak today) not to endanger the machine.
#[test]
fn runaway_growth_is_an_error() {
    let cases = ["s = 'x' * 99999\nt = s * 20000\n".to_string(), format!("a = [1]\n{}", "a += a\n".repeat(24))];
    for case in cases {
        let text = format!("{HEADER}{case}");
        let start = std::time::Instant::now();
        let (outcomes, _) = on_big_stack(move || eval_modules(&text, None));
        assert!(outcomes[0].starts_with("Err("), "{outcomes:?} after {:?}", start.elapsed());
    }
}
