//! PG307 reuse-upstream-differs: a patch reused from another config (through `name_map` or shared by import) on a target whose upstream code differs from the code the patch was written for.
//!
//! ## What it does
//! For every `override_method`, `replace_function` and `replace_class`
//! whose replacement is defined in another config (or registered again in
//! its own config under a `name_map`), finds the target that config
//! registers the replacement on — the upstream code the patch is a copy of,
//! with edits — and compares it, renamed by this call's `name_map` (the
//! generator's plain-text substitution), with this call's own upstream
//! target, both read from the upstream being linted. Docstrings, comments
//! and layout do not count (`ast.dump` with docstrings stripped; the
//! shared sameness test of `patchgen_core::survey::reuse`). The finding,
//! at the call, names both targets and the first upstream line that
//! differs. A replacement registered nowhere, or a target missing on
//! either side (PG101's business), is not compared.
//!
//! ## Why is this bad?
//! A replacement is the upstream code it was written for, plus the
//! patch's edits. Reused on another model's target, it replaces that
//! target's code with the sibling's: whatever the two upstreams do
//! differently is silently lost — Olmo2's RMSNorm casts after scaling by
//! the weight and Qwen3's before; Cohere's rotary upcasts to float32;
//! Apertus' MLP has no gate (`gate_proj` does not exist on it); Phi-3
//! rotates part of the head. The model still trains, with other numbers,
//! under a comment that says "Original HF code below, unchanged". The
//! protocol's rule is to reuse only "when the upstream classes are
//! structural duplicates with only a name-prefix difference". At a new pin,
//! the same check catches siblings that drifted apart in a bump.
//!
//! ## Example
//! ```python
//! from pkg.qwen3.qwen3_gpu_patch_gen_config import qwen3_rmsnorm_forward_patched
//!
//! config.override_method(
//!     "Olmo2RMSNorm.forward",
//!     replacement=qwen3_rmsnorm_forward_patched,
//!     name_map={"Qwen3": "Olmo2"},
//! )
//! ```
//!
//! ## Use instead
//! Copy the replacement into this config and port it onto this model's
//! upstream (the three-way merge of the sibling's patch, the sibling's
//! upstream and this model's upstream: `patchgen new` does it), or drop the
//! patch. `# noqa: PG307` on the call when the difference is meant.

use super::super::{LintContext, Rule};
use patchgen_config::plan::{Patch, PatchType};
use patchgen_core::survey::reuse::{self, Target, Verdict};
use patchgen_diagnostics::{Diagnostic, Location, Severity};

pub const RULE: Rule = Rule {
    code: "PG307",
    name: "reuse-upstream-differs",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg307_reuse_upstream_differs.rs"),
    check,
    check_project: None,
};

/// The config variable a config defines (`PatchConfig(...)` bound to it).
const CONFIG_NAME: &str = "config";

fn is_replacement(t: PatchType) -> bool {
    matches!(t, PatchType::MethodOverride | PatchType::FunctionReplacement | PatchType::ClassReplacement)
}

/// The registration a replacement was written for: the first patch of its
/// defining config that registers the same object without a `name_map`.
fn written_for<'p>(patches: &'p [Patch], module: &str, name: &str) -> Option<&'p Patch> {
    patches.iter().find(|q| {
        is_replacement(q.patch_type)
            && q.name_map.is_none()
            && q.replacement.as_ref().is_some_and(|r| r.module == module && r.name == name)
    })
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // Each defining config evaluated once per config linted.
    let mut definers: std::collections::HashMap<String, Option<patchgen_config::plan::PatchPlan>> =
        std::collections::HashMap::new();
    for p in &ctx.plan.patches {
        if !is_replacement(p.patch_type) {
            continue;
        }
        let Some(object) = &p.replacement else { continue };
        let imported = object.module != ctx.module;
        if !imported && p.name_map.is_none() {
            continue; // written here, for this target
        }
        let definer = if imported {
            let plan = definers.entry(object.module.clone()).or_insert_with(|| {
                ctx.shared.pipeline.evaluate(&object.module, CONFIG_NAME).ok().map(|(plan, _, _)| plan)
            });
            match plan {
                Some(plan) => &*plan,
                None => continue, // not a config (a library of patch functions): nothing to compare
            }
        } else {
            &ctx.plan
        };
        let Some(original) = written_for(&definer.patches, &object.module, &object.name) else {
            continue;
        };

        if std::ptr::eq(original, p) || original.patch_type != p.patch_type {
            continue;
        }
        let is_class = p.patch_type == PatchType::ClassReplacement;
        let source_module = definer.source_module.as_str();
        let verdict = reuse::compare(
            &ctx.shared.upstream,
            Target { module: source_module, target: &original.target, is_class },
            p.name_map.as_deref(),
            &ctx.shared.upstream,
            Target { module: &ctx.plan.source_module, target: &p.target, is_class },
        );
        let Verdict::Differs(d) = verdict else { continue };
        let via = match &p.name_map {
            Some(map) => format!(
                "renamed by the name_map ({})",
                map.iter().map(|(a, b)| format!("{a} → {b}")).collect::<Vec<_>>().join(", ")
            ),
            None => "shared by import".to_string(),
        };
        let file_name =
            |p: &std::path::Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        out.push(
            RULE.diagnostic(format!(
                "`{}` reuses `{}`, written for `{}` ({}), but the upstream code differs ({via}): first at {}:{} `{}`; the reuse silently drops the difference",
                p.target,
                object.name,
                original.target,
                source_module,
                file_name(&d.reused_path),
                d.reused_line,
                d.reused_text,
            ))
            .at(ctx.at_config(&p.registered_at))
            .related(
                Location::line(d.reused_path.clone(), d.reused_line),
                format!("`{}` upstream: the first line the sibling's `{}` does not have", p.target, original.target),
            )
            .related(
                Location::line(d.written_for_path.clone(), d.written_for_line),
                format!("`{}` upstream, where the code the patch was written for differs", original.target),
            )
            .help("copy the replacement and port it onto this model's upstream (three-way: the patch, its upstream, this upstream), or drop the patch; `# noqa: PG307` when the difference is meant")
            .config(ctx.module.clone()),
        );
    }
    out
}
