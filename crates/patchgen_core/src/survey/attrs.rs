//! `self.<attr>`: which attributes an `override_method` body reads, and
//! which attributes an upstream class provides — set on `self` in any of
//! its methods (`__init__` first of all, `register_buffer`,
//! `register_parameter`, `add_module` and `setattr` with a literal name
//! included) or bound in the class body (methods, class attributes,
//! annotations), along its bases.

use std::collections::BTreeMap;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprContext, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::modules::Lineage;
use patchgen_python::pysource::ParsedFile;

/// Reads and writes of `<receiver>.<attr>` in a function body.
struct SelfAttrs<'n> {
    receiver: &'n str,
    reads: BTreeMap<String, TextSize>,
    writes: BTreeMap<String, TextSize>,
}

/// Calls that create an attribute named by their first argument.
const REGISTERING_METHODS: &[&str] = &["register_buffer", "register_parameter", "add_module", "register_module"];

fn string_arg(call: &ruff_python_ast::ExprCall, index: usize) -> Option<String> {
    match call.arguments.args.get(index)? {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        _ => None,
    }
}

impl SelfAttrs<'_> {
    fn is_receiver(&self, expr: &Expr) -> bool {
        matches!(expr, Expr::Name(n) if n.id.as_str() == self.receiver)
    }
}

impl<'a> Visitor<'a> for SelfAttrs<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Attribute(a) if self.is_receiver(&a.value) => {
                let map = if a.ctx == ExprContext::Load { &mut self.reads } else { &mut self.writes };
                map.entry(a.attr.id.to_string()).or_insert(a.start());
            }
            Expr::Call(call) => {
                let created = match &*call.func {
                    Expr::Attribute(a)
                        if self.is_receiver(&a.value) && REGISTERING_METHODS.contains(&a.attr.id.as_str()) =>
                    {
                        string_arg(call, 0)
                    }
                    Expr::Name(n)
                        if n.id.as_str() == "setattr"
                            && call.arguments.args.first().is_some_and(|r| self.is_receiver(r)) =>
                    {
                        string_arg(call, 1)
                    }
                    _ => None,
                };
                if let Some(name) = created {
                    self.writes.entry(name).or_insert(call.start());
                }
                visitor::walk_expr(self, expr);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// The name of a method's first parameter (`self`), if it has one.
fn receiver(f: &StmtFunctionDef) -> Option<&str> {
    f.parameters.posonlyargs.iter().chain(&f.parameters.args).next().map(|p| p.parameter.name.id.as_str())
}

fn scan(f: &StmtFunctionDef) -> Option<SelfAttrs<'_>> {
    let receiver = receiver(f)?;
    let mut v = SelfAttrs { receiver, reads: BTreeMap::new(), writes: BTreeMap::new() };
    v.visit_body(&f.body);
    Some(v)
}

/// What a method body does with its receiver's attributes.
#[derive(Default)]
pub struct MethodAttrs {
    /// Read and never assigned by the body itself, with where (offset).
    pub reads: BTreeMap<String, TextSize>,
    pub writes: BTreeMap<String, TextSize>,
}

/// `self.<attr>` use of the first function in a replacement's source.
pub fn of_replacement(body: &[Stmt]) -> MethodAttrs {
    let Some(f) = body.iter().find_map(|s| if let Stmt::FunctionDef(f) = s { Some(f) } else { None }) else {
        return MethodAttrs::default();
    };
    of_function(f)
}

/// `self.<attr>` use of one method: its reads (of attributes it does not
/// assign itself) and writes.
pub fn of_function(f: &StmtFunctionDef) -> MethodAttrs {
    let Some(v) = scan(f) else {
        return MethodAttrs::default();
    };
    let mut reads = v.reads;
    reads.retain(|name, _| !v.writes.contains_key(name));
    MethodAttrs { reads, writes: v.writes }
}

/// Where an attribute a class provides is defined: `(class, line)`.
pub type Provided = BTreeMap<String, (String, usize)>;

/// Every attribute the classes of `lineage` provide; the nearest class wins.
pub fn provided(lineage: &Lineage) -> Provided {
    let mut out = Provided::new();
    for class in &lineage.classes {
        provided_by(class.def(), &class.file, &mut out);
    }
    out
}

/// Add what one class provides (bound in its body, set on `self` in its
/// methods) to `out`, where not there yet; `file` holds the class.
pub fn provided_by(class: &StmtClassDef, file: &ParsedFile, out: &mut Provided) {
    let owner = class.name.id.to_string();
    let mut add = |name: String, at: TextSize| {
        out.entry(name).or_insert_with(|| (owner.clone(), file.line_of(at)));
    };
    for b in patchgen_python::pysource::names::bindings(&class.body) {
        add(b.name.to_string(), b.node.start());
    }
    for stmt in &class.body {
        let Stmt::FunctionDef(f) = stmt else { continue };
        if let Some(v) = scan(f) {
            for (name, at) in v.writes {
                add(name, at);
            }
        }
    }
}

/// Whether a class's attributes cannot be listed: it defines
/// `__getattr__`/`__getattribute__`, or sets attributes on `self` under
/// computed names (`setattr(self, name, …)`, `self.__dict__`).
pub fn is_dynamic(class: &StmtClassDef) -> bool {
    class.body.iter().any(|s| match s {
        Stmt::FunctionDef(f) => {
            matches!(f.name.id.as_str(), "__getattr__" | "__getattribute__") || {
                let Some(receiver) = receiver(f) else { return false };
                let mut d = Dynamic { receiver, found: false };
                d.visit_body(&f.body);
                d.found
            }
        }
        _ => false,
    })
}

struct Dynamic<'n> {
    receiver: &'n str,
    found: bool,
}

impl<'a> Visitor<'a> for Dynamic<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        let is_receiver = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == self.receiver);
        match expr {
            Expr::Call(call)
                if matches!(&*call.func, Expr::Name(n) if n.id.as_str() == "setattr")
                    && call.arguments.args.first().is_some_and(is_receiver)
                    && string_arg(call, 1).is_none() =>
            {
                self.found = true;
            }
            Expr::Attribute(a) if is_receiver(&a.value) && a.attr.id.as_str() == "__dict__" => self.found = true,
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// The sub-modules a class always builds: `self.<attr> = <Class>(…)` as
/// a statement of a method's body itself (not under an `if`, `try`, …),
/// as `(attr, class name)` (the callee's last name), first assignment of
/// each attribute.
pub fn submodules(class: &StmtClassDef) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for stmt in &class.body {
        let Stmt::FunctionDef(f) = stmt else { continue };
        let Some(receiver) = receiver(f) else { continue };
        let assigns = f.body.iter().filter_map(|s| if let Stmt::Assign(a) = s { Some(a) } else { None });
        for a in assigns {
            let Expr::Call(call) = &*a.value else { continue };
            let callee = match &*call.func {
                Expr::Name(n) => n.id.to_string(),
                Expr::Attribute(at) => at.attr.id.to_string(),
                _ => continue,
            };
            for t in &a.targets {
                if let Expr::Attribute(at) = t
                    && matches!(&*at.value, Expr::Name(n) if n.id.as_str() == receiver)
                    && !out.iter().any(|(name, _)| name == at.attr.id.as_str())
                {
                    out.push((at.attr.id.to_string(), callee.clone()));
                }
            }
        }
    }
    out
}

/// Every read `<receiver>.<name>` in a method's body: the ranges of the
/// attribute names (what a rename replaces).
pub fn loads_of(f: &StmtFunctionDef, name: &str) -> Vec<ruff_text_size::TextRange> {
    struct Loads<'n> {
        receiver: &'n str,
        name: &'n str,
        out: Vec<ruff_text_size::TextRange>,
    }
    impl<'a> Visitor<'a> for Loads<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Attribute(a) = expr
                && a.ctx == ExprContext::Load
                && a.attr.id.as_str() == self.name
                && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == self.receiver)
            {
                self.out.push(a.attr.range());
            }
            visitor::walk_expr(self, expr);
        }
    }
    let Some(receiver) = receiver(f) else { return Vec::new() };
    let mut v = Loads { receiver, name, out: Vec::new() };
    v.visit_body(&f.body);
    v.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_exclude_what_the_body_assigns() {
        let src = "def forward(self, x):\n    self.cache = x\n    y = self.proj(x) + self.cache\n    self.register_buffer('buf', y)\n    return self.norm(y)\n";
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let a = of_replacement(&parsed.syntax().body);
        assert_eq!(a.reads.keys().collect::<Vec<_>>(), ["norm", "proj", "register_buffer"]);
        assert_eq!(a.writes.keys().collect::<Vec<_>>(), ["buf", "cache"]);
    }
}
