//! What changed in a target's *body* between the two versions, and how each
//! upstream change meets the patch.
//!
//! A target's code changed when its syntax trees differ once docstrings
//! (the first string statement of the definition and of every nested
//! function and class) are left out, as `ast.dump` would see them; comments
//! never reach the tree. Otherwise, when the source text differs, only its
//! docstrings or comments changed. The upstream change hunks come from
//! `port`: the same three-way merge `patchgen bump` runs, so a hunk is
//! `carryable` exactly when bump would carry it, and a `conflict` where the
//! patch rewrote lines upstream changed too.

use std::ops::Range;

use ruff_python_ast::comparable::ComparableStmt;
use ruff_python_ast::{Expr, Stmt};

use crate::port::{self, HunkStatus, PortRequest};
use patchgen_python::merge::Labels;

/// Whether the code changed or only docstrings and comments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyChange {
    Code,
    Docstring,
}

impl BodyChange {
    pub fn as_str(self) -> &'static str {
        match self {
            BodyChange::Code => "code",
            BodyChange::Docstring => "docstring",
        }
    }
}

/// A target's source in one version: its text (decorators included) and
/// the file line it starts at.
#[derive(Clone, Debug)]
pub struct TargetText {
    pub text: String,
    pub first_line: usize,
    /// The definition's own name.
    pub name: String,
}

/// One region upstream changed: 1-based line ranges (end exclusive) in each
/// upstream file, the lines themselves, and the patch's config lines there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyHunk {
    pub from: Range<usize>,
    pub to: Range<usize>,
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
    /// Config lines of the patch that correspond (empty range: the place
    /// the change would go), `None` when the patch's source is unknown.
    pub config_lines: Option<Range<usize>>,
    pub status: HunkStatus,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyDiff {
    pub change: BodyChange,
    pub hunks: Vec<BodyHunk>,
}

impl BodyDiff {
    pub fn count(&self, status: HunkStatus) -> usize {
        self.hunks.iter().filter(|h| h.status == status).count()
    }
}

/// The patch as the survey sees it in its config: its text (`name_map`
/// applied) and the config line of each of its lines.
pub struct PatchText<'a> {
    pub text: &'a str,
    pub name: &'a str,
    pub line_of: &'a dyn Fn(usize) -> usize,
}

/// `None` when the two texts are the same.
pub fn compare(
    old: &TargetText,
    new: &TargetText,
    old_stmt: &Stmt,
    new_stmt: &Stmt,
    patch: Option<PatchText<'_>>,
) -> Option<BodyDiff> {
    if old.text == new.text {
        return None;
    }
    let change = if same_code(old_stmt, new_stmt) { BodyChange::Docstring } else { BodyChange::Code };
    let labels = Some(Labels { ours: "config", base: "old", theirs: "new" });
    let (patch_text, patch_name) = match &patch {
        Some(p) => (p.text, p.name),
        None => (old.text.as_str(), old.name.as_str()),
    };
    let ported = port::port(&PortRequest {
        patch: patch_text,
        patch_name,
        old: &old.text,
        new: &new.text,
        target_name: &old.name,
        labels,
    });
    let old_lines: Vec<&str> = old.text.lines().collect();
    let new_lines: Vec<&str> = new.text.lines().collect();
    let hunks = ported
        .hunks
        .iter()
        .map(|h| BodyHunk {
            from: old.first_line + h.old.start..old.first_line + h.old.end,
            to: new.first_line + h.new.start..new.first_line + h.new.end,
            old_lines: old_lines[h.old.clone()].iter().map(|s| s.to_string()).collect(),
            new_lines: new_lines[h.new.clone()].iter().map(|s| s.to_string()).collect(),
            config_lines: patch.as_ref().map(|p| {
                let start = (p.line_of)(h.patch.start);
                let end = if h.patch.is_empty() { start } else { (p.line_of)(h.patch.end - 1) + 1 };
                start..end
            }),
            status: h.status,
        })
        .collect();
    Some(BodyDiff { change, hunks })
}

/// Whether two definitions are the same code: their trees, docstrings left out.
pub fn same_code(a: &Stmt, b: &Stmt) -> bool {
    let (mut a, mut b) = (a.clone(), b.clone());
    strip_docstrings(&mut a);
    strip_docstrings(&mut b);
    ComparableStmt::from(&a) == ComparableStmt::from(&b)
}

/// Drop the docstring of a definition and of every definition nested in it.
fn strip_docstrings(stmt: &mut Stmt) {
    let body = match stmt {
        Stmt::FunctionDef(f) => &mut f.body,
        Stmt::ClassDef(c) => &mut c.body,
        _ => return,
    };
    if let Some(Stmt::Expr(e)) = body.first()
        && matches!(*e.value, Expr::StringLiteral(_))
    {
        body.remove(0);
    }
    for s in body.iter_mut() {
        strip_nested(s);
    }
}

/// Definitions anywhere below a statement (in `if`, `try`, `with`, loops).
fn strip_nested(stmt: &mut Stmt) {
    match stmt {
        Stmt::FunctionDef(_) | Stmt::ClassDef(_) => strip_docstrings(stmt),
        Stmt::If(s) => {
            s.body.iter_mut().for_each(strip_nested);
            for c in &mut s.elif_else_clauses {
                c.body.iter_mut().for_each(strip_nested);
            }
        }
        Stmt::For(s) => s.body.iter_mut().chain(s.orelse.iter_mut()).for_each(strip_nested),
        Stmt::While(s) => s.body.iter_mut().chain(s.orelse.iter_mut()).for_each(strip_nested),
        Stmt::With(s) => s.body.iter_mut().for_each(strip_nested),
        Stmt::Try(s) => {
            s.body.iter_mut().chain(s.orelse.iter_mut()).chain(s.finalbody.iter_mut()).for_each(strip_nested);
            for h in &mut s.handlers {
                let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                h.body.iter_mut().for_each(strip_nested);
            }
        }
        _ => {}
    }
}
