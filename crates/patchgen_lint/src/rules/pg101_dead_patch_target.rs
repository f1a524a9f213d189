//! PG101 dead-patch-target: a patch whose target the upstream module does not define.
//!
//! ## What it does
//! Checks every `replace_class`, `create_patch_from_external`, `modify_init`
//! and `override_method` target against the top-level classes of the
//! upstream module the config patches, and every `replace_function` target
//! against its top-level functions. A name the module only imports does not
//! count: patchgen applies patches while walking the module's own
//! definitions.
//!
//! ## Why is this bad?
//! A patch whose target is missing is silently not applied, while the
//! generated header still lists it as applied. After an upstream rename (the
//! fused-MoE class `DeepseekV3NaiveMoe` became `DeepseekV3Experts` in
//! transformers 5.16) the model trains with the unpatched upstream code and
//! nothing fails.
//!
//! ## Example
//! ```python
//! @config.replace_class("DeepseekV3NaiveMoe")  # gone upstream
//! class PatchedDeepseekV3NaiveMoe(nn.Module):
//!     ...
//! ```
//!
//! ## Use instead
//! ```python
//! @config.replace_class("DeepseekV3Experts")
//! class PatchedDeepseekV3Experts(nn.Module):
//!     ...
//! ```
//! `patchgen survey --from OLD --to NEW` lists the targets a pin bump removes.

use super::super::{LintContext, Rule};
use patchgen_config::plan::PatchType;
use patchgen_core::pipeline::diagnostics::{missing_target, upstream_names};
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use ruff_python_ast::Stmt;

pub const RULE: Rule = Rule {
    code: "PG101",
    name: "dead-patch-target",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg101_dead_patch_target.rs"),
    check,
    check_project: None,
};

fn dsl_name(t: PatchType) -> &'static str {
    match t {
        PatchType::ClassReplacement => "replace_class",
        PatchType::MethodOverride => "override_method",
        PatchType::FunctionReplacement => "replace_function",
        PatchType::InitModification => "modify_init",
        PatchType::AdditionalImport => "add_import",
    }
}

/// Where `name` comes from when the upstream module imports it.
fn imported_from(ctx: &LintContext, name: &str) -> Option<String> {
    ctx.upstream.body().iter().find_map(|s| match s {
        Stmt::ImportFrom(i) if i.names.iter().any(|a| a.asname.as_ref().unwrap_or(&a.name).id.as_str() == name) => {
            Some(format!("{}{}", ".".repeat(i.level as usize), i.module.as_ref().map(|m| m.id.as_str()).unwrap_or("")))
        }
        _ => None,
    })
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let names = upstream_names(&ctx.upstream);
    let module = &ctx.plan.source_module;
    let mut out = Vec::new();
    for (i, p) in ctx.plan.patches.iter().enumerate() {
        let Some(kind) = missing_target(&names, p) else {
            continue;
        };
        // One finding per target: the last registration is the one codegen uses.
        if ctx.plan.patches[i + 1..].iter().any(|q| q.patch_type == p.patch_type && q.target == p.target) {
            continue;
        }
        let name = if kind == "class" { p.target.split('.').next().unwrap_or(&p.target) } else { p.target.as_str() };
        let how =
            if p.patch_type == PatchType::ClassReplacement && p.replacement.is_none() && p.replacement_source.is_some()
            {
                "create_patch_from_external"
            } else {
                dsl_name(p.patch_type)
            };
        let mut message = format!(
            "{how}(\"{}\"): `{module}` defines no top-level {kind} `{name}`; the patch is not applied although the generated header lists it",
            p.target
        );
        if let Some(from) = imported_from(ctx, name) {
            message.push_str(&format!(" (the module only imports it from `{from}`)"));
        }
        let mut d = RULE
            .diagnostic(message)
            .at(ctx.at_target(p))
            .help("retarget the patch to what upstream defines now (`patchgen survey --from OLD --to NEW` shows renames and removals), or remove it");
        let header = format!("#    - {}: {}", p.patch_type.value(), p.target);
        if let Some(line) = ctx.generated.text.lines().position(|l| l == header) {
            let loc: Location = ctx.generated_location(line + 1);
            d = d.related(loc, "listed as applied in the generated header");
        }
        out.push(d);
    }
    out
}
