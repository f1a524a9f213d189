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
//!
//! ## Fix
//! Unsafe: the target is rewritten to the name the message suggests — a
//! near spelling of it (`Olmo2Mlp.forward` → `Olmo2MLP.forward`), else,
//! after an upstream rename, the class or function of the module whose
//! source shares the most lines with the replacement's (at least half of
//! them). Unsafe because a rename may come with other changes the
//! replacement must follow.

use super::super::{LintContext, Rule};
use patchgen_config::plan::Patch;
use patchgen_config::plan::PatchType;
use patchgen_core::pipeline::diagnostics::{missing_target, upstream_names};
use patchgen_diagnostics::suggest::distance;
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_python::diff::SequenceMatcher;
use ruff_python_ast::Stmt;
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::fix::{Applicability, Fix, Position, TextEdit};

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
        let known: Vec<(&str, &str)> = ctx
            .upstream
            .body()
            .iter()
            .filter_map(|s| match s {
                Stmt::ClassDef(c) if kind == "class" => Some((c.name.id.as_str(), &ctx.upstream.text[c.range()])),
                Stmt::FunctionDef(f) if kind != "class" => Some((f.name.id.as_str(), &ctx.upstream.text[f.range()])),
                _ => None,
            })
            .collect();
        let replacement = p.replacement.as_ref().map(|r| r.source.as_str());
        let found = retarget(name, &known, replacement);
        let help = match &found {
            Some(r) => {
                message.push_str(&format!("; did you mean `{}`?", r.name()));
                match r {
                    Retarget::Typo(_) => "retarget the patch to the name upstream defines".to_string(),
                    Retarget::Renamed(_, ratio) => format!(
                        "upstream renamed it, most likely: `{}`'s source shares {:.0}% of its lines with the replacement; retarget the patch after reading the upstream change",
                        r.name(),
                        ratio * 100.0
                    ),
                }
            }
            None => "retarget the patch to what upstream defines now (`patchgen survey --from OLD --to NEW` shows renames and removals), or remove it".to_string(),
        };
        let fix = found.as_ref().and_then(|r| retarget_fix(ctx, p, name, r.name()));
        let mut d = RULE.diagnostic(message).at(ctx.at_target(p)).help(help).with_fix(fix);
        let header = format!("#    - {}: {}", p.patch_type.value(), p.target);
        if let Some(line) = ctx.generated.text.lines().position(|l| l == header) {
            let loc: Location = ctx.generated_location(line + 1);
            d = d.related(loc, "listed as applied in the generated header");
        }
        out.push(d);
    }
    out
}

/// What a dead target may have become.
#[derive(Clone, Debug, PartialEq)]
pub enum Retarget {
    /// A near name (a typo: `Olmo2Mlp` → `Olmo2MLP`).
    Typo(String),
    /// After a rename: the definition whose source is most like the
    /// replacement's, and how alike (difflib's ratio over stripped lines).
    Renamed(String, f64),
}

impl Retarget {
    pub fn name(&self) -> &str {
        match self {
            Retarget::Typo(n) | Retarget::Renamed(n, _) => n,
        }
    }
}

/// The least ratio of common lines (difflib's `SequenceMatcher.ratio()`
/// over stripped, non-blank lines) between a replacement and an upstream
/// definition for the definition to count as the renamed target.
/// Measured on transformers 5.16's renames: `DeepseekV3NaiveMoe`'s
/// replacement against `DeepseekV3Experts` scores well above it, against
/// the module's other classes below (`tests/lint.rs`, PG101 fixtures).
pub const RENAME_THRESHOLD: f64 = 0.5;

/// Replacements shorter than this (stripped lines after the `def`/`class`
/// line) say too little to find a rename by.
const MIN_LINES: usize = 4;

/// The name `missing` (a class or function of `kind`) most likely became,
/// among the module's `known` definitions: a near spelling first, else the
/// definition whose source is most like `replacement`'s (above
/// [`RENAME_THRESHOLD`]).
pub fn retarget(missing: &str, known: &[(&str, &str)], replacement: Option<&str>) -> Option<Retarget> {
    let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
    let folded = missing.to_ascii_lowercase().replace('_', "");
    if let Some(n) = names.iter().find(|n| n.to_ascii_lowercase().replace('_', "") == folded) {
        return Some(Retarget::Typo(n.to_string()));
    }
    let limit = (missing.chars().count() / 6).max(1);
    let near: Vec<&str> = names.iter().copied().filter(|n| distance(missing, n) <= limit).collect();
    if let [one] = near.as_slice() {
        return Some(Retarget::Typo(one.to_string()));
    }
    let replacement = lines(replacement?);
    // A stub (`pass`) is like every other stub.
    if replacement.len() < MIN_LINES {
        return None;
    }
    let mut best: Option<(f64, &str)> = None;
    for (name, source) in known {
        let theirs = lines(source);
        let matched: usize =
            SequenceMatcher::new(&replacement, &theirs).get_matching_blocks().iter().map(|m| m.size).sum();
        let ratio = 2.0 * matched as f64 / (replacement.len() + theirs.len()) as f64;
        if best.is_none_or(|(b, _)| ratio > b) {
            best = Some((ratio, name));
        }
    }
    let (ratio, name) = best?;
    (ratio >= RENAME_THRESHOLD).then(|| Retarget::Renamed(name.to_string(), ratio))
}

/// The stripped, non-blank lines of a definition, its `def`/`class` line
/// left out (it carries the names that differ).
fn lines(source: &str) -> Vec<&str> {
    source.lines().map(str::trim).filter(|l| !l.is_empty()).skip(1).collect()
}

/// The fix retargeting `patch` to `to` (a class for class targets): the
/// target string of the DSL call rewritten.
fn retarget_fix(ctx: &LintContext, p: &Patch, class: &str, to: &str) -> Option<Fix> {
    let new_target = if class == p.target { to.to_string() } else { p.target.replacen(class, to, 1) };
    let loc = ctx.at_target(p);
    let end = loc.end?;
    let file = ctx.shared.pipeline.loader.parse_file(&loc.path).ok()?;
    let start = patchgen_diagnostics::fix::offset(&file.text, Position { line: loc.line, column: loc.column })?;
    let end = patchgen_diagnostics::fix::offset(&file.text, Position { line: end.0, column: end.1 })?;
    let quoted = &file.text[start..end];
    let quote = quoted.chars().next()?;
    let range = TextRange::new(TextSize::try_from(start).ok()?, TextSize::try_from(end).ok()?);
    let edit = TextEdit { range, content: format!("{quote}{new_target}{quote}") };
    let message = format!("Retarget to `{new_target}`");
    Some(crate::fix::of_text(Applicability::Unsafe, message, &file.path, &file.text, &[edit]))
}
