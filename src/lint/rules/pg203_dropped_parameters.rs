//! PG203 dropped-parameters: an override whose signature drops upstream parameters and has no `**kwargs` to absorb them.
//!
//! ## What it does
//! Compares the parameter list of every overriding method
//! (`override_method`, and each method of a `replace_class` replacement that
//! the upstream class or its bases define) and every `replace_function`
//! replacement with the upstream definition it replaces, as generated. An
//! upstream parameter callers can pass by keyword that the override neither
//! declares nor absorbs with `**kwargs` is reported; so is an upstream
//! `**kwargs`/`*args` the override removes.
//!
//! ## Why is this bad?
//! Upstream code, `generate()`, the trainer and other patches call the method
//! with upstream's contract. A dropped parameter turns a caller's keyword into
//! `TypeError`, and a dropped `**kwargs` stops flash-attention and
//! packing metadata (`cu_seq_lens_q`, `position_ids`, …) that callers thread
//! through `**kwargs` — the protocol's "Preserve full method signature when
//! overriding".
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3Attention.forward")
//! def qwen3_attention_forward(self, hidden_states, position_embeddings, attention_mask):
//!     ...
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3Attention.forward")
//! def qwen3_attention_forward(self, hidden_states, position_embeddings, attention_mask, past_key_values=None, **kwargs):
//!     ...
//! ```

use ruff_python_ast::{Stmt, StmtFunctionDef};
use ruff_text_size::Ranged;

use super::super::{LintContext, Rule};
use crate::config::plan::{Loc, PatchType};
use crate::config::source::ParsedFile;
use crate::diagnostics::{Diagnostic, Location, Severity};
use crate::survey::signature::{ParamKind, Signature};

pub const RULE: Rule = Rule {
    code: "PG203",
    name: "dropped-parameters",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg203_dropped_parameters.rs"),
    check,
    check_project: None,
};

/// Upstream parameters `replacement` does not accept, rendered.
pub fn dropped(upstream: &Signature, replacement: &Signature) -> Vec<String> {
    let absorbs = replacement.params.iter().any(|p| p.kind == ParamKind::VarKeyword);
    let mut out = Vec::new();
    for p in &upstream.params {
        match p.kind {
            ParamKind::PositionalOnly => {}
            ParamKind::VarPositional | ParamKind::VarKeyword => {
                if !replacement.params.iter().any(|q| q.kind == p.kind) {
                    let star = if p.kind == ParamKind::VarKeyword { "**" } else { "*" };
                    out.push(format!("`{star}{}`", p.name));
                }
            }
            _ if !absorbs && !replacement.has(&p.name) => out.push(format!("`{}`", p.name)),
            _ => {}
        }
    }
    out
}

/// The upstream method `method` of class `class` (own or inherited) and its file.
fn upstream_method(ctx: &LintContext, class: &str, method: &str) -> Option<(Signature, Location)> {
    let class_ref = ctx.upstream_class(class)?;
    let lineage = ctx.shared.lineage(&class_ref);
    let (owner, f) = lineage.method(method)?;
    Some(sig_and_loc(f, &owner.file))
}

fn sig_and_loc(f: &StmtFunctionDef, file: &ParsedFile) -> (Signature, Location) {
    (Signature::of(&f.parameters, &file.text), Location::line(file.path.clone(), file.line_of(f.name.start())))
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // (generated qualname, upstream signature, upstream location, registration)
    let mut pairs: Vec<(String, Signature, Location, &Loc)> = Vec::new();
    for (i, p) in ctx.plan.patches.iter().enumerate() {
        if ctx.plan.patches[i + 1..].iter().any(|q| q.patch_type == p.patch_type && q.target == p.target) {
            continue;
        }
        match p.patch_type {
            PatchType::MethodOverride if p.replacement.is_some() => {
                let Some((class, method)) = p.target.split_once('.') else {
                    continue;
                };
                if let Some((sig, loc)) = upstream_method(ctx, class, method) {
                    pairs.push((p.target.clone(), sig, loc, &p.registered_at));
                }
            }
            PatchType::FunctionReplacement if p.replacement.is_some() => {
                let found = ctx.upstream.body().iter().rev().find_map(|s| match s {
                    Stmt::FunctionDef(f) if f.name.id.as_str() == p.target => Some(f),
                    _ => None,
                });
                if let Some(f) = found {
                    let (sig, loc) = sig_and_loc(f, &ctx.upstream);
                    pairs.push((p.target.clone(), sig, loc, &p.registered_at));
                }
            }
            PatchType::ClassReplacement if p.replacement.is_some() => {
                let Some(class) = ctx.generated_class(&p.target) else {
                    continue;
                };
                for s in &class.body {
                    let Stmt::FunctionDef(f) = s else { continue };
                    let method = f.name.id.as_str();
                    if let Some((sig, loc)) = upstream_method(ctx, &p.target, method) {
                        pairs.push((format!("{}.{method}", p.target), sig, loc, &p.registered_at));
                    }
                }
            }
            _ => {}
        }
    }
    for (qual, upstream_sig, upstream_loc, registered_at) in pairs {
        let Some(f) = ctx.generated_def(&qual) else {
            continue;
        };
        let replacement = Signature::of(&f.parameters, &ctx.generated.text);
        let missing = dropped(&upstream_sig, &replacement);
        if missing.is_empty() {
            continue;
        }
        let d = RULE
            .diagnostic(format!(
                "`{qual}` override drops upstream parameter{} {}{}: callers using upstream's signature `{upstream_sig}` break",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                if replacement.params.iter().any(|p| p.kind == ParamKind::VarKeyword) { "" } else { " and has no `**kwargs` to absorb them" },
            ))
            .related(upstream_loc, "the upstream definition")
            .help("keep upstream's parameters (unused ones too) or end the signature with `**kwargs`");
        out.push(ctx.at_generated(d, f.name.start(), Some(registered_at)));
    }
    out
}
