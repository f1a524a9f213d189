//! Names, statically, the way pyflakes' F821 sees them: which global names a
//! piece of code reads (its free names, with Python's scoping: parameters,
//! function locals, comprehension variables, class bodies, lambdas, string
//! annotations), and which names a generated module binds at module level.

use std::collections::{BTreeMap, HashSet};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprContext, Parameters, Pattern, Stmt};
use ruff_text_size::{Ranged, TextSize};

/// `dir(builtins)` plus the module attributes every module has.
const BUILTINS: &[&str] = &[
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BaseException",
    "BaseExceptionGroup",
    "BlockingIOError",
    "BrokenPipeError",
    "BufferError",
    "BytesWarning",
    "ChildProcessError",
    "ConnectionAbortedError",
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "DeprecationWarning",
    "EOFError",
    "Ellipsis",
    "EncodingWarning",
    "EnvironmentError",
    "Exception",
    "ExceptionGroup",
    "False",
    "FileExistsError",
    "FileNotFoundError",
    "FloatingPointError",
    "FutureWarning",
    "GeneratorExit",
    "IOError",
    "ImportError",
    "ImportWarning",
    "IndentationError",
    "IndexError",
    "InterruptedError",
    "IsADirectoryError",
    "KeyError",
    "KeyboardInterrupt",
    "LookupError",
    "MemoryError",
    "ModuleNotFoundError",
    "NameError",
    "None",
    "NotADirectoryError",
    "NotImplemented",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PendingDeprecationWarning",
    "PermissionError",
    "ProcessLookupError",
    "PythonFinalizationError",
    "RecursionError",
    "ReferenceError",
    "ResourceWarning",
    "RuntimeError",
    "RuntimeWarning",
    "StopAsyncIteration",
    "StopIteration",
    "SyntaxError",
    "SyntaxWarning",
    "SystemError",
    "SystemExit",
    "TabError",
    "TimeoutError",
    "True",
    "TypeError",
    "UnboundLocalError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UnicodeError",
    "UnicodeTranslateError",
    "UnicodeWarning",
    "UserWarning",
    "ValueError",
    "Warning",
    "ZeroDivisionError",
    "__build_class__",
    "__debug__",
    "__doc__",
    "__import__",
    "__loader__",
    "__name__",
    "__package__",
    "__spec__",
    "__file__",
    "__builtins__",
    "__annotations__",
    "__dict__",
    "__path__",
    "__class__",
    "__module__",
    "__qualname__",
    "abs",
    "aiter",
    "all",
    "anext",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "copyright",
    "credits",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "exit",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "license",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "quit",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
];

pub fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

/// Names bound by the statements of one scope: assignment targets, imports,
/// `def`/`class` names, `for`/`with`/`except`/`match` targets, walrus
/// targets, `global`/`nonlocal` declarations. Nested scopes (function and
/// class bodies, lambdas, comprehensions) bind their own names, not these.
#[derive(Default)]
struct Binder {
    names: Vec<(String, TextSize)>,
}

impl Binder {
    fn bind(&mut self, name: &str, at: TextSize) {
        self.names.push((name.to_string(), at));
    }
}

impl<'a> Visitor<'a> for Binder {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => self.bind(&f.name.id, stmt.start()),
            Stmt::ClassDef(c) => self.bind(&c.name.id, stmt.start()),
            Stmt::Import(i) => {
                for a in &i.names {
                    match &a.asname {
                        Some(n) => self.bind(&n.id, stmt.start()),
                        None => self.bind(a.name.id.split('.').next().unwrap_or_default(), stmt.start()),
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                for a in &i.names {
                    if a.name.id.as_str() != "*" {
                        self.bind(&a.asname.as_ref().unwrap_or(&a.name).id, stmt.start());
                    }
                }
            }
            Stmt::Global(g) => g.names.iter().for_each(|n| self.bind(&n.id, stmt.start())),
            Stmt::Nonlocal(g) => g.names.iter().for_each(|n| self.bind(&n.id, stmt.start())),
            Stmt::Try(t) => {
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(n) = &h.name {
                        self.bind(&n.id, h.start());
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(n) if n.ctx != ExprContext::Load => self.bind(&n.id, n.start()),
            Expr::Lambda(_) | Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {}
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        match pattern {
            Pattern::MatchAs(p) => {
                if let Some(n) = &p.name {
                    self.bind(&n.id, p.start());
                }
            }
            Pattern::MatchStar(p) => {
                if let Some(n) = &p.name {
                    self.bind(&n.id, p.start());
                }
            }
            Pattern::MatchMapping(p) => {
                if let Some(n) = &p.rest {
                    self.bind(&n.id, p.start());
                }
            }
            _ => {}
        }
        visitor::walk_pattern(self, pattern);
    }
}

/// Names bound directly in `body` (one scope), with where.
pub fn bound_in(body: &[Stmt]) -> Vec<(String, TextSize)> {
    let mut b = Binder::default();
    b.visit_body(body);
    b.names
}

/// The parameters' names.
fn parameter_names(p: &Parameters) -> impl Iterator<Item = String> + '_ {
    p.iter().map(|p| p.name().id.to_string())
}

struct Scope {
    names: HashSet<String>,
    is_class: bool,
}

/// Free-name finder: every `Load` of a name that no enclosing scope binds.
struct FreeNames {
    scopes: Vec<Scope>,
    /// Name → offset of its first free use.
    free: BTreeMap<String, TextSize>,
    /// Every free use, in visiting order.
    uses: Vec<(String, TextSize)>,
    in_annotation: bool,
}

impl FreeNames {
    fn resolves(&self, name: &str) -> bool {
        let innermost = self.scopes.len().saturating_sub(1);
        self.scopes
            .iter()
            .enumerate()
            .rev()
            // A class body's names are visible in the body itself only.
            .any(|(i, s)| (i == innermost || !s.is_class) && s.names.contains(name))
            || is_builtin(name)
    }

    fn load(&mut self, name: &str, at: TextSize) {
        if !self.resolves(name) {
            self.free.entry(name.to_string()).or_insert(at);
            self.uses.push((name.to_string(), at));
        }
    }

    fn with_scope(&mut self, names: HashSet<String>, is_class: bool, f: impl FnOnce(&mut Self)) {
        self.scopes.push(Scope { names, is_class });
        f(self);
        self.scopes.pop();
    }

    fn annotation(&mut self, expr: &Expr) {
        let was = std::mem::replace(&mut self.in_annotation, true);
        self.visit_expr(expr);
        self.in_annotation = was;
    }

    /// Defaults and annotations belong to the enclosing scope.
    fn parameter_defaults(&mut self, parameters: &Parameters) {
        for p in parameters.iter_non_variadic_params() {
            if let Some(d) = &p.default {
                self.visit_expr(d);
            }
        }
        for p in parameters.iter() {
            if let Some(a) = p.annotation() {
                self.annotation(a);
            }
        }
    }

    fn comprehension(&mut self, generators: &[ruff_python_ast::Comprehension], elts: &[&Expr]) {
        let Some(first) = generators.first() else { return };
        self.visit_expr(&first.iter);
        let mut names = HashSet::new();
        for g in generators {
            let mut b = Binder::default();
            b.visit_expr(&g.target);
            names.extend(b.names.into_iter().map(|(n, _)| n));
        }
        self.with_scope(names, false, |me| {
            for (i, g) in generators.iter().enumerate() {
                if i > 0 {
                    me.visit_expr(&g.iter);
                }
                for cond in &g.ifs {
                    me.visit_expr(cond);
                }
            }
            for e in elts {
                me.visit_expr(e);
            }
        });
    }
}

fn is_literal_subscript(expr: &Expr) -> bool {
    let Expr::Subscript(s) = expr else { return false };
    super::signature::dotted_name(&s.value).is_some_and(|n| n == "Literal" || n.ends_with(".Literal"))
}

impl<'a> Visitor<'a> for FreeNames {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                for d in &f.decorator_list {
                    self.visit_expr(&d.expression);
                }
                self.parameter_defaults(&f.parameters);
                if let Some(r) = &f.returns {
                    self.annotation(r);
                }
                let mut names: HashSet<String> = parameter_names(&f.parameters).collect();
                names.extend(bound_in(&f.body).into_iter().map(|(n, _)| n));
                self.with_scope(names, false, |me| me.visit_body(&f.body));
            }
            Stmt::ClassDef(c) => {
                for d in &c.decorator_list {
                    self.visit_expr(&d.expression);
                }
                if let Some(args) = &c.arguments {
                    self.visit_arguments(args);
                }
                let names = bound_in(&c.body).into_iter().map(|(n, _)| n).collect();
                self.with_scope(names, true, |me| me.visit_body(&c.body));
            }
            Stmt::AnnAssign(a) => {
                self.annotation(&a.annotation);
                if let Some(v) = &a.value {
                    self.visit_expr(v);
                }
                self.visit_expr(&a.target);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(n) if n.ctx == ExprContext::Load => self.load(&n.id, n.start()),
            Expr::Lambda(l) => {
                let names = match &l.parameters {
                    Some(p) => {
                        for d in p.iter_non_variadic_params().filter_map(|p| p.default.as_deref()) {
                            self.visit_expr(d);
                        }
                        parameter_names(p).collect()
                    }
                    None => HashSet::new(),
                };
                self.with_scope(names, false, |me| me.visit_expr(&l.body));
            }
            Expr::ListComp(c) => self.comprehension(&c.generators, &[&c.elt]),
            Expr::SetComp(c) => self.comprehension(&c.generators, &[&c.elt]),
            Expr::Generator(c) => self.comprehension(&c.generators, &[&c.elt]),
            Expr::DictComp(c) => {
                let mut elts: Vec<&Expr> = c.key.as_deref().into_iter().collect();
                elts.push(&c.value);
                self.comprehension(&c.generators, &elts)
            }
            Expr::StringLiteral(s) if self.in_annotation => {
                // A forward reference: its names are read when annotations are resolved.
                if let Ok(parsed) = ruff_python_parser::parse_expression(s.value.to_str().trim()) {
                    let at = s.start();
                    let mut inner = FreeNames {
                        scopes: std::mem::take(&mut self.scopes),
                        free: BTreeMap::new(),
                        uses: Vec::new(),
                        in_annotation: true,
                    };
                    inner.visit_expr(parsed.expr());
                    self.scopes = inner.scopes;
                    self.uses.extend(inner.uses.into_iter().map(|(name, _)| (name, at)));
                    for name in inner.free.into_keys() {
                        self.free.entry(name).or_insert(at);
                    }
                }
            }
            _ if self.in_annotation && is_literal_subscript(expr) => {
                if let Expr::Subscript(s) = expr {
                    self.visit_expr(&s.value);
                }
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// The global names `body` reads, with the offset of the first read.
/// Module-level bindings of `body` itself count as defined.
pub fn free_names(body: &[Stmt]) -> BTreeMap<String, TextSize> {
    free_walk(body).free
}

/// Every read of a global name in `body` that nothing binds (module-level
/// bindings of `body` count as bound), with its offset, in source order:
/// what pyflakes reports as F821, one entry per use.
pub fn free_name_uses(body: &[Stmt]) -> Vec<(String, TextSize)> {
    free_walk(body).uses
}

/// [`free_name_uses`] of the top-level statements of `body` that `wanted`
/// selects (the whole module's bindings still count as bound).
pub fn free_name_uses_in(body: &[Stmt], wanted: impl Fn(&Stmt) -> bool) -> Vec<(String, TextSize)> {
    let mut f = walker(body);
    for stmt in body.iter().filter(|s| wanted(s)) {
        f.visit_stmt(stmt);
    }
    f.uses
}

fn walker(body: &[Stmt]) -> FreeNames {
    let module_names = bound_in(body).into_iter().map(|(n, _)| n).collect();
    FreeNames {
        scopes: vec![Scope { names: module_names, is_class: false }],
        free: BTreeMap::new(),
        uses: Vec::new(),
        in_annotation: false,
    }
}

fn free_walk(body: &[Stmt]) -> FreeNames {
    let mut f = walker(body);
    f.visit_body(body);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(src: &str) -> Vec<String> {
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        free_names(&parsed.syntax().body).into_keys().collect()
    }

    #[test]
    fn parameters_locals_and_builtins_are_not_free() {
        let src = "def f(self, x: Optional[int] = DEFAULT, *args, **kw) -> Tensor:\n    y = len(x)\n    for i in range(y):\n        z = i\n    return helper(y, z, *args)\n";
        assert_eq!(free(src), ["DEFAULT", "Optional", "Tensor", "helper"]);
    }

    #[test]
    fn comprehension_and_lambda_variables_are_scoped() {
        let src = "def f(xs):\n    a = [v for v in xs if v > limit]\n    g = lambda q: q + w\n    return v, q\n";
        assert_eq!(free(src), ["limit", "q", "v", "w"]);
    }

    #[test]
    fn class_bodies_are_not_visible_in_methods() {
        let src = "class A(Base):\n    size = 3\n    other = size\n    def m(self):\n        return size\n";
        assert_eq!(free(src), ["Base", "size"]);
    }

    #[test]
    fn string_annotations_are_read_but_literals_are_not() {
        let src = "def f(d: \"torch.device\", mode: Literal[\"a\", \"b\"]) -> \"Optional[Cache]\":\n    pass\n";
        assert_eq!(free(src), ["Cache", "Literal", "Optional", "torch"]);
    }

    #[test]
    fn imports_excepts_withs_and_walrus_bind() {
        let src = "def f():\n    import os.path\n    from x import y as z\n    with open('a') as fh:\n        pass\n    try:\n        pass\n    except Exception as e:\n        pass\n    if (n := 3):\n        pass\n    return os, z, fh, e, n, missing\n";
        assert_eq!(free(src), ["missing"]);
    }

    #[test]
    fn nested_functions_see_enclosing_locals() {
        let src = "def outer(a):\n    b = 1\n    def inner():\n        return a + b + c\n    return inner\n";
        assert_eq!(free(src), ["c"]);
    }

    #[test]
    fn module_level_bindings_count() {
        assert_eq!(
            free("X = 1\ntry:\n    import torch\nexcept ImportError:\n    torch = None\nY = X + torch.a + Z\n"),
            ["Z"]
        );
    }
}
