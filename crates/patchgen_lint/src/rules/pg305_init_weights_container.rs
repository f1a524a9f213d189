//! PG305 init-weights-container: an `_init_weights` branch keyed on a module class that owns no parameters or buffers itself (transformers ≥ 5.16).
//!
//! ## What it does
//! For every `_init_weights` method of the generated module (patched or
//! kept from upstream), checks each `isinstance(module, X)` (also a tuple of
//! classes) where `X` is a class of the generated module: `X` and its bases
//! in the module must themselves create a parameter or buffer
//! (`self.w = nn.Parameter(...)`, `register_parameter`, `register_buffer`,
//! `nn.Buffer(...)`) or derive from a parameter-owning `torch.nn` layer
//! (`nn.Linear`, `nn.Embedding`, `nn.LayerNorm`, `nn.Conv*`, ...). Classes
//! imported from elsewhere, or with bases that cannot be followed, are
//! given the benefit of the doubt. Runs only when the upstream version is
//! 5.16 or newer. A class whose `_initialize_weights` (its own or a base's
//! in the module) passes `is_custom_code=False` to the next one is not
//! checked: its modules are initialised as transformers' own classes are,
//! parameter-less ones included.
//!
//! ## Why is this bad?
//! From transformers 5.16, `_initialize_weights` skips every module of
//! *custom code* (any class whose module is not under `transformers.`, as
//! every generated module's is) that has no parameters or buffers of its
//! own. A branch keyed on a container (`SparseMoeBlock`, which only holds
//! `experts` and `gate`) never runs: on random initialisation the experts
//! keep whatever `torch.empty` left (Qwen3-Omni-MoE experts came out with
//! `std=0.0`) and nothing reports it.
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3OmniMoePreTrainedModel._init_weights")
//! def _init_weights(self, module):
//!     super()._init_weights(module)
//!     if isinstance(module, Qwen3OmniMoeThinkerTextSparseMoeBlock):
//!         init.normal_(module.experts.gate_up_proj, std=self.config.initializer_range)
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3OmniMoePreTrainedModel._init_weights")
//! def _init_weights(self, module):
//!     super()._init_weights(module)
//!     if isinstance(module, Qwen3OmniMoeThinkerTextExperts):  # owns gate_up_proj
//!         init.normal_(module.gate_up_proj, std=self.config.initializer_range)
//! ```
//! or, where the tensors belong to torch layers (`module.o_proj.weight`, an
//! `nn.Linear`: no class to key on), initialise the generated code as
//! transformers' own (it initialises through `transformers.initialization`,
//! which skips loaded tensors):
//! ```python
//! @config.override_method("NanoChatPreTrainedModel._initialize_weights")
//! def _initialize_weights(self, module, is_custom_code: bool = False):
//!     super()._initialize_weights(module, is_custom_code=False)
//! ```

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtClassDef};
use ruff_text_size::Ranged;

use super::super::{LintContext, Rule, patched, pyfacts};
use patchgen_diagnostics::{Diagnostic, Severity};

pub const RULE: Rule = Rule {
    code: "PG305",
    name: "init-weights-container",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg305_init_weights_container.rs"),
    check,
    check_project: None,
};

/// The first version whose `_initialize_weights` skips parameter-less
/// modules of custom code.
pub const SINCE: (u64, u64) = (5, 16);

/// `major.minor` of a version string (`5.16.1` → (5, 16)).
pub fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.split('.');
    let major = parts.next()?.trim().parse().ok()?;
    let minor: String = parts.next()?.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((major, minor.parse().ok()?))
}

/// `torch.nn` layers that own parameters (a class deriving from one does).
const PARAM_LAYERS: &[&str] = &[
    "Linear",
    "Bilinear",
    "LazyLinear",
    "Embedding",
    "EmbeddingBag",
    "LayerNorm",
    "GroupNorm",
    "RMSNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "MultiheadAttention",
    "PReLU",
    "LSTM",
    "GRU",
    "RNN",
];

/// Bases known to own nothing themselves.
const EMPTY_BASES: &[&str] = &[
    "Module",
    "GradientCheckpointingLayer",
    "object",
    "ABC",
    "GenerationMixin",
    "ModuleList",
    "ModuleDict",
    "Sequential",
];

/// Whether a class body creates a parameter or buffer of its own.
pub fn creates_own_tensors(class: &StmtClassDef) -> bool {
    for stmt in &class.body {
        let Stmt::FunctionDef(f) = stmt else { continue };
        for expr in pyfacts::body_exprs(&f.body) {
            if let Expr::Call(c) = expr
                && let Some(name) = pyfacts::last_ident(&c.func)
                && matches!(
                    name,
                    "Parameter" | "Buffer" | "register_parameter" | "register_buffer" | "UninitializedParameter"
                )
            {
                return true;
            }
        }
    }
    false
}

/// `Some(true)`: `name` (a class of `body`) owns no parameter or buffer;
/// `Some(false)`: it does; `None`: not decidable (a base outside the module).
pub fn is_param_less(body: &[Stmt], name: &str) -> Option<bool> {
    let class = pyfacts::class(body, name)?;
    for c in pyfacts::local_lineage(body, class) {
        if creates_own_tensors(c) {
            return Some(false);
        }
        for base in pyfacts::base_names(c) {
            let last = base.rsplit('.').next().unwrap_or(&base);
            if pyfacts::class(body, &base).is_some() {
                continue;
            }
            if PARAM_LAYERS.contains(&last) {
                return Some(false);
            }
            if !EMPTY_BASES.contains(&last) {
                return None;
            }
        }
    }
    Some(true)
}

/// `isinstance(module, X)` / `isinstance(module, (X, Y))` calls of a body:
/// `(call, class names)`.
pub fn isinstance_checks(body: &[Stmt]) -> Vec<(&ExprCall, Vec<&str>)> {
    let mut out = Vec::new();
    for expr in pyfacts::body_exprs(body) {
        let Expr::Call(c) = expr else { continue };
        if !matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "isinstance") {
            continue;
        }
        let Some(classes) = c.arguments.args.get(1) else {
            continue;
        };
        let names: Vec<&str> = match classes {
            Expr::Name(n) => vec![n.id.as_str()],
            Expr::Tuple(t) => {
                t.elts.iter().filter_map(|e| if let Expr::Name(n) = e { Some(n.id.as_str()) } else { None }).collect()
            }
            _ => continue,
        };
        out.push((c, names));
    }
    out
}

/// Whether `class` (or a base of it in `body`) defines
/// `_initialize_weights` passing `is_custom_code=False` (keyword, or
/// `False` as the second argument) to another `_initialize_weights`.
pub fn initialises_as_transformers(body: &[Stmt], class: &StmtClassDef) -> bool {
    pyfacts::local_lineage(body, class).iter().any(|c| {
        pyfacts::method(c, "_initialize_weights").is_some_and(|f| {
            pyfacts::body_exprs(&f.body).iter().any(|e| {
                let Expr::Call(call) = e else { return false };
                let named = matches!(&*call.func, Expr::Attribute(a) if a.attr.id.as_str() == "_initialize_weights");
                let is_false = |e: &Expr| matches!(e, Expr::BooleanLiteral(b) if !b.value);
                named
                    && (call.arguments.args.get(1).is_some_and(is_false)
                        || call.arguments.keywords.iter().any(|k| {
                            k.arg.as_ref().is_some_and(|a| a.id.as_str() == "is_custom_code") && is_false(&k.value)
                        }))
            })
        })
    })
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if major_minor(&ctx.shared.upstream.upstream.version).is_none_or(|v| v < SINCE) {
        return out;
    }
    let body = ctx.generated.body();
    let anchor = patched::config_anchor(ctx);
    for stmt in body {
        let Stmt::ClassDef(class) = stmt else {
            continue;
        };
        let Some(init) = pyfacts::method(class, "_init_weights") else {
            continue;
        };
        if initialises_as_transformers(body, class) {
            continue;
        }
        for (call, names) in isinstance_checks(&init.body) {
            for name in names {
                if is_param_less(body, name) != Some(true) {
                    continue;
                }
                let qual = format!("{}._init_weights", class.name.id);
                let patched = ctx.origin_of_line(ctx.generated.line_of(init.name.start())).is_some();
                let d = RULE
                    .diagnostic(format!(
                        "`{qual}` branches on `{name}`, which owns no parameters or buffers itself: transformers {}.{}+ skips such modules in custom code, so this branch never runs and what it initialises stays uninitialised",
                        SINCE.0, SINCE.1
                    ))
                    .help(if patched {
                        format!("key the branch on the leaf classes that own the tensors (the experts / router classes `{name}` holds) and initialise their own parameters")
                    } else {
                        format!("override `{qual}` in the config and key its branches on the leaf classes that own the tensors, not on `{name}`")
                    });
                out.push(ctx.at_generated(d, call.start(), Some(&anchor)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchgen_config::source::ParsedFile;
    use std::path::PathBuf;

    #[test]
    fn containers_and_leaves() {
        let src = "class Experts(nn.Module):\n    def __init__(self):\n        self.gate_up_proj = nn.Parameter(torch.empty(2))\n\
class Router(nn.Linear):\n    pass\n\
class Block(nn.Module):\n    def __init__(self):\n        self.experts = Experts()\n        self.gate = Router()\n\
class SubBlock(Block):\n    pass\n\
class Rope(nn.Module):\n    def __init__(self):\n        self.register_buffer(\"inv_freq\", x, persistent=False)\n\
class Foreign(SomeImportedNorm):\n    pass\n\
class Layer(GradientCheckpointingLayer):\n    def __init__(self):\n        self.mlp = Block()\n";
        let f = ParsedFile::parse(PathBuf::from("t.py"), src).unwrap();
        let b = f.body();
        assert_eq!(is_param_less(b, "Experts"), Some(false));
        assert_eq!(is_param_less(b, "Router"), Some(false));
        assert_eq!(is_param_less(b, "Block"), Some(true));
        assert_eq!(is_param_less(b, "SubBlock"), Some(true));
        assert_eq!(is_param_less(b, "Rope"), Some(false));
        assert_eq!(is_param_less(b, "Foreign"), None);
        assert_eq!(is_param_less(b, "Layer"), Some(true));
        assert_eq!(is_param_less(b, "Missing"), None);
    }

    #[test]
    fn isinstance_shapes() {
        let src = "def f(self, module):\n    if isinstance(module, A):\n        pass\n    elif isinstance(module, (B, nn.Linear, C)):\n        pass\n    elif isinstance(x, D) and True:\n        pass\n";
        let f = ParsedFile::parse(PathBuf::from("t.py"), src).unwrap();
        let Stmt::FunctionDef(fd) = &f.body()[0] else { panic!() };
        let names: Vec<Vec<&str>> = isinstance_checks(&fd.body).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, vec![vec!["A"], vec!["B", "C"], vec!["D"]]);
    }

    #[test]
    fn initialising_as_transformers_is_recognised() {
        let src = concat!(
            "class Pre(PreTrainedModel):\n    def _init_weights(self, module):\n        pass\n",
            "    def _initialize_weights(self, module, is_custom_code=False):\n",
            "        super()._initialize_weights(module, is_custom_code=False)\n",
            "class Sub(Pre):\n    pass\n",
            "class Positional(PreTrainedModel):\n    def _initialize_weights(self, module, is_custom_code=False):\n",
            "        super()._initialize_weights(module, False)\n",
            "class Passes(PreTrainedModel):\n    def _initialize_weights(self, module, is_custom_code=False):\n",
            "        super()._initialize_weights(module, is_custom_code)\n",
            "class Plain(PreTrainedModel):\n    def _init_weights(self, module):\n        pass\n",
        );
        let f = ParsedFile::parse(PathBuf::from("t.py"), src).unwrap();
        let b = f.body();
        let yes = |n: &str| initialises_as_transformers(b, pyfacts::class(b, n).unwrap());
        assert!(yes("Pre") && yes("Sub") && yes("Positional"));
        assert!(!yes("Passes") && !yes("Plain"));
    }

    #[test]
    fn versions() {
        assert_eq!(major_minor("5.16.1"), Some((5, 16)));
        assert_eq!(major_minor("5.9.0"), Some((5, 9)));
        assert_eq!(major_minor("5.17.0.dev0"), Some((5, 17)));
        assert_eq!(major_minor("unknown"), None);
        assert!(major_minor("5.9.0").unwrap() < SINCE);
    }
}
