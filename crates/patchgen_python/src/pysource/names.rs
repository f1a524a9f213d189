//! Names, statically, with Python's scoping: which names a scope's
//! statements bind (the one binding visitor every layer uses), and which
//! global names a piece of code reads (its free names, as pyflakes' F821
//! sees them: parameters, function locals, comprehension variables, class
//! bodies, lambdas, string annotations).
//!
//! [`bindings`] reproduces CPython's symbol table for one scope: a name is
//! bound when `symtable` marks it assigned or imported (assignment, augmented
//! and annotated targets, `for`/`with`/`except`/`match` targets, `del`,
//! `def`/`class` names, imports, walrus targets, including those inside a
//! comprehension, which bind in the enclosing scope). Nested scopes
//! (function and class bodies, lambdas, comprehensions) bind their own
//! names; what the enclosing scope evaluates for them (decorators, default
//! values, annotations, base classes, a comprehension's first iterable) is
//! searched. `global`/`nonlocal` declarations are reported too, as
//! [`BindingKind::Declaration`]: Python does not count them as local
//! bindings ([`Binding::is_local`] is false), pyflakes does count them as
//! defining the name. `tests/name_bindings.rs` checks this against
//! python3's `symtable` on generated modules and on transformers' own.
//!
//! Why there was once two answers: the config reader wanted "what may this
//! unevaluated statement bind" and walked everything but function bodies
//! (so names inside class bodies and comprehensions leaked out, and `match`
//! captures were missed); the survey wanted one scope exactly but missed
//! walrus targets in comprehensions, decorators and defaults. Both now ask
//! [`bindings`].

use std::collections::{BTreeMap, HashSet};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Comprehension, Expr, ExprContext, Parameters, Pattern, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

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

/// How a statement binds a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// An assignment target (plain, augmented, annotated, `for`, `with`,
    /// walrus, `type X = …`).
    Assignment,
    /// `del name` (a local binding for the symbol table).
    Deletion,
    Import,
    FunctionDef,
    ClassDef,
    /// `except … as name`.
    ExceptHandler,
    /// A capture in a `match` pattern.
    MatchCapture,
    /// `global name` / `nonlocal name`.
    Declaration,
}

/// One name bound by a statement of a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding<'a> {
    pub name: &'a str,
    pub kind: BindingKind,
    /// Where the name itself is written (`a` of `import a.b`).
    pub range: TextRange,
    /// The node that binds it: the statement for `def`, `class`, imports and
    /// declarations, the handler for `except`, the pattern for a capture,
    /// the name expression otherwise.
    pub node: TextRange,
}

impl Binding<'_> {
    /// Python's view: the name is local to the scope (a declaration is not).
    pub fn is_local(&self) -> bool {
        self.kind != BindingKind::Declaration
    }
}

/// Every name bound directly in the scope whose statements are `body`, in
/// the order Python binds them (source order, but a comprehension's
/// conditions before its element); a name bound twice appears twice.
pub fn bindings(body: &[Stmt]) -> Vec<Binding<'_>> {
    let mut b = Binder::default();
    b.visit_body(body);
    b.found
}

/// The names `stmt` binds in its scope, declarations left out, first
/// occurrence of each kept.
pub fn bound_names(stmt: &Stmt) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for b in bindings(std::slice::from_ref(stmt)) {
        if b.is_local() && !out.contains(&b.name) {
            out.push(b.name);
        }
    }
    out
}

/// The names an assignment target (`a`, `(a, b)`, `[*a, b]`, a `for` or
/// comprehension target) binds; attributes and subscripts bind none.
pub fn target_names(target: &Expr) -> Vec<&str> {
    let mut b = Binder::default();
    b.visit_expr(target);
    b.found.into_iter().map(|b| b.name).collect()
}

/// A comprehension's generators and the expressions its items are built
/// from (a dict comprehension's key, then value).
fn comprehension_parts(expr: &Expr) -> Option<(&[Comprehension], Vec<&Expr>)> {
    Some(match expr {
        Expr::ListComp(c) => (&c.generators, vec![&*c.elt]),
        Expr::SetComp(c) => (&c.generators, vec![&*c.elt]),
        Expr::Generator(c) => (&c.generators, vec![&*c.elt]),
        Expr::DictComp(c) => (&c.generators, c.key.as_deref().into_iter().chain([&*c.value]).collect()),
        _ => return None,
    })
}

/// What a comprehension evaluates in its own scope, in the order Python
/// does: each clause's iterable (but the first's) and conditions, then the
/// elements.
fn comprehension_scope<'a>(generators: &'a [Comprehension], elts: &[&'a Expr]) -> impl Iterator<Item = &'a Expr> {
    let clauses = generators.iter().enumerate().flat_map(|(i, g)| (i > 0).then_some(&g.iter).into_iter().chain(&g.ifs));
    clauses.chain(elts.to_vec())
}

#[derive(Default)]
struct Binder<'a> {
    found: Vec<Binding<'a>>,
    /// Inside a comprehension: its own targets bind there, walrus targets
    /// bind here.
    in_comprehension: bool,
}

impl<'a> Binder<'a> {
    fn bind(&mut self, name: &'a str, kind: BindingKind, range: TextRange, node: TextRange) {
        self.found.push(Binding { name, kind, range, node });
    }

    /// What the enclosing scope evaluates of a function's parameters.
    fn parameters(&mut self, parameters: &'a Parameters, annotations: bool) {
        for p in parameters.iter_non_variadic_params() {
            if let Some(d) = &p.default {
                self.visit_expr(d);
            }
        }
        if annotations {
            for p in parameters.iter() {
                if let Some(a) = p.annotation() {
                    self.visit_expr(a);
                }
            }
        }
    }

    fn comprehension(&mut self, generators: &'a [Comprehension], elts: &[&'a Expr]) {
        let Some(first) = generators.first() else { return };
        // The first iterable is evaluated in the enclosing scope.
        self.visit_expr(&first.iter);
        let was = std::mem::replace(&mut self.in_comprehension, true);
        for e in comprehension_scope(generators, elts) {
            self.visit_expr(e);
        }
        self.in_comprehension = was;
    }
}

impl<'a> Visitor<'a> for Binder<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                for d in &f.decorator_list {
                    self.visit_expr(&d.expression);
                }
                self.parameters(&f.parameters, true);
                if let Some(r) = &f.returns {
                    self.visit_expr(r);
                }
                self.bind(&f.name.id, BindingKind::FunctionDef, f.name.range(), stmt.range());
            }
            Stmt::ClassDef(c) => {
                for d in &c.decorator_list {
                    self.visit_expr(&d.expression);
                }
                if let Some(args) = &c.arguments {
                    self.visit_arguments(args);
                }
                self.bind(&c.name.id, BindingKind::ClassDef, c.name.range(), stmt.range());
            }
            Stmt::Import(i) => {
                for a in &i.names {
                    match &a.asname {
                        Some(n) => self.bind(&n.id, BindingKind::Import, n.range(), stmt.range()),
                        None => {
                            let top = a.name.id.split('.').next().unwrap_or_default();
                            let range = TextRange::at(a.name.start(), TextSize::of(top));
                            self.bind(top, BindingKind::Import, range, stmt.range());
                        }
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                for a in &i.names {
                    if a.name.id.as_str() != "*" {
                        let n = a.asname.as_ref().unwrap_or(&a.name);
                        self.bind(&n.id, BindingKind::Import, n.range(), stmt.range());
                    }
                }
            }
            Stmt::Global(g) => {
                g.names.iter().for_each(|n| self.bind(&n.id, BindingKind::Declaration, n.range(), stmt.range()))
            }
            Stmt::Nonlocal(g) => {
                g.names.iter().for_each(|n| self.bind(&n.id, BindingKind::Declaration, n.range(), stmt.range()))
            }
            Stmt::TypeAlias(t) => {
                // The value and type parameters live in scopes of their own.
                self.visit_expr(&t.name);
            }
            Stmt::Try(t) => {
                self.visit_body(&t.body);
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(e) = &h.type_ {
                        self.visit_expr(e);
                    }
                    if let Some(n) = &h.name {
                        self.bind(&n.id, BindingKind::ExceptHandler, n.range(), h.range());
                    }
                    self.visit_body(&h.body);
                }
                self.visit_body(&t.orelse);
                self.visit_body(&t.finalbody);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(n) if !self.in_comprehension => match n.ctx {
                ExprContext::Store => self.bind(&n.id, BindingKind::Assignment, n.range(), n.range()),
                ExprContext::Del => self.bind(&n.id, BindingKind::Deletion, n.range(), n.range()),
                ExprContext::Load | ExprContext::Invalid => {}
            },
            Expr::Named(w) if self.in_comprehension => {
                // PEP 572: a walrus in a comprehension binds in the enclosing scope.
                if let Expr::Name(n) = &*w.target {
                    self.bind(&n.id, BindingKind::Assignment, n.range(), n.range());
                }
                self.visit_expr(&w.value);
            }
            Expr::Lambda(l) => {
                if let Some(p) = &l.parameters {
                    self.parameters(p, false);
                }
            }
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::Generator(_) | Expr::DictComp(_) => {
                if let Some((generators, elts)) = comprehension_parts(expr) {
                    self.comprehension(generators, &elts);
                }
            }
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        let capture = match pattern {
            Pattern::MatchAs(p) => p.name.as_ref(),
            Pattern::MatchStar(p) => p.name.as_ref(),
            Pattern::MatchMapping(p) => p.rest.as_ref(),
            _ => None,
        };
        visitor::walk_pattern(self, pattern);
        if let Some(n) = capture {
            self.bind(&n.id, BindingKind::MatchCapture, n.range(), pattern.range());
        }
    }
}

/// The names a scope defines, pyflakes-style (declarations included).
fn scope_names(body: &[Stmt]) -> impl Iterator<Item = String> + '_ {
    bindings(body).into_iter().map(|b| b.name.to_string())
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

    fn comprehension(&mut self, generators: &[Comprehension], elts: &[&Expr]) {
        let Some(first) = generators.first() else { return };
        self.visit_expr(&first.iter);
        let names = generators.iter().flat_map(|g| target_names(&g.target)).map(str::to_string).collect();
        self.with_scope(names, false, |me| {
            for e in comprehension_scope(generators, elts) {
                me.visit_expr(e);
            }
        });
    }
}

fn is_literal_subscript(expr: &Expr) -> bool {
    let Expr::Subscript(s) = expr else {
        return false;
    };
    crate::semantic::facts::dotted(&s.value).is_some_and(|n| n == "Literal" || n.ends_with(".Literal"))
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
                names.extend(scope_names(&f.body));
                self.with_scope(names, false, |me| me.visit_body(&f.body));
            }
            Stmt::ClassDef(c) => {
                for d in &c.decorator_list {
                    self.visit_expr(&d.expression);
                }
                if let Some(args) = &c.arguments {
                    self.visit_arguments(args);
                }
                let names = scope_names(&c.body).collect();
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
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::Generator(_) | Expr::DictComp(_) => {
                if let Some((generators, elts)) = comprehension_parts(expr) {
                    self.comprehension(generators, &elts);
                }
            }
            Expr::StringLiteral(s) if self.in_annotation => {
                // A forward reference: its names are read when annotations are resolved.
                if let Ok(parsed) = ruff_python_parser::parse_expression(s.value.to_str().trim()) {
                    let at = s.start();
                    let mut inner =
                        FreeNames { scopes: std::mem::take(&mut self.scopes), uses: Vec::new(), in_annotation: true };
                    inner.visit_expr(parsed.expr());
                    self.scopes = inner.scopes;
                    self.uses.extend(inner.uses.into_iter().map(|(name, _)| (name, at)));
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

/// Every name the visited nodes read (`Load` context), first use each, in
/// order, whatever the scope (no binding analysis: what a copied
/// definition's text mentions). Visit statements or expressions with it.
#[derive(Default)]
pub struct LoadedNames(pub Vec<String>);

impl<'a> ruff_python_ast::visitor::Visitor<'a> for LoadedNames {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr
            && n.ctx == ruff_python_ast::ExprContext::Load
            && !self.0.iter().any(|x| x == n.id.as_str())
        {
            self.0.push(n.id.to_string());
        }
        ruff_python_ast::visitor::walk_expr(self, expr);
    }
}

/// The global names `body` reads, with the offset of the first read.
/// Module-level bindings of `body` itself count as defined.
pub fn free_names(body: &[Stmt]) -> BTreeMap<String, TextSize> {
    let mut first = BTreeMap::new();
    for (name, at) in free_name_uses(body) {
        first.entry(name).or_insert(at);
    }
    first
}

/// Every read of a global name in `body` that nothing binds (module-level
/// bindings of `body` count as bound), with its offset, in visiting order:
/// what pyflakes reports as F821, one entry per use (a string annotation's
/// uses at the string).
pub fn free_name_uses(body: &[Stmt]) -> Vec<(String, TextSize)> {
    free_name_uses_in(body, |_| true)
}

/// [`free_name_uses`] of the top-level statements of `body` that `wanted`
/// selects (the whole module's bindings still count as bound).
pub fn free_name_uses_in(body: &[Stmt], wanted: impl Fn(&Stmt) -> bool) -> Vec<(String, TextSize)> {
    let module_names = scope_names(body).collect();
    let mut f = FreeNames {
        scopes: vec![Scope { names: module_names, is_class: false }],
        uses: Vec::new(),
        in_annotation: false,
    };
    for stmt in body.iter().filter(|s| wanted(s)) {
        f.visit_stmt(stmt);
    }
    f.uses
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(src: &str) -> Vec<(String, BindingKind)> {
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        bindings(&parsed.syntax().body).into_iter().map(|b| (b.name.to_string(), b.kind)).collect()
    }

    fn local_names(src: &str) -> Vec<String> {
        bound(src).into_iter().filter(|(_, k)| *k != BindingKind::Declaration).map(|(n, _)| n).collect()
    }

    // Expected values: what python3's `symtable` marks assigned or imported
    // (tests/name_bindings.rs checks the same on generated modules).
    #[test]
    fn nested_scopes_keep_their_names() {
        let src = "class A:\n    x = 1\ndef f(p):\n    y = 2\nz = [i for i in range(3)]\ng = lambda q: (w := q)\n";
        assert_eq!(local_names(src), ["A", "f", "z", "g"]);
    }

    #[test]
    fn walrus_targets_bind_where_python_binds_them() {
        let src = "@(d := deco)\ndef f(a=(b := 1)) -> (r := int):\n    pass\nclass C((base := object)):\n    pass\nys = [(y := i) for i in xs if (k := i)]\nh = lambda v=(lv := 1): v\n";
        assert_eq!(local_names(src), ["d", "b", "r", "f", "base", "C", "k", "y", "ys", "lv", "h"]);
    }

    #[test]
    fn every_binding_statement() {
        let src = "import a.b, c as d\nfrom e import f as g, h\nfrom i import *\nfor (j, *k) in l:\n    del m\nwith n as o.p, q as r:\n    pass\ntry:\n    pass\nexcept E as s:\n    pass\nmatch t:\n    case [u, *v] | {'w': w, **x} if (y := 1):\n        pass\n    case Z() as z:\n        pass\naa: int\nbb += 1\nglobal cc\n";
        let found = bound(src);
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["a", "d", "g", "h", "j", "k", "m", "r", "s", "u", "v", "w", "x", "y", "z", "aa", "bb", "cc"]
        );
        assert_eq!(found.last().unwrap().1, BindingKind::Declaration);
        assert_eq!(found[6].1, BindingKind::Deletion);
    }

    #[test]
    fn ranges_point_at_the_name() {
        let src = "import os.path\nfrom x import y as z\n";
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let found = bindings(&parsed.syntax().body);
        assert_eq!(&src[found[0].range], "os");
        assert_eq!(&src[found[0].node], "import os.path");
        assert_eq!(&src[found[1].range], "z");
        assert_eq!(bound_names(&parsed.syntax().body[1]), ["z"]);
    }

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
    fn every_use_is_listed_and_a_selection_keeps_module_bindings() {
        let src = "X = 1\ndef f():\n    return a + a + X\ndef g(p: \"b.c\"):\n    return a\n";
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let body = &parsed.syntax().body;
        let uses: Vec<(String, &str)> =
            free_name_uses(body).into_iter().map(|(n, at)| (n, &src[usize::from(at)..usize::from(at) + 1])).collect();
        let expected = [("a", "a"), ("a", "a"), ("b", "\""), ("a", "a")];
        assert_eq!(uses, expected.map(|(n, at)| (n.to_string(), at)));
        let in_g = free_name_uses_in(body, |s| matches!(s, Stmt::FunctionDef(f) if f.name.id.as_str() == "g"));
        assert_eq!(in_g.into_iter().map(|(n, _)| n).collect::<Vec<_>>(), ["b", "a"]);
    }

    #[test]
    fn module_level_bindings_count() {
        assert_eq!(
            free("X = 1\ntry:\n    import torch\nexcept ImportError:\n    torch = None\nY = X + torch.a + Z\n"),
            ["Z"]
        );
    }
}
