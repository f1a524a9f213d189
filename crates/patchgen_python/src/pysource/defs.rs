//! Lookups on a module's definitions, as Python's namespaces resolve them:
//! a top-level class or function by name (the last definition wins, as the
//! module namespace keeps it), a class's methods, and the entries of a
//! module's `__all__`.

use ruff_python_ast::{Expr, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};

/// The last top-level `class name` of `body`, with its index in `body`.
pub fn class<'a>(body: &'a [Stmt], name: &str) -> Option<(usize, &'a StmtClassDef)> {
    body.iter().enumerate().rev().find_map(|(i, s)| match s {
        Stmt::ClassDef(c) if c.name.id.as_str() == name => Some((i, c)),
        _ => None,
    })
}

/// The last `def name` directly in `body` (a module's top level, or a class
/// body: then it is the method Python keeps).
pub fn function<'a>(body: &'a [Stmt], name: &str) -> Option<&'a StmtFunctionDef> {
    body.iter().rev().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.id.as_str() == name => Some(f),
        _ => None,
    })
}

/// The functions defined directly in a class body, in source order (a
/// name defined twice appears twice; [`method`] gives the one kept).
pub fn methods(class: &StmtClassDef) -> impl Iterator<Item = &StmtFunctionDef> {
    class.body.iter().filter_map(|s| match s {
        Stmt::FunctionDef(f) => Some(f),
        _ => None,
    })
}

/// The method `name` of a class (the last `def name` of its body).
pub fn method<'a>(class: &'a StmtClassDef, name: &str) -> Option<&'a StmtFunctionDef> {
    function(&class.body, name)
}

/// A module's `__all__`, as far as it can be read without running it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DunderAll {
    /// Each string entry and where it is written, in order.
    pub entries: Vec<(String, TextRange)>,
    /// `false` when some part is not a literal (`__all__ = base + [...]`,
    /// a starred or computed element): the entries are then a subset.
    pub complete: bool,
}

impl DunderAll {
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }
}

/// The module-level `__all__` of `body`: `__all__ = [...]` (or a tuple,
/// annotated or not), then `__all__ += [...]`, `__all__.extend([...])` and
/// `__all__.append("x")`; `None` when the module never assigns it.
pub fn dunder_all(body: &[Stmt]) -> Option<DunderAll> {
    let mut all: Option<DunderAll> = None;
    let is_all = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == "__all__");
    for stmt in body {
        match stmt {
            Stmt::Assign(a) if a.targets.iter().any(is_all) => {
                all = Some(DunderAll { complete: true, ..DunderAll::default() });
                extend(all.as_mut(), &a.value);
            }
            Stmt::AnnAssign(a) if is_all(&a.target) => {
                if let Some(value) = &a.value {
                    all = Some(DunderAll { complete: true, ..DunderAll::default() });
                    extend(all.as_mut(), value);
                }
            }
            Stmt::AugAssign(a) if is_all(&a.target) => extend(all.as_mut(), &a.value),
            Stmt::Expr(e) => {
                let Expr::Call(call) = &*e.value else {
                    continue;
                };
                let Expr::Attribute(attr) = &*call.func else {
                    continue;
                };
                if !is_all(&attr.value) {
                    continue;
                }
                match (attr.attr.id.as_str(), &call.arguments.args[..]) {
                    ("extend", [arg]) => extend(all.as_mut(), arg),
                    ("append", [arg]) => extend_one(all.as_mut(), arg),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    all
}

fn extend(all: Option<&mut DunderAll>, value: &Expr) {
    let Some(all) = all else { return };
    let elts = match value {
        Expr::List(l) => &l.elts,
        Expr::Tuple(t) => &t.elts,
        _ => {
            all.complete = false;
            return;
        }
    };
    for e in elts {
        extend_one(Some(all), e);
    }
}

fn extend_one(all: Option<&mut DunderAll>, e: &Expr) {
    let Some(all) = all else { return };
    match e {
        Expr::StringLiteral(s) => all.entries.push((s.value.to_str().to_string(), s.range())),
        _ => all.complete = false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> ruff_python_parser::Parsed<ruff_python_ast::ModModule> {
        ruff_python_parser::parse_module(src).unwrap()
    }

    #[test]
    fn the_last_definition_wins() {
        let p = parse(
            "class A:\n    def f(self): return 1\n    def g(self): pass\n    def f(self): return 2\nclass A: pass\ndef h(): pass\n",
        );
        let body = &p.syntax().body;
        let (index, a) = class(body, "A").unwrap();
        assert_eq!(index, 1);
        assert!(a.body.len() == 1 && method(a, "f").is_none());
        let Stmt::ClassDef(first) = &body[0] else { unreachable!() };
        assert_eq!(methods(first).map(|f| f.name.id.as_str()).collect::<Vec<_>>(), ["f", "g", "f"]);
        assert_eq!(method(first, "f").unwrap().range(), methods(first).nth(2).unwrap().range());
        assert!(function(body, "h").is_some() && function(body, "A").is_none());
    }

    #[test]
    fn dunder_all_entries() {
        let src = "__all__ = ['A', \"B\"]\n__all__ += ('C',)\n__all__.extend(['D'])\n__all__.append('E')\n";
        let all = dunder_all(&parse(src).syntax().body).unwrap();
        assert_eq!(all.names().collect::<Vec<_>>(), ["A", "B", "C", "D", "E"]);
        assert!(all.complete);
        let (_, range) = &all.entries[1];
        assert_eq!(&src[*range], "\"B\"");

        let partial = dunder_all(&parse("__all__ = ['A', *more]\n").syntax().body).unwrap();
        assert_eq!((partial.names().collect::<Vec<_>>(), partial.complete), (vec!["A"], false));
        assert_eq!(dunder_all(&parse("x = ['A']\n").syntax().body), None);
    }
}
