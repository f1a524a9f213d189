//! PG404 liger-mlp-intermediate-size: an external MLP replacement for an upstream MLP whose constructor takes `intermediate_size`.
//!
//! ## What it does
//! For every `create_patch_from_external(target="<M>MLP", replacement_name=...)`
//! (a class replaced by an imported one, e.g. `LigerSwiGLUMLP`), looks up the
//! upstream class's `__init__`. When it accepts an `intermediate_size`
//! parameter, the module builds it with one somewhere (MoE shared experts:
//! `<M>MLP(config, intermediate_size=...)`), which an external class built
//! for `(config)` alone does not accept. The call site that passes it is
//! shown when the upstream module has one.
//!
//! ## Why is this bad?
//! `TypeError: __init__() got an unexpected keyword argument
//! 'intermediate_size'` when the model is built — or, worse, an external
//! class that accepts and ignores it builds every shared expert with the
//! dense `config.intermediate_size`, and the checkpoint no longer fits.
//!
//! ## Example
//! ```python
//! config.patches.append(
//!     create_patch_from_external(
//!         target="Qwen3MoeMLP",  # __init__(self, config, intermediate_size=None)
//!         replacement_module="liger_kernel.transformers.swiglu",
//!         replacement_name="LigerSwiGLUMLP",
//!     )
//! )
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3MoeMLP.forward")
//! def qwen3_moe_mlp_forward_patched(self, x):
//!     if veomni_swiglu_mlp.use_non_eager_impl:
//!         return veomni_swiglu_mlp(self, x)
//!     return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
//! ```

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use super::super::{LintContext, Rule, pyfacts};
use patchgen_config::plan::PatchType;
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_python::semantic::walk::{self, Scope};

pub const RULE: Rule = Rule {
    code: "PG404",
    name: "liger-mlp-intermediate-size",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg404_liger_mlp_intermediate_size.rs"),
    check,
    check_project: None,
};

/// The parameter shared-expert MLPs are built with.
pub const PARAM: &str = "intermediate_size";

/// A call in `body` that builds `class` with `intermediate_size`
/// (as a keyword, or a second positional argument): its offset.
pub fn call_with_size(body: &[Stmt], class: &str) -> Option<ruff_text_size::TextSize> {
    for expr in walk::expressions(body, Scope::All) {
        let Expr::Call(c) = expr else { continue };
        if !matches!(&*c.func, Expr::Name(n) if n.id.as_str() == class) {
            continue;
        }
        let keyword = c.arguments.keywords.iter().any(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == PARAM));
        if keyword || c.arguments.args.len() >= 2 {
            return Some(c.start());
        }
    }
    None
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for p in &ctx.plan.patches {
        // External class replacements: no config source, a replacement path.
        if p.patch_type != PatchType::ClassReplacement || p.replacement.is_some() {
            continue;
        }
        let Some(external) = p.replacement_source.as_deref().filter(|s| !s.is_empty()) else {
            continue;
        };
        let Some(class) = ctx.upstream_class_def(&p.target) else {
            continue;
        };
        let Some(init) = pyfacts::method(class, "__init__") else {
            continue;
        };
        if !pyfacts::param_names(&init.parameters).contains(&PARAM) {
            continue;
        }
        let external_name = external.rsplit('.').next().unwrap_or(external);
        let mut d = RULE
            .diagnostic(format!(
                "`{}` is replaced by `{external_name}`, but upstream `{}.__init__` takes `{PARAM}` (shared experts build it with their own size): the external class is constructed with an argument it does not take",
                p.target, p.target
            ))
            .help(format!(
                "patch `{}.forward` with an OpSlot guard instead of swapping the class, or use a replacement whose constructor takes `{PARAM}`",
                p.target
            ))
            .at(ctx.at_config(&p.registered_at));
        if let Some(at) = call_with_size(ctx.upstream.body(), &p.target) {
            let line = ctx.upstream.line_of(at);
            d = d.related(
                patchgen_diagnostics::Location::line(ctx.upstream.path.clone(), line),
                "built with `intermediate_size` here",
            );
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchgen_python::pysource::ParsedFile;
    use std::path::PathBuf;

    #[test]
    fn calls_with_size() {
        let src = "class MoE:\n    def __init__(self, config):\n        self.shared = MLP(config, intermediate_size=config.moe_intermediate_size * 2)\n\
class Dense:\n    def __init__(self, config):\n        self.mlp = MLP(config)\n\
class Pos:\n    def __init__(self, config):\n        self.mlp = OtherMLP(config, 128)\n";
        let f = ParsedFile::parse(PathBuf::from("m.py"), src).unwrap();
        assert_eq!(call_with_size(f.body(), "MLP").map(|o| f.line_of(o)), Some(3));
        assert_eq!(call_with_size(f.body(), "OtherMLP").map(|o| f.line_of(o)), Some(9));
        assert_eq!(call_with_size(f.body(), "Dense"), None);
    }
}
