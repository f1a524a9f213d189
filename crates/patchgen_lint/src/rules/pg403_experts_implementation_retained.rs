//! PG403 experts-implementation-retained: the generated experts class still carries `@use_experts_implementation`, or the MoE block `@use_kernel_forward_from_hub`.
//!
//! ## What it does
//! Reports every class of the generated module decorated with
//! `@use_experts_implementation` (bare or called with layout flags), and
//! every MoE block (a class whose `__init__` assigns `self.experts` or
//! `self.router`, whatever its name: gpt_oss's `GptOssMLP`) decorated with
//! `@use_kernel_forward_from_hub(...)` (gpt_oss's `"MegaBlocksMoeMLP"`,
//! llama4's `Llama4TextMoe` in transformers 5.9.0). The decorators come
//! from upstream; a `replace_class` of the class drops them, an
//! `override_method` of its `forward` does not.
//!
//! ## Why is this bad?
//! The decorator swaps the class's `forward` for transformers' experts
//! backends (`grouped_mm`, `batched_mm`, ...) chosen by
//! `config._experts_implementation`: a fused VeOmni experts path, its
//! expert-parallel semantics and its load-balance reporting are routed
//! around without any error. A model that deliberately runs transformers'
//! backends can keep it (`# noqa: PG403` on the line this points at); this
//! is a warning for that reason. The hub decorator does the same to the
//! whole MoE block when `kernels` is installed and hub kernels are enabled:
//! the hub's forward runs instead of the block's, never calling the
//! (patched) experts class.
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
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_python::semantic::facts;
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
/// The hub-kernel decorator, reported on an MoE block.
pub const HUB_DECORATOR: &str = "use_kernel_forward_from_hub";

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for stmt in ctx.generated.body() {
        let Stmt::ClassDef(class) = stmt else {
            continue;
        };
        let name = class.name.id.as_str();
        let hub = || {
            class
                .decorator_list
                .iter()
                .find(|d| facts::decorator_ident(d) == Some(HUB_DECORATOR))
                .filter(|_| pyfacts::builds_experts(class, &ctx.generated.text))
        };
        let (deco, message, help) = match class
            .decorator_list
            .iter()
            .find(|d| facts::decorator_ident(d) == Some(DECORATOR))
        {
            Some(d) => (
                d,
                format!(
                    "`{name}` keeps `@{DECORATOR}`: transformers' experts backends replace its `forward`, routing around any fused or patched experts path"
                ),
                format!(
                    "`replace_class(\"{name}\")` with a class without the decorator (as qwen3_5_moe and qwen3_omni_moe do), or `# noqa: PG403` if transformers' backends are intended"
                ),
            ),
            None => match hub() {
                Some(d) => (
                    d,
                    format!(
                        "`{name}` is the MoE block (its `__init__` builds the experts) and keeps `@{}`: a hub kernel can replace its `forward`, routing around the experts class",
                        &ctx.generated.text[d.expression.range()]
                    ),
                    format!(
                        "`replace_class(\"{name}\")` with the class without the decorator (as VeOmni's gpt_oss config does), or `# noqa: PG403` if the hub kernel is intended"
                    ),
                ),
                None => continue,
            },
        };
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
        let d = RULE.diagnostic(message).help(help);
        out.push(ctx.at_generated(d, deco.start(), Some(&fallback)));
    }
    out
}
