//! Shared pieces of the patchgen fuzz targets (see `fuzz/README.md`).
//!
//! Everything runs on one long-lived worker thread with the CLI's 256 MiB
//! stack (`src/cli/run.rs` `STACK_SIZE`): the ruff parser and the evaluator
//! recurse on nested input, and the property under test is "no panic, no
//! hang, no stack overflow *with the stack the CLI gives them*".

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use patchgen_core::codegen;
use patchgen_config::loader::{MemoryLoader, ModuleLoader, ProjectLoader};
use patchgen_config::source::ParsedFile;
use patchgen_config::{PatchPlan, evaluate};

/// Same as the CLI's evaluation threads.
pub const STACK_SIZE: usize = 256 << 20;

/// Module names the two parts of a fuzz input are loaded as. Both live in
/// package `pkg`, so `from .b_patch_gen_config import x` works too.
pub const MOD_A: &str = "pkg.a_patch_gen_config";
pub const MOD_B: &str = "pkg.b_patch_gen_config";

/// The `transformers` version passed to `generate`, as the CLI's default.
pub const TRANSFORMERS_VERSION: &str = "5.9.0";

type Job = Box<dyn FnOnce() + Send>;

/// Run `f` on the big-stack worker thread and wait for its result. A panic
/// or stack overflow there aborts the process, which libFuzzer reports.
pub fn on_big_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    static WORKER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = WORKER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("patchgen-fuzz-worker".into())
            .stack_size(STACK_SIZE)
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .expect("spawn the big-stack worker");
        Mutex::new(tx)
    });
    let (rtx, rrx) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = rtx.send(f());
    });
    sender.lock().expect("worker sender").send(job).expect("worker alive");
    rrx.recv().expect("worker result")
}

/// Split an input at its first NUL byte (NUL never appears in valid Python,
/// so it makes a convenient separator for the mutator to insert or remove).
pub fn split_at_nul(data: &[u8]) -> (String, Option<String>) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (
            String::from_utf8_lossy(&data[..i]).into_owned(),
            Some(String::from_utf8_lossy(&data[i + 1..]).into_owned()),
        ),
        None => (String::from_utf8_lossy(data).into_owned(), None),
    }
}

/// Evaluate `a` (and `b`, when present) as in-memory config modules that may
/// import each other; returns the plans that evaluated. Errors are fine:
/// only panics, hangs and crashes are findings.
pub fn eval_modules(a: &str, b: Option<&str>) -> Vec<PatchPlan> {
    let mut mods: Vec<(&str, &str)> = vec![(MOD_A, a)];
    if let Some(b) = b {
        mods.push((MOD_B, b));
    }
    let loader = MemoryLoader::new(mods.iter().copied());
    let mut plans = Vec::new();
    for (name, _) in &mods {
        if let Ok(Some(evaluated)) = evaluate(&loader, name, "config") {
            plans.push(evaluated.plan);
        }
    }
    // A name that is not a `PatchConfig`, and one that is never bound.
    let _ = evaluate(&loader, MOD_A, "__name__");
    let _ = evaluate(&loader, MOD_A, "no_such_name");
    plans
}

/// Generate `plan` over `upstream`, then diff the result against the
/// upstream text as the pipeline does (minus ruff, which is an external
/// program).
pub fn generate_and_diff(plan: &PatchPlan, upstream: &ParsedFile) {
    if let Ok(raw) = codegen::generate(plan, upstream, TRANSFORMERS_VERSION) {
        let _ = patchgen_core::pipeline::build_diff(&upstream.text, &raw, &plan.source_module, &plan.target_file);
    }
}

/// Small hand-written configs over names that fuzzed upstream modules are
/// likely to contain (`class A`, `def f`, `A.forward`, …), covering every
/// DSL entry point.
pub const FIXED_CONFIGS: &[&str] = &[
    r#"
from patchgen import PatchConfig
import torch

config = PatchConfig(source_module="m.modeling_m", target_file="patched_m.py", description="fixed 1")
config.add_import("torch.nn", names=["Linear", "Module"])
config.add_import("math", is_from_import=False)
config.add_import("numpy", alias="np", is_from_import=False)
config.drop_import_names("os", "Optional", "nn")
config.add_post_import_block("""
    FLAG = True
    """)
config.exclude_from_output("C", "h", "__all__", "X")


# helper comment
@config.add_helper
def helper_one(x):
    return x


@config.add_helper_after("A")
class AfterA:
    pass


@config.add_helper_after("f")
def after_f():
    # comment
    return 1


@config.replace_class("B", description="replace B")
class FastB(object):
    """Doc."""

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
"#,
    r#"
from patchgen import PatchConfig, create_patch_from_external

config = PatchConfig(source_module="m.modeling_m", target_file="patched_m.py")
config.patches.append(create_patch_from_external("A", "ext.mod", "FastA"))
config.patches.append(create_patch_from_external("B.forward", "ext.mod", "b_forward"))


@config.modify_init("A")
def a_init_mod(self):
    pass


@config.override_method("B.forward")
def b_forward(self, x):
    if x:
        def inner():
            pass
    return x


@config.override_method("A.missing")
def a_missing(self):
    ...


@config.override_method("A.f")
class NotAFunction:
    pass


@config.replace_class("C", name_map={"C": "D"})
class D:
    def __init__(self):
        self.d = D
"#,
    r#"
from patchgen import PatchConfig

config = PatchConfig(source_module="m", target_file="out.py", transformers_version="0.0.1")


def f_repl():
    pass


class K:
    def forward(self):
        return 0


config.replace_function("f", replacement=f_repl)
config.replace_class("A", replacement=K, description="direct")
config.override_method("K.forward", replacement=f_repl)
config.override_method("A.forward", replacement=f_repl)
config.add_helper(K)
config.add_helper_after("B", K)
config.exclude_from_output("A")
"#,
];

/// `tests/fixtures` of the main crate.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Plans to run over fuzzed upstream modules: the fixed configs above plus
/// every fixture config that evaluates (read from `tests/fixtures` at run
/// time, so nothing is copied). Evaluated once.
pub fn fixed_plans() -> &'static [PatchPlan] {
    static PLANS: OnceLock<Vec<PatchPlan>> = OnceLock::new();
    PLANS.get_or_init(|| {
        let mut plans = Vec::new();
        for text in FIXED_CONFIGS {
            let loader = MemoryLoader::new([(MOD_A, *text)]);
            match evaluate(&loader, MOD_A, "config") {
                Ok(Some(e)) => plans.push(e.plan),
                Ok(None) => panic!("fixed config did not define `config`"),
                Err(e) => panic!("fixed config does not evaluate: {} ({:?})", e.message, e.loc),
            }
        }
        let Ok(cases) = std::fs::read_dir(fixtures_dir()) else { return plans };
        let mut cases: Vec<PathBuf> = cases.filter_map(|e| e.ok().map(|e| e.path())).collect();
        cases.sort();
        for case in cases {
            let mut files = Vec::new();
            walk(&case.join("pkg"), &mut files);
            let loader = ProjectLoader::new(vec![case.clone()]);
            for f in files {
                let Ok(rel) = f.strip_prefix(&case) else { continue };
                let s = rel.to_string_lossy();
                if !s.ends_with("_patch_gen_config.py") {
                    continue;
                }
                let module = s.trim_end_matches(".py").replace('/', ".");
                if !loader.exists(&module) {
                    continue;
                }
                if let Ok(Some(e)) = evaluate(&loader, &module, "config") {
                    plans.push(e.plan);
                }
            }
        }
        plans
    })
}

/// A small upstream module with the names the fixed configs patch.
pub const TOY_UPSTREAM: &str = r#""""Toy upstream."""
import os
from typing import Optional
from torch import nn
from .configuration_m import MConfig
from ... import utils as u

X = 1
__all__ = ["A", "B", "C", "f", "g", "h", "X"]


@decorator(
    arg=(1, 2),
)
class A(nn.Module):
    """A."""

    def __init__(self):
        super().__init__()

    # comment before forward
    @torch.no_grad()
    def forward(self, x):
        return x

    def f(self):
        pass


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

/// Upstream modules to run fuzzed configs over: the toy above plus the
/// fixtures' upstream `modeling_*.py` files (read at run time). Parsed once.
pub fn fixed_upstreams() -> &'static [ParsedFile] {
    static UPSTREAMS: OnceLock<Vec<ParsedFile>> = OnceLock::new();
    UPSTREAMS.get_or_init(|| {
        let mut out = vec![ParsedFile::parse(PathBuf::new(), TOY_UPSTREAM).expect("toy upstream parses")];
        let mut files = Vec::new();
        walk(&fixtures_dir(), &mut files);
        for f in files {
            let is_modeling = f.components().any(|c| c.as_os_str() == "upstream")
                && f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("modeling_"));
            if !is_modeling {
                continue;
            }
            if let Ok(text) = std::fs::read_to_string(&f) {
                if let Ok(p) = ParsedFile::parse(f.clone(), &text) {
                    out.push(p);
                }
            }
        }
        out
    })
}
