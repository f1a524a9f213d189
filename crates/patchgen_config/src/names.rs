//! Which names a statement reads: used to decide whether a statement
//! outside the evaluated subset can matter to the config (which names it
//! binds is [`patchgen_python::pysource::names::bound_names`]).

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprContext, Stmt};

struct Loaded(Vec<String>);

impl<'a> Visitor<'a> for Loaded {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::FunctionDef(f) = stmt {
            for d in &f.decorator_list {
                self.visit_decorator(d);
            }
            // The body runs later, at call time: its names do not matter here.
            return;
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr
            && n.ctx == ExprContext::Load
        {
            self.0.push(n.id.to_string());
        }
        visitor::walk_expr(self, expr);
    }
}

/// Names the statement reads (at the time it runs).
pub fn loaded_names(stmt: &Stmt) -> Vec<String> {
    let mut loaded = Loaded(Vec::new());
    loaded.visit_stmt(stmt);
    loaded.0.dedup();
    loaded.0
}
