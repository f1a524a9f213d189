//! Small facts about one node that many readers need: the dotted name an
//! expression spells, the name a decorator is known by, a body's
//! docstring, the names code loads, and a one-target assignment's target
//! and value.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Decorator, Expr, ExprContext, Stmt};

/// `a`, `a.b.c` for a name or an attribute chain rooted at a name.
pub fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => dotted(&a.value).map(|base| format!("{base}.{}", a.attr.id)),
        _ => None,
    }
}

/// The last identifier of a name or attribute (`self.loss_function` →
/// `loss_function`).
pub fn last_ident(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.id.as_str()),
        _ => None,
    }
}

/// The name a decorator is known by: `@x`, `@a.x`, `@x(...)` and
/// `@a.x(...)` all give `x`.
pub fn decorator_ident(decorator: &Decorator) -> Option<&str> {
    match &decorator.expression {
        Expr::Call(c) => last_ident(&c.func),
        other => last_ident(other),
    }
}

/// The docstring of a module, class or function body: its first
/// statement when that is a plain string literal (an f-string is not a
/// docstring).
pub fn docstring(body: &[Stmt]) -> Option<&str> {
    match body.first()? {
        Stmt::Expr(e) => match &*e.value {
            Expr::StringLiteral(s) => Some(s.value.to_str()),
            _ => None,
        },
        _ => None,
    }
}

/// Which loads [`loaded_names`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loads {
    /// What the statements read when they run: a `def`'s body runs later,
    /// at call time, and is not counted (nor are its defaults and
    /// annotations; its decorators are); a class body runs at once and is.
    WhenRun,
    /// Every load, function bodies included.
    Anywhere,
}

struct Loaded {
    loads: Loads,
    out: Vec<String>,
}

impl<'a> Visitor<'a> for Loaded {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let (Loads::WhenRun, Stmt::FunctionDef(f)) = (self.loads, stmt) {
            for d in &f.decorator_list {
                self.visit_decorator(d);
            }
            return;
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr
            && n.ctx == ExprContext::Load
            && !self.out.iter().any(|x| x == n.id.as_str())
        {
            self.out.push(n.id.to_string());
        }
        visitor::walk_expr(self, expr);
    }
}

/// The names (`Name` loads: calls, attribute bases, arguments) the
/// statements read, each once, in order of first use.
pub fn loaded_names(body: &[Stmt], loads: Loads) -> Vec<String> {
    let mut v = Loaded { loads, out: Vec::new() };
    v.visit_body(body);
    v.out
}

/// `t1 = t2 = value` or `t: T = value`: the targets, in order, and the
/// value (augmented assignments and a bare annotation assign nothing new).
pub fn assignment(stmt: &Stmt) -> Option<(Vec<&Expr>, &Expr)> {
    match stmt {
        Stmt::Assign(a) => Some((a.targets.iter().collect(), &*a.value)),
        Stmt::AnnAssign(a) => Some((vec![&*a.target], a.value.as_deref()?)),
        _ => None,
    }
}

/// An [`assignment`] with one target (`a = b = 1` is not one): the target
/// and the value.
pub fn one_target_assignment(stmt: &Stmt) -> Option<(&Expr, &Expr)> {
    match assignment(stmt)? {
        (targets, value) if targets.len() == 1 => Some((targets[0], value)),
        _ => None,
    }
}
