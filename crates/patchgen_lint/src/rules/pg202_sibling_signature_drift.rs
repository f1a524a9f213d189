//! PG202 sibling-signature-drift: a GPU/NPU pair of configs that override the same target with signatures that drifted apart.
//!
//! ## What it does
//! Pairs sibling configs by name — `<m>_gpu_patch_gen_config` and
//! `<m>_npu_patch_gen_config` in the same package (the suffixes are
//! `[tool.patchgen.lint] sibling-suffixes`, the first one the reference) —
//! and, for every function or method both override with *different*
//! replacements (a replaced class's methods included), compares the
//! generated parameter lists. A parameter the reference (GPU) signature has
//! and the sibling's lacks is reported at the sibling's replacement. Extra
//! parameters on the sibling (a superset) are fine.
//!
//! ## Why is this bad?
//! Callers are shared: the model code, the trainer and the other patches pass
//! the GPU signature's arguments. When the GPU override gains a parameter and
//! the hand-forked NPU override keeps the old list, the NPU module raises
//! `TypeError` (or, with `**kwargs`, silently ignores the argument) — only on
//! NPU, where CI does not run. It happened three times in a row on one model.
//!
//! ## Example
//! ```python
//! # deepseek_v4_gpu_patch_gen_config.py
//! def attention_forward(self, hidden_states, position_ids, cu_seq_lens_q=None): ...
//! # deepseek_v4_npu_patch_gen_config.py
//! def attention_forward_npu(self, hidden_states, position_ids): ...
//! ```
//!
//! ## Use instead
//! ```python
//! def attention_forward_npu(self, hidden_states, position_ids, cu_seq_lens_q=None): ...
//! ```
//! or reuse the GPU replacement and fork only the device-specific helper.

use std::collections::BTreeMap;

use super::super::context::ProjectContext;
use super::super::{LintContext, Rule};
use patchgen_core::survey::signature::ParamKind;
use patchgen_diagnostics::{Diagnostic, Severity};

pub const RULE: Rule = Rule {
    code: "PG202",
    name: "sibling-signature-drift",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg202_sibling_signature_drift.rs"),
    check: |_| Vec::new(),
    check_project: Some(check_project),
};

/// `(package, model, rest)` of `pkg.m.m_gpu_patch_gen_config`: what siblings share.
type SiblingKey = (String, String, String);

/// The sibling key and the suffix's index, for `pkg.m.m_gpu_patch_gen_config`.
fn sibling_key(module: &str, suffixes: &[String]) -> Option<(SiblingKey, usize)> {
    let (package, last) = module.rsplit_once('.').unwrap_or(("", module));
    for (i, suffix) in suffixes.iter().enumerate() {
        let tag = format!("_{suffix}_");
        if let Some(at) = last.find(&tag) {
            return Some(((package.to_string(), last[..at].to_string(), last[at + tag.len()..].to_string()), i));
        }
        if let Some(prefix) = last.strip_suffix(&format!("_{suffix}")) {
            return Some(((package.to_string(), prefix.to_string(), String::new()), i));
        }
    }
    None
}

fn check_project(project: &ProjectContext) -> Vec<Diagnostic> {
    let suffixes = &project.shared.settings.sibling_suffixes;
    if suffixes.len() < 2 {
        return Vec::new();
    }
    let mut groups: BTreeMap<SiblingKey, Vec<(usize, &LintContext)>> = BTreeMap::new();
    for ctx in project.configs {
        if let Some((key, i)) = sibling_key(&ctx.module, suffixes) {
            groups.entry(key).or_default().push((i, ctx));
        }
    }
    let mut out = Vec::new();
    for members in groups.values() {
        let Some((_, reference)) = members.iter().find(|(i, _)| *i == 0) else {
            continue;
        };
        let ref_overrides = reference.overridden();
        for (_, sibling) in members.iter().filter(|(i, _)| *i != 0) {
            for (qual, sib) in sibling.overridden() {
                let Some(reference_override) = ref_overrides.get(qual) else {
                    continue;
                };
                if reference_override.replacement == sib.replacement {
                    continue; // the same replacement (an imported or shared function)
                }
                let (Some(ref_sig), Some(sib_sig)) = (&reference_override.signature, &sib.signature) else {
                    continue;
                };
                let missing: Vec<&str> = ref_sig
                    .params
                    .iter()
                    .filter(|p| !matches!(p.kind, ParamKind::VarPositional | ParamKind::VarKeyword))
                    .filter(|p| p.kind != ParamKind::PositionalOnly)
                    .filter(|p| !sib_sig.has(&p.name))
                    .map(|p| p.name.as_str())
                    .collect();
                let mut missing: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
                for kind in [ParamKind::VarPositional, ParamKind::VarKeyword] {
                    let star = if kind == ParamKind::VarKeyword { "**" } else { "*" };
                    if let Some(p) = ref_sig.params.iter().find(|p| p.kind == kind)
                        && !sib_sig.params.iter().any(|q| q.kind == kind)
                    {
                        missing.push(format!("`{star}{}`", p.name));
                    }
                }
                if missing.is_empty() {
                    continue;
                }
                let absorbed = sib_sig.params.iter().any(|p| p.kind == ParamKind::VarKeyword);
                let consequence = if absorbed {
                    "its `**kwargs` swallows them, so they are silently ignored on this device"
                } else {
                    "callers passing them get TypeError on this device only"
                };
                let sib_loc = sib.def_at.clone().unwrap_or_else(|| sib.replacement.clone());
                let ref_loc =
                    reference_override.def_at.clone().unwrap_or_else(|| reference_override.replacement.clone());
                let d = RULE
                    .diagnostic(format!(
                        "`{qual}` in `{}` lacks {} that the `{}` sibling's override has: {consequence}",
                        sibling.module,
                        missing.join(", "),
                        suffixes[0]
                    ))
                    .at(sibling.at_config(&sib_loc))
                    .related(reference.at_config(&ref_loc), format!("the {} override's signature `{ref_sig}`", suffixes[0]))
                    .help("give the sibling override the same parameters (or reuse the reference replacement and fork only the device-specific part)")
                    .config(sibling.module.clone());
                out.push(d);
            }
        }
    }
    out
}
