//! What a model's weight initialisation covers, read from the generated
//! module: which classes own parameters or buffers (directly, through
//! `torch.nn` layers, or through local bases), the classes an
//! `_init_weights` tests with `isinstance`, and whether a class
//! initialises as transformers' own code does (`is_custom_code=False`).
//! Shared by PG305 and `patchgen new`'s fix of it.

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtClassDef};

use crate::pyfacts;
use patchgen_python::semantic::{
    facts,
    walk::{self, Scope},
};

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
        for expr in walk::expressions(&f.body, Scope::Own) {
            if let Expr::Call(c) = expr
                && let Some(name) = facts::last_ident(&c.func)
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
    for expr in walk::expressions(body, Scope::Own) {
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
            walk::expressions(&f.body, Scope::Own).iter().any(|e| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use patchgen_python::pysource::ParsedFile;
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
}
