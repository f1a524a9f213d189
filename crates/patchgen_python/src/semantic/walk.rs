//! Statement and expression walks, on ruff's `StatementVisitor` and
//! `Visitor`: every block a body runs (`if`/`elif`/`else`, `for`/`while`
//! and their `else`, `with`, `try`/`except`/`else`/`finally`, `match`
//! cases), in source order, a compound statement before its blocks. The
//! one decision a caller makes is the [`Scope`].

use ruff_python_ast::statement_visitor::{self, StatementVisitor};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};

use super::facts::dotted;

/// How far a walk goes into nested definitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The body's own scope: a nested `def`/`class` statement is visited,
    /// its body is not (what a function does when it runs).
    Own,
    /// Everything, nested `def`/`class` bodies included (the statements
    /// `ast.walk` reaches, in source order).
    All,
}

struct Statements<F> {
    scope: Scope,
    f: F,
}

impl<'a, F: FnMut(&'a Stmt)> StatementVisitor<'a> for Statements<F> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        (self.f)(stmt);
        let definition = matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_));
        if self.scope == Scope::All || !definition {
            statement_visitor::walk_stmt(self, stmt);
        }
    }
}

/// Calls `f` with every statement of `body` and of its blocks, in source
/// order (pre-order), as far as `scope` goes.
pub fn for_each_statement<'a>(body: &'a [Stmt], scope: Scope, f: impl FnMut(&'a Stmt)) {
    Statements { scope, f }.visit_body(body);
}

/// Every statement of `body` and of its blocks, in source order
/// (pre-order), as far as `scope` goes.
pub fn statements(body: &[Stmt], scope: Scope) -> Vec<&Stmt> {
    let mut out = Vec::new();
    for_each_statement(body, scope, |s| out.push(s));
    out
}

struct Expressions<'a> {
    scope: Scope,
    out: Vec<&'a Expr>,
}

impl<'a> Visitor<'a> for Expressions<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        let definition = matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_));
        if self.scope == Scope::All || !definition {
            visitor::walk_stmt(self, stmt);
        }
    }
    fn visit_expr(&mut self, expr: &'a Expr) {
        self.out.push(expr);
        visitor::walk_expr(self, expr);
    }
}

/// Every expression of `body` (each one and every one inside it), in
/// ruff's visiting order. With [`Scope::Own`] a nested `def`/`class`
/// statement is skipped whole (its decorators, defaults and bases too):
/// what is left is what the body itself computes.
pub fn expressions(body: &[Stmt], scope: Scope) -> Vec<&Expr> {
    let mut e = Expressions { scope, out: Vec::new() };
    e.visit_body(body);
    e.out
}

/// `expr` and every expression inside it.
pub fn sub_expressions(expr: &Expr) -> Vec<&Expr> {
    let mut e = Expressions { scope: Scope::All, out: Vec::new() };
    e.visit_expr(expr);
    e.out
}

/// Every call in `expr`, outermost first, in source order; calls inside a
/// `lambda` are not part of this evaluation and are left out.
pub fn calls(expr: &Expr) -> Vec<&ExprCall> {
    struct Calls<'a>(Vec<&'a ExprCall>);
    impl<'a> Visitor<'a> for Calls<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(c) = expr {
                self.0.push(c);
            }
            if !matches!(expr, Expr::Lambda(_)) {
                visitor::walk_expr(self, expr);
            }
        }
    }
    let mut c = Calls(Vec::new());
    c.visit_expr(expr);
    c.0
}

/// Whether `expr` mentions a name or dotted name (`a.b.c`) accepted by
/// `wanted`.
pub fn mentions(expr: &Expr, wanted: &dyn Fn(&str) -> bool) -> bool {
    struct Finder<'w> {
        wanted: &'w dyn Fn(&str) -> bool,
        found: bool,
    }
    impl<'a> Visitor<'a> for Finder<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if self.found {
                return;
            }
            match expr {
                Expr::Name(n) if (self.wanted)(n.id.as_str()) => self.found = true,
                Expr::Attribute(_) if dotted(expr).is_some_and(|d| (self.wanted)(&d)) => self.found = true,
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    let mut f = Finder { wanted, found: false };
    f.visit_expr(expr);
    f.found
}
