//! The generated file's import block: every upstream import (nested ones
//! too, in `ast` walk order), as `ast.unparse` prints it after
//! `drop_import_names` and relative-to-absolute conversion; then the
//! config's additional imports and post-import blocks.

use std::collections::BTreeSet;

use ruff_python_ast::{Stmt, StmtImport, StmtImportFrom};

use patchgen_config::eval::dotted;
use patchgen_config::plan::PatchPlan;
use patchgen_python::pytext;
use patchgen_python::semantic::walk::{self, Scope};

use crate::provenance::raw::RawOrigin;

/// One upstream import statement, reduced to what rendering needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportStmt {
    Import { names: Vec<(String, Option<String>)> },
    From { module: Option<String>, level: u32, names: Vec<(String, Option<String>)> },
}

fn aliases(names: &[ruff_python_ast::Alias]) -> Vec<(String, Option<String>)> {
    names.iter().map(|a| (dotted(&a.name.id), a.asname.as_ref().map(|n| n.id.to_string()))).collect()
}

impl From<&StmtImport> for ImportStmt {
    fn from(i: &StmtImport) -> Self {
        ImportStmt::Import { names: aliases(&i.names) }
    }
}

impl From<&StmtImportFrom> for ImportStmt {
    fn from(i: &StmtImportFrom) -> Self {
        ImportStmt::From { module: i.module.as_ref().map(|m| dotted(&m.id)), level: i.level, names: aliases(&i.names) }
    }
}

impl ImportStmt {
    /// An `import` or `from` statement (anything else: an empty `import`).
    pub fn of(stmt: &Stmt) -> ImportStmt {
        match stmt {
            Stmt::Import(i) => i.into(),
            Stmt::ImportFrom(i) => i.into(),
            _ => ImportStmt::Import { names: Vec::new() },
        }
    }

    fn names(&self) -> &[(String, Option<String>)] {
        match self {
            ImportStmt::Import { names } | ImportStmt::From { names, .. } => names,
        }
    }
}

/// Every import statement in the module, in `ast.NodeVisitor` order (which
/// for statements is source order, nested bodies included).
pub fn collect_imports(body: &[Stmt]) -> Vec<ImportStmt> {
    import_statements(body).into_iter().map(ImportStmt::of).collect()
}

/// The statements [`collect_imports`] reads, in its order: the semantic
/// layer's walk over every statement, nested bodies included.
pub fn import_statements(body: &[Stmt]) -> Vec<&Stmt> {
    let mut out = Vec::new();
    walk::for_each_statement(body, Scope::All, |stmt| {
        if matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
            out.push(stmt);
        }
    });
    out
}

/// `ast.unparse` of an alias list.
fn render_aliases(names: &[&(String, Option<String>)]) -> String {
    names
        .iter()
        .map(|(n, a)| match a {
            Some(a) => format!("{n} as {a}"),
            None => n.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `ast.unparse(ImportFrom(module, names, level))`.
pub fn unparse_from(module: Option<&str>, level: u32, names: &[&(String, Option<String>)]) -> String {
    format!("from {}{} import {}", ".".repeat(level as usize), module.unwrap_or(""), render_aliases(names))
}

/// The absolute module the reference turns a relative import into, or
/// `None` when it keeps the import relative (level deeper than the module).
pub fn absolute_module(source_module: &str, module: Option<&str>, level: u32) -> Option<String> {
    let base: Vec<&str> = source_module.split('.').collect();
    let level = level as usize;
    if level > base.len() {
        return None;
    }
    let mut absolute = base[..base.len() - level].join(".");
    if let Some(m) = module.filter(|m| !m.is_empty()) {
        absolute = format!("{absolute}.{m}");
    }
    Some(absolute)
}

fn keep_alias(drop: &BTreeSet<String>, (name, asname): &(String, Option<String>)) -> bool {
    if drop.is_empty() {
        return true;
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    !(drop.contains(name) || drop.contains(last) || asname.as_ref().is_some_and(|a| drop.contains(a)))
}

/// Whether `_transform_imports` renders `imp` (some name survives
/// `drop_import_names`).
pub fn renders_any(plan: &PatchPlan, imp: &ImportStmt) -> bool {
    imp.names().iter().any(|a| keep_alias(&plan.drop_imported_names, a))
}

/// The index in `plan.call_sites.drops` of the call that dropped a name
/// of `imp`, if one did.
pub fn drop_site(plan: &PatchPlan, imp: &ImportStmt) -> Option<u32> {
    let (name, asname) = imp.names().iter().find(|a| !keep_alias(&plan.drop_imported_names, a))?;
    let last = name.rsplit('.').next().unwrap_or(name);
    let sites = &plan.call_sites.drops;
    let at = sites.iter().position(|(n, _)| n == name || n == last || asname.as_deref() == Some(n.as_str()))?;
    u32::try_from(at).ok()
}

/// `_transform_imports`.
pub fn transform_imports(plan: &PatchPlan, imports: &[ImportStmt]) -> String {
    transform_imports_traced(plan, imports, &[]).0
}

/// [`transform_imports`], and each line's origin; `lines[i]` is the first
/// upstream line of `imports[i]` (0 where missing).
pub fn transform_imports_traced(plan: &PatchPlan, imports: &[ImportStmt], lines: &[u32]) -> (String, Vec<RawOrigin>) {
    let drop = &plan.drop_imported_names;
    let mut out: Vec<String> = Vec::new();
    let mut origins: Vec<RawOrigin> = Vec::new();
    let index = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
    for (i, imp) in imports.iter().enumerate() {
        let line = lines.get(i).copied().unwrap_or(0);
        let dropped = drop_site(plan, imp);
        let before = out.len();
        match imp {
            ImportStmt::From { module, level, names } => {
                let kept: Vec<&(String, Option<String>)> = names.iter().filter(|a| keep_alias(drop, a)).collect();
                if kept.is_empty() {
                    continue;
                }
                if *level > 0 {
                    match absolute_module(&plan.source_module, module.as_deref(), *level) {
                        // An empty absolute module is falsy: unparse omits it.
                        Some(abs) => out.push(unparse_from(Some(&abs), 0, &kept)),
                        None => out.push(unparse_from(module.as_deref(), *level, &kept)),
                    }
                } else {
                    out.push(unparse_from(module.as_deref(), 0, &kept));
                }
            }
            ImportStmt::Import { names } => {
                let kept: Vec<&(String, Option<String>)> = names.iter().filter(|a| keep_alias(drop, a)).collect();
                if kept.is_empty() {
                    continue;
                }
                out.push(format!("import {}", render_aliases(&kept)));
            }
        }
        origins.resize(out.len(), RawOrigin::UpstreamImport { line, dropped });
        debug_assert!(out.len() <= before + 1);
    }
    if !plan.additional_imports.is_empty() {
        out.push(String::new());
        out.push("# Additional imports for patches".into());
        origins.resize(out.len(), RawOrigin::Header);
        for (i, imp) in plan.additional_imports.iter().enumerate() {
            let line = if imp.is_from_import {
                match imp.names.as_ref().filter(|n| !n.is_empty()) {
                    Some(names) => format!("from {} import {}", imp.module, names.join(", ")),
                    None => format!("from {} import *", imp.module),
                }
            } else {
                match imp.alias.as_ref().filter(|a| !a.is_empty()) {
                    Some(alias) => format!("import {} as {alias}", imp.module),
                    None => format!("import {}", imp.module),
                }
            };
            out.push(line);
            origins.push(RawOrigin::Import { index: index(i) });
        }
    }
    if !plan.post_import_blocks.is_empty() {
        out.push(String::new());
        out.push("# Additional import blocks for patches".into());
        origins.resize(out.len(), RawOrigin::Header);
        for (i, block) in plan.post_import_blocks.iter().enumerate() {
            let block = pytext::dedent(block);
            let block = pytext::strip(&block);
            if !block.is_empty() {
                let n = block.split('\n').count();
                out.push(block.to_string());
                origins.extend(std::iter::repeat_n(RawOrigin::Block { index: index(i) }, n));
                out.push(String::new());
                origins.push(RawOrigin::Header);
            }
        }
        if out.last().is_some_and(|l| l.is_empty()) {
            out.pop();
            origins.pop();
        }
    }
    // No import at all: the block is one empty line.
    if origins.is_empty() {
        origins.push(RawOrigin::Header);
    }
    (out.join("\n"), origins)
}
