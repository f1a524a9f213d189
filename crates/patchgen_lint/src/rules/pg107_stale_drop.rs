//! PG107 stale-drop: `drop_import_names("X")` where the upstream module imports no `X`: the drop drops nothing.
//!
//! ## What it does
//! Checks each name a config passes to `drop_import_names` against the
//! import statements of the upstream module it patches (every `import` and
//! `from … import`, nested blocks included, as generation reads them). A
//! name no import binds — under its own name, its last dotted part or its
//! alias — is reported at its string in the call. When the module now
//! defines the name itself (a `def`, `class` or assignment at module
//! level), the message says where.
//!
//! ## Why is this bad?
//! A drop that drops nothing reads as if it still mattered: the config
//! claims to remove an import that is gone, and hides that upstream now
//! defines the name itself (transformers 5.16 turned qwen3_5's optional
//! `FusedRMSNormGated` and `causal_conv1d_fn` imports into module-level
//! code, so the drops stopped doing anything while the configs kept
//! placeholders for them; see PG108).
//!
//! ## Example
//! ```python
//! config.drop_import_names("FusedRMSNormGated", "apply_rotary_pos_emb")
//! # upstream no longer imports FusedRMSNormGated
//! ```
//!
//! ## Use instead
//! ```python
//! config.drop_import_names("apply_rotary_pos_emb")
//! ```
//!
//! ## Fix
//! Safe: the stale names are removed from the call (the whole call when
//! none is left). Generation is unchanged: the names matched no import.

use std::collections::BTreeSet;

use patchgen_core::codegen::imports::import_statements;
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_python::pysource::ParsedFile;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::fix::{Applicability, TextEdit};
use crate::{LintContext, Rule};

pub const RULE: Rule = Rule {
    code: "PG107",
    name: "stale-drop",
    default_on: true,
    severity: Severity::Warning,
    doc: include_str!("pg107_stale_drop.rs"),
    check,
    check_project: None,
};

/// The names `drop_import_names` can drop from `body`'s imports.
pub fn droppable(body: &[Stmt]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for stmt in import_statements(body) {
        let names = match stmt {
            Stmt::Import(i) => &i.names,
            Stmt::ImportFrom(i) => &i.names,
            _ => continue,
        };
        for a in names {
            let name = a.name.id.as_str();
            out.insert(name.to_string());
            out.insert(name.rsplit('.').next().unwrap_or(name).to_string());
            if let Some(asname) = &a.asname {
                out.insert(asname.id.to_string());
            }
        }
    }
    out
}

/// Where a module defines `name` itself at top level (not by import): the line.
pub fn defined_at(file: &ParsedFile, name: &str) -> Option<usize> {
    file.body().iter().find_map(|s| {
        let at = match s {
            Stmt::FunctionDef(f) if f.name.id.as_str() == name => f.name.start(),
            Stmt::ClassDef(c) if c.name.id.as_str() == name => c.name.start(),
            Stmt::Assign(a) if a.targets.iter().any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name)) => {
                a.start()
            }
            Stmt::AnnAssign(a) if matches!(&*a.target, Expr::Name(n) if n.id.as_str() == name) => a.start(),
            _ => return None,
        };
        Some(file.line_of(at))
    })
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    if ctx.plan.drop_imported_names.is_empty() {
        return Vec::new();
    }
    let importable = droppable(ctx.upstream.body());
    let stale: BTreeSet<&str> =
        ctx.plan.drop_imported_names.iter().map(String::as_str).filter(|n| !importable.contains(*n)).collect();
    let module = &ctx.plan.source_module;
    let version = &ctx.shared.upstream.upstream.version;
    let mut out = Vec::new();
    // The calls, file by file (a config may drop names in a module it imports).
    let mut sites: Vec<(&str, &patchgen_config::plan::Loc)> = Vec::new();
    for (name, loc) in &ctx.plan.call_sites.drops {
        if stale.contains(name.as_str()) && !sites.iter().any(|(n, _)| n == name) {
            sites.push((name, loc));
        }
    }
    for (name, loc) in sites {
        let mut message = format!(
            "`drop_import_names(\"{name}\")`: `{module}` imports no `{name}` at transformers {version}; the drop drops nothing"
        );
        if let Some(line) = defined_at(&ctx.upstream, name) {
            message.push_str(&format!(" (the module defines `{name}` itself, line {line})"));
        }
        let d = RULE.diagnostic(message).help(format!("remove `\"{name}\"` from the call"));
        let found = ctx.shared.pipeline.loader.parse_file(&loc.path).ok().and_then(|file| {
            let call = drop_call(&file, loc.line, name)?;
            let arg = literal_arg(call, name)?;
            let location = file.location(arg.range());
            let fix = removal(&file, call, &stale).map(|edits| {
                crate::fix::of_text(
                    Applicability::Safe,
                    "Remove the names no upstream import binds from `drop_import_names`",
                    &file.path,
                    &file.text,
                    &edits,
                )
            });
            Some((location, fix))
        });
        out.push(match found {
            Some((location, fix)) => d.at(location).with_fix(fix),
            None => d.at(ctx.at_config(loc)),
        });
    }
    out
}

/// The `….drop_import_names(…)` call passing `"name"` that starts on `line`
/// (or spans it).
fn drop_call<'f>(file: &'f ParsedFile, line: usize, name: &str) -> Option<&'f ExprCall> {
    patchgen_python::semantic::walk::statements(file.body(), patchgen_python::semantic::walk::Scope::All)
        .into_iter()
        .find_map(|s| {
            let Stmt::Expr(e) = s else { return None };
            let Expr::Call(call) = &*e.value else { return None };
            let is_drop = matches!(&*call.func, Expr::Attribute(a) if a.attr.id.as_str() == "drop_import_names");
            let (first, last) = (file.line_of(call.start()), file.line_of(call.end()));
            (is_drop && first <= line && line <= last && literal_arg(call, name).is_some()).then_some(call)
        })
}

fn literal_arg<'c>(call: &'c ExprCall, name: &str) -> Option<&'c Expr> {
    call.arguments.args.iter().find(|a| matches!(a, Expr::StringLiteral(s) if s.value.to_str() == name))
}

/// Edits removing the `stale` string arguments of `call`: the whole
/// statement (its lines) when no argument is left, else each argument with
/// the separator after it (before it, for the last one).
fn removal(file: &ParsedFile, call: &ExprCall, stale: &BTreeSet<&str>) -> Option<Vec<TextEdit>> {
    if !call.arguments.keywords.is_empty() {
        return None;
    }
    let args = &call.arguments.args;
    let is_stale = |a: &Expr| matches!(a, Expr::StringLiteral(s) if stale.contains(s.value.to_str()));
    if args.iter().all(is_stale) {
        let (first, last) = (file.line_of(call.start()), file.line_of(call.end()));
        let line = file.line_range(first, last);
        // Only a call that has its lines to itself.
        let start = file.line_start(first);
        let own = file.text[start..call.start().to_usize()].trim().is_empty() && {
            // Nothing after the call but a comment, which goes with it.
            let rest = file.text[call.end().to_usize()..start + line.len()].trim();
            rest.is_empty() || rest.starts_with('#')
        };
        if !own {
            return None;
        }
        let range = TextRange::new(TextSize::try_from(start).ok()?, TextSize::try_from(start + line.len()).ok()?);
        return Some(vec![TextEdit { range, content: String::new() }]);
    }
    let mut edits = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if !is_stale(a) {
            continue;
        }
        let range = match args.get(i + 1) {
            Some(next) => TextRange::new(a.start(), next.start()),
            // The last argument: from the end of the last one kept (the
            // removed ones between are inside this edit, merged below).
            None => TextRange::new(args[..i].iter().rev().find(|x| !is_stale(x))?.end(), a.end()),
        };
        edits.push(TextEdit { range, content: String::new() });
    }
    // A removed last argument and a removed one before it meet: merge.
    edits.sort_by_key(|e| e.range.start());
    let mut merged: Vec<TextEdit> = Vec::new();
    for e in edits {
        match merged.last_mut() {
            Some(m) if m.range.end() > e.range.start() => {
                m.range = TextRange::new(m.range.start().min(e.range.start()), m.range.end().max(e.range.end()));
            }
            _ => merged.push(e),
        }
    }
    Some(merged)
}
