//! PG401 moe-converter-missing: fused expert parameters, a per-expert or transposed checkpoint layout, and no checkpoint converter registered.
//!
//! ## What it does
//! When the generated module has a class with fused expert parameters
//! (`self.gate_up_proj = nn.Parameter(...)`, found by `moe::modeling`), reads
//! the recipe the upstream's own `transformers/conversion_mapping.py` applies
//! to each `model_type` the model package registers
//! (`@MODELING_REGISTRY.register("glm_moe_dsa")`, resolved statically by
//! `moe::recipes`, aliases included). A recipe that merges per-expert keys
//! (`MergeModulelist`) or transposes fused ones means the checkpoint on disk
//! is not in the fused layout; then the package must register a converter
//! (`Cls._create_checkpoint_tensor_converter = staticmethod(...)`). When one
//! registered `model_type` loads directly and another needs conversion (a
//! composite whose checkpoints ship fused, a text-only alias that does
//! not), the finding is a warning: verify the real checkpoint.
//!
//! ## Why is this bad?
//! transformers skips its own conversion mapping for custom-code classes,
//! and VeOmni's loader only INFO-logs checkpoint keys it does not know and
//! parameters it never loaded, then initialises those randomly. Without a
//! converter the model trains from random experts and nothing fails.
//!
//! ## Example
//! ```python
//! @MODELING_REGISTRY.register("glm_moe_dsa")  # recipe: qwen2_moe (per-expert)
//! def register_glm_moe_dsa_modeling(architecture: str):
//!     from .generated.patched_modeling_glm_moe_dsa_gpu import GlmMoeDsaForCausalLM
//!     return GlmMoeDsaForCausalLM
//! ```
//!
//! ## Use instead
//! ```python
//! @MODELING_REGISTRY.register("glm_moe_dsa")
//! def register_glm_moe_dsa_modeling(architecture: str):
//!     from .checkpoint_tensor_converter import create_glm_moe_dsa_checkpoint_tensor_converter
//!     from .generated.patched_modeling_glm_moe_dsa_gpu import GlmMoeDsaForCausalLM
//!     GlmMoeDsaForCausalLM._create_checkpoint_tensor_converter = staticmethod(
//!         create_glm_moe_dsa_checkpoint_tensor_converter
//!     )
//!     return GlmMoeDsaForCausalLM
//! ```
//! `patchgen moe inspect <checkpoint>` shows the layout a checkpoint really has.

use super::super::{LintContext, Rule, package};
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_moe::modeling::fused_expert_classes_in;
use patchgen_moe::recipes::{RecipeError, RecipeKind, Recipes};

pub const RULE: Rule = Rule {
    code: "PG401",
    name: "moe-converter-missing",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg401_moe_converter_missing.rs"),
    check,
    check_project: None,
};

/// The upstream's recipes, read once per run.
fn recipes<'a>(ctx: &LintContext<'a>) -> &'a Result<Recipes, RecipeError> {
    ctx.shared.memo.recipes.get_or_init(|| Recipes::load(&ctx.shared.pipeline.search))
}

/// Whether a recipe means the checkpoint's experts are not in the fused
/// in-memory layout.
pub fn needs_conversion(kind: &RecipeKind) -> bool {
    kind.needs_conversion()
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if !ctx.generated.text.contains("gate_up_proj") {
        return out;
    }
    let generated = &ctx.generated;
    let fused = fused_expert_classes_in(generated.body(), &|offset| generated.line_of((offset as u32).into()));
    let Some(first) = fused.first() else {
        return out;
    };
    let Some(init) = ctx.package_init() else {
        return out;
    };
    if !package::converter_factories(init).is_empty() {
        return out;
    }
    let Ok(recipes) = recipes(ctx) else {
        return out;
    };
    let regs = package::model_registrations(init);
    let kinds: Vec<RecipeKind> = regs.iter().map(|r| recipes.checkpoint_layout_need(&r.key)).collect();
    let some_direct = kinds.iter().any(|k| !needs_conversion(k));
    for (reg, kind) in regs.iter().zip(&kinds) {
        if !needs_conversion(kind) {
            continue;
        }
        let via = recipes
            .recipe(&reg.key)
            .and_then(|r| r.alias_of.as_ref())
            .map(|a| format!(" (through the `{a}` recipe)"))
            .unwrap_or_default();
        let mut d = RULE
            .diagnostic(format!(
                "`{}` has fused expert parameters, transformers {} expects `{}` checkpoints {}{via}, and the package registers no checkpoint converter: experts load nothing and start random (VeOmni only INFO-logs the missing keys)",
                first.class,
                ctx.shared.upstream.upstream.version,
                reg.key,
                kind.label()
            ))
            .help("register a converter in this function (`Cls._create_checkpoint_tensor_converter = staticmethod(...)`, a per-expert stacker for per-expert layouts); check a real checkpoint with `patchgen moe inspect`");
        if some_direct {
            d.severity = Severity::Warning;
            d.message.push_str(&format!(
                "; another registered model_type loads directly, so checkpoints of `{}` may already ship fused",
                reg.key
            ));
        }
        d = d
            .at(Location::line(init.path.clone(), reg.line))
            .related(ctx.generated_location(first.line), "fused expert parameters");
        out.push(d);
    }
    out
}
