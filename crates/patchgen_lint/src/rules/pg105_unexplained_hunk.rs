//! PG105 unexplained-hunk: a hunk of the generated module's `.diff` that no patch, import, header or ruff rule accounts for.
//!
//! ## What it does
//! Maps the checked-in generated module back to what codegen wrote (the
//! source map of `patchgen explain`: every line's origin, carried across
//! ruff's changes by line matching) and gives each hunk of its diff
//! against upstream its causes: the patch, helper or exclusion that wrote
//! or removed its lines, the `add_import` / post-import block call, the
//! generated header and import block, or ruff. A hunk with none is
//! reported at the generated module's first changed line, with the
//! nearest patch as related. Nothing is reported when the checked-in
//! module is missing.
//!
//! ## Why is this bad?
//! The review protocol asks that every hunk of a `.diff` correspond to an
//! intentional patch. A hunk nothing accounts for is upstream code the
//! generator dropped on its own (a module-level statement that is not a
//! class, function, assignment, docstring or import guard): a change no
//! config line explains. (A checked-in file edited by hand is not this
//! rule's business: `patchgen check` reports it as drift, `patchgen explain
//! FILE:LINE` names the line a hand edit, and the language server flags it
//! as you type.)
//!
//! ## Example
//! ```python
//! # upstream module
//! torch.backends.cuda.matmul.allow_tf32 = True
//! register_kernel("rms_norm", fused_rms_norm)  # a module-level call: not copied
//! ```
//!
//! ## Use instead
//! Re-add what the module needs explicitly, e.g. with
//! `config.add_post_import_block("register_kernel(\"rms_norm\", fused_rms_norm)")`,
//! so the change has a config line; `patchgen explain` shows every hunk's causes.

use super::super::{LintContext, Rule};
use patchgen_core::provenance::map::Kind;
use patchgen_core::provenance::raw::RawOrigin;
use patchgen_diagnostics::{Diagnostic, Location, Severity};

pub const RULE: Rule = Rule {
    code: "PG105",
    name: "unexplained-hunk",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg105_unexplained_hunk.rs"),
    check,
    check_project: None,
};

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let Some(checked_in) = ctx.checked_in() else { return Vec::new() };
    let resolver = ctx.resolver(checked_in);
    // The checked-in `.diff`'s hunks, when it is one of these two texts
    // (else the diff is taken again).
    let upstream_lines = ctx.upstream.splitlines().len();
    let disk_lines = checked_in.line_count();
    let shapes = ctx
        .shared
        .read_noted("checked-in diff", &ctx.py_path().with_extension("diff"))
        .and_then(|diff| patchgen_core::explain::parse_diff(&diff, upstream_lines, disk_lines))
        .unwrap_or_else(|| {
            let a = ctx.upstream.splitlines_keepends();
            patchgen_core::explain::shapes(&a, &patchgen_python::pytext::splitlines_keepends(&checked_in.text))
        });
    let hunks = patchgen_core::explain::explain_shapes_lines(
        &shapes,
        &ctx.upstream,
        &checked_in.lines(),
        &resolver,
        ctx.py_path(),
    );
    let mut out = Vec::new();
    for h in hunks.iter().filter(|h| h.is_unexplained()) {
        let d = RULE
            .diagnostic(format!(
                "hunk `{}` of the generated module's diff comes from no patch, import, header or ruff rule",
                h.header()
            ))
            .help("`patchgen explain` shows every hunk's causes; make the change with a config call (or regenerate a hand-edited file)")
            .at(Location::line(ctx.py_path().to_path_buf(), h.first_changed));
        // The nearest line, in either direction, that a patch wrote.
        let lines = &checked_in.map.lines;
        let at = h.first_changed.saturating_sub(1);
        let nearest = (0..lines.len())
            .flat_map(|d| [at.checked_sub(d), Some(at + d)])
            .flatten()
            .filter_map(|i| lines.get(i))
            .find_map(|m| match m.raw {
                Some(raw @ (RawOrigin::Patch { .. } | RawOrigin::Banner { .. } | RawOrigin::Helper { .. })) => {
                    Some(resolver.raw(raw))
                }
                _ => None,
            });
        let d = match nearest.filter(|o| o.kind == Kind::Patch) {
            Some(o) => match (o.path.clone(), o.line) {
                (Some(path), Some(line)) => d.related(
                    Location::line(path, line),
                    format!("nearest patch: {}", o.target.as_deref().unwrap_or("")),
                ),
                _ => d,
            },
            None => d,
        };
        out.push(ctx.own(d));
    }
    out
}
