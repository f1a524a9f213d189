//! Which names a statement reads and which it binds: used to decide whether
//! a statement outside the evaluated subset can matter to the config.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprContext, Stmt};

struct Names {
    loaded: Vec<String>,
    stored: Vec<String>,
}

impl<'a> Visitor<'a> for Names {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                self.stored.push(f.name.id.to_string());
                for d in &f.decorator_list {
                    self.visit_decorator(d);
                }
                // The body runs later, at call time: its names do not matter here.
                return;
            }
            Stmt::ClassDef(c) => self.stored.push(c.name.id.to_string()),
            Stmt::Import(i) => {
                for a in &i.names {
                    let bound = a
                        .asname
                        .as_ref()
                        .map(|n| n.id.to_string())
                        .unwrap_or_else(|| a.name.id.split('.').next().unwrap_or_default().to_string());
                    self.stored.push(bound);
                }
            }
            Stmt::ImportFrom(i) => {
                for a in &i.names {
                    self.stored.push(a.asname.as_ref().unwrap_or(&a.name).id.to_string());
                }
            }
            Stmt::Try(t) => {
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(name) = &h.name {
                        self.stored.push(name.id.to_string());
                    }
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr {
            match n.ctx {
                ExprContext::Load => self.loaded.push(n.id.to_string()),
                ExprContext::Store | ExprContext::Del => self.stored.push(n.id.to_string()),
                ExprContext::Invalid => {}
            }
        }
        visitor::walk_expr(self, expr);
    }
}

fn collect(stmt: &Stmt) -> Names {
    let mut names = Names { loaded: Vec::new(), stored: Vec::new() };
    names.visit_stmt(stmt);
    names.loaded.dedup();
    names.stored.dedup();
    names
}

/// Names the statement reads (at the time it runs).
pub fn loaded_names(stmt: &Stmt) -> Vec<String> {
    collect(stmt).loaded
}

/// Names the statement may bind.
pub fn bound_names(stmt: &Stmt) -> Vec<String> {
    collect(stmt).stored
}
