//! Small, pure facts about parsed Python that the model-contract rules
//! (PG3xx), the MoE rules (PG4xx) and the project-convention rules (PG5xx)
//! share: dotted names, classes and methods of a module, parameters,
//! decorators, the definition a config line names, and which names an
//! expression mentions. Nothing here reads files or knows about rules.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Decorator, Expr, Parameters, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};

use patchgen_config::source::ParsedFile;

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

/// Top-level class `name` of a module body (the first one, as a reader
/// of the source would find it).
pub fn class<'a>(body: &'a [Stmt], name: &str) -> Option<&'a StmtClassDef> {
    body.iter().find_map(|s| match s {
        Stmt::ClassDef(c) if c.name.id.as_str() == name => Some(c),
        _ => None,
    })
}

/// Top-level function `name` of a module body.
pub fn function<'a>(body: &'a [Stmt], name: &str) -> Option<&'a StmtFunctionDef> {
    body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.id.as_str() == name => Some(f),
        _ => None,
    })
}

/// Method `name` defined directly in `class` (the last definition wins, as
/// in Python).
pub fn method<'a>(class: &'a StmtClassDef, name: &str) -> Option<&'a StmtFunctionDef> {
    class.body.iter().rev().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.id.as_str() == name => Some(f),
        _ => None,
    })
}

/// Names of a class's bases as written (`nn.Module` → `nn.Module`).
pub fn base_names(class: &StmtClassDef) -> Vec<String> {
    class.bases().iter().filter_map(dotted).collect()
}

/// `class` and then its bases defined in the same module, depth first in
/// MRO-like order (each class once).
pub fn local_lineage<'a>(body: &'a [Stmt], class: &'a StmtClassDef) -> Vec<&'a StmtClassDef> {
    let mut out: Vec<&StmtClassDef> = vec![class];
    let mut i = 0;
    while i < out.len() {
        for base in base_names(out[i]) {
            if let Some(c) = self::class(body, &base)
                && !out.iter().any(|o| std::ptr::eq(*o, c))
            {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}

/// Method `name` of `class` or of the first local base that defines it.
pub fn resolve_method<'a>(body: &'a [Stmt], class: &'a StmtClassDef, name: &str) -> Option<&'a StmtFunctionDef> {
    local_lineage(body, class).into_iter().find_map(|c| method(c, name))
}

/// Every parameter name, in order (`*args` and `**kwargs` included).
pub fn param_names(parameters: &Parameters) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    out.extend(parameters.posonlyargs.iter().map(|p| p.parameter.name.id.as_str()));
    out.extend(parameters.args.iter().map(|p| p.parameter.name.id.as_str()));
    if let Some(v) = &parameters.vararg {
        out.push(v.name.id.as_str());
    }
    out.extend(parameters.kwonlyargs.iter().map(|p| p.parameter.name.id.as_str()));
    if let Some(k) = &parameters.kwarg {
        out.push(k.name.id.as_str());
    }
    out
}

/// A `def` or `class` statement found in a parsed file.
#[derive(Clone, Copy)]
pub enum Definition<'a> {
    Function(&'a StmtFunctionDef),
    Class(&'a StmtClassDef),
}

impl Definition<'_> {
    pub fn range(&self) -> TextRange {
        match self {
            Definition::Function(f) => f.range(),
            Definition::Class(c) => c.range(),
        }
    }
}

/// The `def`/`class` named `name` whose keyword is on 1-based `line` of
/// `file` (how a plan's `SourceObject::defined_at` names it), searched at
/// any depth.
pub fn definition_at<'a>(file: &'a ParsedFile, name: &str, line: usize) -> Option<Definition<'a>> {
    fn search<'a>(file: &'a ParsedFile, body: &'a [Stmt], name: &str, line: usize) -> Option<Definition<'a>> {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(f) => {
                    if f.name.id.as_str() == name && file.line_of(f.name.start()) == line {
                        return Some(Definition::Function(f));
                    }
                    if let Some(d) = search(file, &f.body, name, line) {
                        return Some(d);
                    }
                }
                Stmt::ClassDef(c) => {
                    if c.name.id.as_str() == name && file.line_of(c.name.start()) == line {
                        return Some(Definition::Class(c));
                    }
                    if let Some(d) = search(file, &c.body, name, line) {
                        return Some(d);
                    }
                }
                Stmt::If(i) => {
                    if let Some(d) = search(file, &i.body, name, line) {
                        return Some(d);
                    }
                    for clause in &i.elif_else_clauses {
                        if let Some(d) = search(file, &clause.body, name, line) {
                            return Some(d);
                        }
                    }
                }
                Stmt::Try(t) => {
                    for b in [&t.body, &t.orelse, &t.finalbody] {
                        if let Some(d) = search(file, b, name, line) {
                            return Some(d);
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }
    // The plan records the line of the `def` keyword, which is the name's
    // line unless the header is split with a backslash (not worth code).
    search(file, file.body(), name, line)
}

/// The function (in classes, functions and blocks) whose `def` keyword
/// is on 1-based `line`.
pub fn function_on_line(file: &ParsedFile, line: usize) -> Option<&StmtFunctionDef> {
    fn search<'a>(file: &ParsedFile, body: &'a [Stmt], line: usize) -> Option<&'a StmtFunctionDef> {
        let mut found = None;
        walk_body(body, &mut |s| {
            if found.is_some() {
                return;
            }
            found = match s {
                Stmt::FunctionDef(f) if file.line_of(f.name.start()) == line => Some(f),
                Stmt::FunctionDef(f) => search(file, &f.body, line),
                Stmt::ClassDef(c) => search(file, &c.body, line),
                _ => None,
            };
        });
        found
    }
    search(file, file.body(), line)
}

/// Whether `expr` mentions a name (or dotted name) accepted by `wanted`.
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

/// Every call in `expr`, outermost first, in source order.
pub fn calls(expr: &Expr) -> Vec<&ruff_python_ast::ExprCall> {
    struct Calls<'a>(Vec<&'a ruff_python_ast::ExprCall>);
    impl<'a> Visitor<'a> for Calls<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(c) = expr {
                self.0.push(c);
            }
            // Lambdas run later (or never): not part of this evaluation.
            if !matches!(expr, Expr::Lambda(_)) {
                visitor::walk_expr(self, expr);
            }
        }
    }
    let mut c = Calls(Vec::new());
    c.visit_expr(expr);
    c.0
}

/// Every statement of a body and of its nested blocks (not of nested
/// functions or classes), in source order.
pub fn walk_body<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for stmt in body {
        f(stmt);
        match stmt {
            Stmt::If(i) => {
                walk_body(&i.body, f);
                for c in &i.elif_else_clauses {
                    walk_body(&c.body, f);
                }
            }
            Stmt::For(s) => {
                walk_body(&s.body, f);
                walk_body(&s.orelse, f);
            }
            Stmt::While(s) => {
                walk_body(&s.body, f);
                walk_body(&s.orelse, f);
            }
            Stmt::With(s) => walk_body(&s.body, f),
            Stmt::Try(t) => {
                walk_body(&t.body, f);
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    walk_body(&h.body, f);
                }
                walk_body(&t.orelse, f);
                walk_body(&t.finalbody, f);
            }
            Stmt::Match(m) => {
                for case in &m.cases {
                    walk_body(&case.body, f);
                }
            }
            _ => {}
        }
    }
}

/// Every expression of a function body that is evaluated by the function
/// itself (nested `def`/`class` bodies excluded), each with its statement.
pub fn body_exprs(body: &[Stmt]) -> Vec<&Expr> {
    struct Exprs<'a>(Vec<&'a Expr>);
    impl<'a> Visitor<'a> for Exprs<'a> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            self.0.push(expr);
            visitor::walk_expr(self, expr);
        }
    }
    let mut e = Exprs(Vec::new());
    for s in body {
        e.visit_stmt(s);
    }
    e.0
}

/// Every expression of a module, nested functions and classes included.
pub fn all_exprs(body: &[Stmt]) -> Vec<&Expr> {
    struct Exprs<'a>(Vec<&'a Expr>);
    impl<'a> Visitor<'a> for Exprs<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            self.0.push(expr);
            visitor::walk_expr(self, expr);
        }
    }
    let mut e = Exprs(Vec::new());
    for s in body {
        e.visit_stmt(s);
    }
    e.0
}

/// An expression and every expression inside it.
pub fn all_exprs_of(expr: &Expr) -> Vec<&Expr> {
    struct Exprs<'a>(Vec<&'a Expr>);
    impl<'a> Visitor<'a> for Exprs<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            self.0.push(expr);
            visitor::walk_expr(self, expr);
        }
    }
    let mut e = Exprs(Vec::new());
    e.visit_expr(expr);
    e.0
}

/// A class whose `__init__` builds experts or a router
/// (`self.experts = ...`, `self.router = ...`): the MoE block, whatever its
/// name (gpt_oss calls it `GptOssMLP`).
pub fn builds_experts(class: &StmtClassDef, text: &str) -> bool {
    class.body.iter().any(|s| match s {
        Stmt::FunctionDef(f) if f.name.as_str() == "__init__" => {
            let t: String = text[f.range()].chars().filter(|c| !c.is_whitespace()).collect();
            t.contains("self.experts=") || t.contains("self.router=")
        }
        _ => false,
    })
}

/// Python source parsed as a file `t.py` (unit tests of the rules).
#[cfg(test)]
pub fn parsed(src: &str) -> ParsedFile {
    ParsedFile::parse(std::path::PathBuf::from("t.py"), src).expect("parses")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn parse(text: &str) -> ParsedFile {
        ParsedFile::parse(PathBuf::from("t.py"), text).expect("parses")
    }

    #[test]
    fn lineage_follows_local_bases_once() {
        let f = parse("class A: pass\nclass B(A): pass\nclass C(B, A, nn.Module): pass\n");
        let c = class(f.body(), "C").unwrap();
        let names: Vec<&str> = local_lineage(f.body(), c).iter().map(|c| c.name.id.as_str()).collect();
        assert_eq!(names, ["C", "B", "A"]);
    }

    #[test]
    fn definition_at_finds_decorated_and_nested() {
        let f = parse("@deco(\n  1)\ndef f(x):\n    def g(): pass\n\nclass K:\n    def m(self): pass\n");
        assert!(matches!(definition_at(&f, "f", 3), Some(Definition::Function(_))));
        assert!(definition_at(&f, "f", 1).is_none());
        assert!(matches!(definition_at(&f, "g", 4), Some(Definition::Function(_))));
        assert!(matches!(definition_at(&f, "K", 6), Some(Definition::Class(_))));
    }

    #[test]
    fn mentions_sees_dotted_names() {
        let f = parse("x = foo(a.b.c, y)\n");
        let Stmt::Assign(a) = &f.body()[0] else { panic!() };
        assert!(mentions(&a.value, &|n| n == "a.b.c"));
        assert!(mentions(&a.value, &|n| n == "y"));
        assert!(!mentions(&a.value, &|n| n == "b"));
    }
}
