//! Whether two Python definitions have the same code, docstrings and
//! comments aside: what `ast.dump` of the two parsed texts says once every
//! docstring (the first statement of a module, class or function body when
//! it is a string literal, as `ast.get_docstring` finds it) is removed.
//! Layout, comments, parentheses, trailing commas and quote styles do not
//! count; names, literals, decorators, signatures and statements do.
//!
//! The verdict compares ruff's trees with `ruff_python_ast::comparable`
//! (ranges ignored, as `ast.dump` ignores positions). Where the code
//! differs, [`Difference`] locates the first differing statement in each
//! text: the innermost one — a compound statement whose header (a `def`
//! line, an `if` test, a `for` target) is the same is entered, and its
//! bodies compared in order. Tested against python3's `ast` on real
//! transformers definitions (`tests/sameness.rs` at the workspace root).
//!
//! The texts are whole definitions, dedented (a method's text parses as a
//! module holding one `def`). Line numbers are 1-based, in those texts.

use ruff_python_ast::comparable::ComparableStmt;
use ruff_python_ast::{ExceptHandler, Expr, Stmt, Suite};
use ruff_text_size::{Ranged, TextSize};

use super::file::{ParsedFile, SyntaxProblem};

/// The verdict of [`compare`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sameness {
    /// The same code; docstrings and comments may differ.
    Same,
    /// The code differs; the first differing statement of each text.
    Differs(Difference),
}

/// The first statement where two definitions differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// 1-based line in the old text (where the old statement starts, or
    /// where the new text's extra statement would go).
    pub old_line: usize,
    /// 1-based line in the new text.
    pub new_line: usize,
    /// That line of the new text, stripped (for a message).
    pub new_text: String,
}

/// Which text did not parse: `old` or `new`, with Python's line and message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {which} text does not parse (line {line}): {message}")]
pub struct SamenessError {
    pub which: &'static str,
    pub line: usize,
    pub message: String,
}

impl SamenessError {
    fn of(which: &'static str, p: SyntaxProblem) -> SamenessError {
        SamenessError { which, line: p.line, message: p.message }
    }
}

/// Compare two definitions' code, docstrings and comments aside.
pub fn compare(old: &str, new: &str) -> Result<Sameness, SamenessError> {
    let old = ParsedFile::parse("<old>".into(), old).map_err(|p| SamenessError::of("old", p))?;
    let new = ParsedFile::parse("<new>".into(), new).map_err(|p| SamenessError::of("new", p))?;
    let mut a: Suite = old.body().iter().cloned().collect();
    let mut b: Suite = new.body().iter().cloned().collect();
    strip_docstrings(&mut a, true);
    strip_docstrings(&mut b, true);
    let Some((at_old, at_new)) = first_difference(&a, &b, TextSize::default(), TextSize::default()) else {
        return Ok(Sameness::Same);
    };
    let new_line = new.line_of(at_new);
    let new_text = new.splitlines().get(new_line.saturating_sub(1)).map(|l| l.trim().to_string()).unwrap_or_default();
    Ok(Sameness::Differs(Difference { old_line: old.line_of(at_old), new_line, new_text }))
}

fn is_docstring(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Expr(e) if matches!(*e.value, Expr::StringLiteral(_)))
}

/// Remove the docstring of every module, class and function body.
fn strip_docstrings(body: &mut Suite, is_scope: bool) {
    if is_scope && body.first().is_some_and(is_docstring) {
        body.remove(0);
    }
    for stmt in body.iter_mut() {
        match stmt {
            Stmt::FunctionDef(f) => strip_docstrings(&mut f.body, true),
            Stmt::ClassDef(c) => strip_docstrings(&mut c.body, true),
            _ => {
                for b in bodies_mut(stmt) {
                    strip_docstrings(b, false);
                }
            }
        }
    }
}

/// The statement lists nested in a compound statement other than a
/// definition, in source order.
fn bodies_mut(stmt: &mut Stmt) -> Vec<&mut Suite> {
    match stmt {
        Stmt::If(s) => {
            let mut out = vec![&mut s.body];
            out.extend(s.elif_else_clauses.iter_mut().map(|c| &mut c.body));
            out
        }
        Stmt::For(s) => vec![&mut s.body, &mut s.orelse],
        Stmt::While(s) => vec![&mut s.body, &mut s.orelse],
        Stmt::With(s) => vec![&mut s.body],
        Stmt::Try(s) => {
            let mut out = vec![&mut s.body];
            out.extend(s.handlers.iter_mut().map(|ExceptHandler::ExceptHandler(h)| &mut h.body));
            out.push(&mut s.orelse);
            out.push(&mut s.finalbody);
            out
        }
        Stmt::Match(s) => s.cases.iter_mut().map(|c| &mut c.body).collect(),
        Stmt::FunctionDef(f) => vec![&mut f.body],
        Stmt::ClassDef(c) => vec![&mut c.body],
        Stmt::Return(_)
        | Stmt::Delete(_)
        | Stmt::Assign(_)
        | Stmt::AugAssign(_)
        | Stmt::AnnAssign(_)
        | Stmt::TypeAlias(_)
        | Stmt::Raise(_)
        | Stmt::Assert(_)
        | Stmt::Import(_)
        | Stmt::ImportFrom(_)
        | Stmt::Global(_)
        | Stmt::Nonlocal(_)
        | Stmt::Expr(_)
        | Stmt::Pass(_)
        | Stmt::Break(_)
        | Stmt::Continue(_)
        | Stmt::IpyEscapeCommand(_) => Vec::new(),
    }
}

/// The statement without its nested bodies: what must match before the
/// bodies are compared.
fn header(stmt: &Stmt) -> Stmt {
    let mut copy = stmt.clone();
    for b in bodies_mut(&mut copy) {
        b.clear();
    }
    copy
}

fn bodies(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::If(s) => {
            let mut out = vec![s.body.as_slice()];
            out.extend(s.elif_else_clauses.iter().map(|c| c.body.as_slice()));
            out
        }
        Stmt::For(s) => vec![&s.body, &s.orelse],
        Stmt::While(s) => vec![&s.body, &s.orelse],
        Stmt::With(s) => vec![&s.body],
        Stmt::Try(s) => {
            let mut out = vec![s.body.as_slice()];
            out.extend(s.handlers.iter().map(|ExceptHandler::ExceptHandler(h)| h.body.as_slice()));
            out.push(&s.orelse);
            out.push(&s.finalbody);
            out
        }
        Stmt::Match(s) => s.cases.iter().map(|c| c.body.as_slice()).collect(),
        Stmt::FunctionDef(f) => vec![&f.body],
        Stmt::ClassDef(c) => vec![&c.body],
        _ => Vec::new(),
    }
}

/// Where a statement's header starts: a definition's `def`/`class` line
/// (its decorators compared equal or not, the name is what a reader finds).
fn header_start(stmt: &Stmt) -> TextSize {
    match stmt {
        Stmt::FunctionDef(f) => f.decorator_list.last().map_or(stmt.start(), |_| f.name.start()),
        Stmt::ClassDef(c) => c.decorator_list.last().map_or(stmt.start(), |_| c.name.start()),
        _ => stmt.start(),
    }
}

/// Where two statement lists first differ (offsets into each text); the
/// parents' starts locate a statement one side lacks in an empty list.
fn first_difference(a: &[Stmt], b: &[Stmt], a_parent: TextSize, b_parent: TextSize) -> Option<(TextSize, TextSize)> {
    let end_of = |list: &[Stmt], parent: TextSize| list.last().map_or(parent, |s| s.start());
    for i in 0..a.len().max(b.len()) {
        match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) => {
                if ComparableStmt::from(x) == ComparableStmt::from(y) {
                    continue;
                }
                if ComparableStmt::from(&header(x)) != ComparableStmt::from(&header(y)) {
                    return Some((header_start(x), header_start(y)));
                }
                for (bx, by) in bodies(x).into_iter().zip(bodies(y)) {
                    if let Some(d) = first_difference(bx, by, x.start(), y.start()) {
                        return Some(d);
                    }
                }
                return Some((x.start(), y.start()));
            }
            (Some(x), None) => return Some((x.start(), end_of(b, b_parent))),
            (None, Some(y)) => return Some((end_of(a, a_parent), y.start())),
            (None, None) => unreachable!("i < max(len)"),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docstrings_comments_and_layout_do_not_count() {
        let a = "def f(x, y):\n    \"\"\"Doc.\"\"\"\n    # a comment\n    return g(x,\n             y,)\n";
        let b = "def f(x, y):\n    '''Other doc.'''\n    return g(x, y)  # why\n";
        assert_eq!(compare(a, b).unwrap(), Sameness::Same);
    }

    #[test]
    fn first_differing_statement_is_the_innermost() {
        let a = "def f(x):\n    y = 1\n    if x:\n        y = 2\n        z = 3\n    return y\n";
        let b = "def f(x):\n    y = 1\n    if x:\n        y = 2\n        z = 4\n    return y\n";
        let Sameness::Differs(d) = compare(a, b).unwrap() else { panic!("differs") };
        assert_eq!((d.old_line, d.new_line, d.new_text.as_str()), (5, 5, "z = 4"));
    }

    #[test]
    fn a_statement_only_one_side_has() {
        let a = "def f(x):\n    return x\n";
        let b = "def f(x):\n    x = x + 1\n    return x\n";
        let Sameness::Differs(d) = compare(a, b).unwrap() else { panic!("differs") };
        assert_eq!((d.old_line, d.new_line), (2, 2));
    }

    #[test]
    fn a_signature_difference_is_the_def_line() {
        let a = "@dec\ndef f(x):\n    return x\n";
        let b = "@dec\ndef f(x, y=None):\n    return x\n";
        let Sameness::Differs(d) = compare(a, b).unwrap() else { panic!("differs") };
        assert_eq!(d.new_line, 2);
    }

    #[test]
    fn a_text_that_does_not_parse_is_an_error() {
        assert_eq!(compare("def f(:\n", "x = 1\n").unwrap_err().which, "old");
    }
}
