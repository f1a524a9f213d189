//! PG403 experts-implementation-retained: the generated experts class still carries `@use_experts_implementation`.
//!
//! ## What it does
//! Reports every class of the generated module decorated with
//! `@use_experts_implementation` (bare or called with layout flags). The
//! decorator comes from upstream; a `replace_class` of the experts class
//! drops it, an `override_method` of its `forward` does not.
//!
//! ## Why is this bad?
//! The decorator swaps the class's `forward` for transformers' experts
//! backends (`grouped_mm`, `batched_mm`, ...) chosen by
//! `config._experts_implementation`: a fused VeOmni experts path, its
//! expert-parallel semantics and its load-balance reporting are routed
//! around without any error. A model that deliberately runs transformers'
//! backends can keep it (`# noqa: PG403` on the line this points at); this
//! is a warning for that reason.
//!
//! ## Example
//! ```python
//! # generated: the upstream class kept as is
//! @use_experts_implementation
//! class GlmMoeDsaNaiveMoe(nn.Module):
//!     ...
//! ```
//!
//! ## Use instead
//! ```python
//! @config.replace_class("GlmMoeDsaNaiveMoe")
//! class PatchedGlmMoeDsaNaiveMoe(nn.Module):
//!     """Fused experts without @use_experts_implementation, dispatching to VeOmni's fused MoE."""
//!     ...
//! ```

use ruff_text_size::Ranged;

use super::super::{LintContext, Rule, patched, pyfacts};
use crate::diagnostics::{Diagnostic, Severity};
use ruff_python_ast::Stmt;

pub const RULE: Rule = Rule {
    code: "PG403",
    name: "experts-implementation-retained",
    default_on: true,
    severity: Severity::Warning,
    doc: include_str!("pg403_experts_implementation_retained.rs"),
    check,
    check_project: None,
};

/// The decorator's name.
pub const DECORATOR: &str = "use_experts_implementation";

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for stmt in ctx.generated.body() {
        let Stmt::ClassDef(class) = stmt else {
            continue;
        };
        let Some(deco) = class.decorator_list.iter().find(|d| pyfacts::decorator_ident(d) == Some(DECORATOR)) else {
            continue;
        };
        let name = class.name.id.as_str();
        // The config line most about this class: a patch of one of its
        // methods, else the config itself.
        let prefix = format!("{name}.");
        let fallback = ctx
            .plan
            .patches
            .iter()
            .find(|p| p.target == name || p.target.starts_with(&prefix))
            .map(|p| p.registered_at.clone())
            .unwrap_or_else(|| patched::config_anchor(ctx));
        let d = RULE
            .diagnostic(format!(
                "`{name}` keeps `@{DECORATOR}`: transformers' experts backends replace its `forward`, routing around any fused or patched experts path"
            ))
            .help(format!(
                "`replace_class(\"{name}\")` with a class without the decorator (as qwen3_5_moe and qwen3_omni_moe do), or `# noqa: PG403` if transformers' backends are intended"
            ));
        out.push(ctx.at_generated(d, deco.start(), Some(&fallback)));
    }
    out
}
