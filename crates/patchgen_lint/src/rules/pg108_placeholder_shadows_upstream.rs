//! PG108 placeholder-shadows-upstream: a module-level assignment in an `add_post_import_block` (`X = None`) rebinds a name the upstream module defines itself.
//!
//! ## What it does
//! Reads each post-import block's top-level assignments and reports those
//! whose name the upstream module binds at module level by a `def`, a
//! `class` or an assignment of its own (not by an import), unless the
//! config excludes that definition from the output.
//!
//! ## Why is this bad?
//! Post-import blocks are where configs put placeholders for names they
//! drop from upstream's imports (`causal_conv1d_fn = None`, so the model's
//! `is_fast_path_available` check stays false). Once upstream defines the
//! name itself, the generated module binds it twice: the placeholder right
//! after the imports, upstream's definition further down. Code between the
//! two sees `None`, code after sees upstream's object; neither is what the
//! config meant (transformers 5.16 made qwen3_5's `causal_conv1d_fn` and
//! friends module-level functions while VeOmni's configs kept their
//! placeholders).
//!
//! ## Example
//! ```python
//! config.add_post_import_block(
//!     """
//!     causal_conv1d_fn = None  # upstream now has `def causal_conv1d_fn`
//!     """
//! )
//! ```
//!
//! ## Use instead
//! Remove the placeholder, and decide whether the config should replace
//! upstream's definition (`replace_function`) or keep it.
//!
//! ## Fix
//! Unsafe: the placeholder's line is removed from the block. Code of the
//! generated module that ran before upstream's definition and read the
//! placeholder now fails with a `NameError`: check the block's neighbours.

use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::pytext;
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{TextRange, TextSize};

use super::pg107_stale_drop::defined_at;
use crate::fix::{Applicability, TextEdit};
use crate::{LintContext, Rule};

pub const RULE: Rule = Rule {
    code: "PG108",
    name: "placeholder-shadows-upstream",
    default_on: true,
    severity: Severity::Warning,
    doc: include_str!("pg108_placeholder_shadows_upstream.rs"),
    check,
    check_project: None,
};

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let module = &ctx.plan.source_module;
    let mut out = Vec::new();
    for (i, block) in ctx.plan.post_import_blocks.iter().enumerate() {
        let Ok(parsed) = ruff_python_parser::parse_module(pytext::strip(&pytext::dedent(block))) else { continue };
        for stmt in &parsed.syntax().body {
            let names: Vec<&str> = match stmt {
                Stmt::Assign(a) => a
                    .targets
                    .iter()
                    .filter_map(|t| match t {
                        Expr::Name(n) => Some(n.id.as_str()),
                        _ => None,
                    })
                    .collect(),
                Stmt::AnnAssign(a) => match &*a.target {
                    Expr::Name(n) => vec![n.id.as_str()],
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            for name in names {
                if ctx.plan.exclude.iter().any(|e| e == name) {
                    continue;
                }
                let Some(line) = defined_at(&ctx.upstream, name) else { continue };
                let what = ctx.upstream.line_range(line, line).trim().split('(').next().unwrap_or_default().to_string();
                let d = RULE
                    .diagnostic(format!(
                        "the post-import block assigns `{name}`, which `{module}` defines itself at module level (`{what}`, line {line}): the generated module binds it twice, the placeholder first"
                    ))
                    .help(format!(
                        "remove the placeholder (and the `drop_import_names(\"{name}\")` that made it necessary), or replace upstream's `{name}` with `replace_function` if the config must keep its own"
                    ));
                let call = ctx.plan.call_sites.blocks.get(i);
                let found = call.and_then(|loc| {
                    let file = ctx.shared.pipeline.loader.parse_file(&loc.path).ok()?;
                    let line = assignment_line(&file, loc.line, name)?;
                    Some((Location::line(file.path.clone(), line), line_removal(&file, line, name)))
                });
                out.push(match (found, call) {
                    (Some((location, fix)), _) => d.at(location).with_fix(fix),
                    (None, Some(loc)) => d.at(ctx.at_config(loc)),
                    (None, None) => d.at(Location::file(ctx.config_path().to_path_buf())),
                });
            }
        }
    }
    out
}

/// The first line at or after `from` whose text starts with `name =` or
/// `name:` (the placeholder inside the block's string).
fn assignment_line(file: &ParsedFile, from: usize, name: &str) -> Option<usize> {
    (from.max(1)..=file.line_count()).find(|&l| {
        let text = file.line_range(l, l).trim_start();
        text.strip_prefix(name).is_some_and(|rest| {
            let rest = rest.trim_start();
            (rest.starts_with('=') && !rest.starts_with("==")) || rest.starts_with(':')
        })
    })
}

/// The fix: line `line` (one simple assignment to `name`) removed.
fn line_removal(file: &ParsedFile, line: usize, name: &str) -> Option<crate::fix::Fix> {
    let text = file.line_range(line, line);
    // Only a one-line `name = <value>`: no `;`, no continuation.
    if text.contains(';') || text.trim_end().ends_with('\\') || text.trim_end().ends_with('(') {
        return None;
    }
    let start = file.line_start(line);
    let range = TextRange::new(TextSize::try_from(start).ok()?, TextSize::try_from(start + text.len()).ok()?);
    Some(crate::fix::of_text(
        Applicability::Unsafe,
        format!("Remove the `{name}` placeholder"),
        &file.path,
        &file.text,
        &[TextEdit { range, content: String::new() }],
    ))
}
