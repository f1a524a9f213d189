//! The test tables of a Python test file, found structurally (no table
//! name or shape is known in advance): a module-level `NAME = [...]` (or a
//! tuple) whose elements are all calls (`pytest.param(...)`, `Case(...)`)
//! or tuples, and that a test takes through
//! `@pytest.mark.parametrize(argnames, NAME, ...)`. For each table: the test functions that take it through
//! `@pytest.mark.parametrize(argnames, NAME, ...)`, the names of its
//! positional slots (the parametrize argnames, or the fields of the
//! dataclass the rows construct), and where each row's pytest id comes
//! from (`id=`, an `ids=[c.<field> for c in NAME]` comprehension, or the
//! first string of the row, which starts pytest's generated id).

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use patchgen_python::semantic::facts;

/// A table: a module-level display of rows.
pub struct Table<'a> {
    pub name: String,
    pub rows: Vec<Row<'a>>,
    /// The functions parametrized with the table.
    pub tests: Vec<String>,
    /// The name of each positional slot, when known.
    pub slots: Vec<String>,
    /// How pytest names a row of this table.
    pub id_source: IdSource,
}

/// Where a row's pytest id comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdSource {
    /// `pytest.param(..., id="x")`, else the generated id, which starts with
    /// the first argument's string.
    ParamId,
    /// `ids=[c.<field> for c in TABLE]`: the row's `<field>` (its position
    /// among the dataclass fields, or the keyword).
    Field { name: String, position: Option<usize> },
    /// The generated id: the first string starts it.
    Generated,
}

/// One row of a table and its arguments.
pub struct Row<'a> {
    pub expr: &'a Expr,
    pub args: Vec<Arg<'a>>,
    /// `pytest.param(...)`.
    pub is_param: bool,
}

/// A positional or keyword argument of a row.
pub struct Arg<'a> {
    pub key: SlotKey,
    pub value: &'a Expr,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SlotKey {
    Pos(usize),
    Kw(String),
}

impl Row<'_> {
    pub fn range(&self) -> TextRange {
        self.expr.range()
    }

    /// The value of the slot named `name` (keyword, or positional by the table's slot names).
    pub fn slot<'s>(&'s self, name: &str, slots: &[String]) -> Option<&'s Arg<'s>> {
        let pos = slots.iter().position(|s| s == name);
        self.args.iter().find(|a| match &a.key {
            SlotKey::Kw(k) => k == name,
            SlotKey::Pos(i) => Some(*i) == pos,
        })
    }

    /// The row's pytest id (or the part of the generated one `-k` can use).
    pub fn id<'s>(&'s self, table: &Table<'_>) -> Option<(&'s Arg<'s>, String)> {
        let string = |a: &'s Arg<'s>| str_value(a.value).map(|s| (a, s));
        match &table.id_source {
            IdSource::Field { name, position } => self
                .args
                .iter()
                .find(|a| match &a.key {
                    SlotKey::Kw(k) => k == name,
                    SlotKey::Pos(i) => Some(*i) == *position,
                })
                .and_then(string),
            IdSource::ParamId | IdSource::Generated => {
                if self.is_param
                    && let Some(a) = self.args.iter().find(|a| a.key == SlotKey::Kw("id".into()))
                {
                    return string(a);
                }
                self.args
                    .iter()
                    .find(|a| matches!(a.key, SlotKey::Pos(_)) && str_value(a.value).is_some())
                    .and_then(string)
            }
        }
    }
}

/// The value of a single-part string literal.
pub fn str_value(e: &Expr) -> Option<String> {
    match e {
        Expr::StringLiteral(s) if !s.value.is_implicit_concatenated() => Some(s.value.to_str().to_string()),
        _ => None,
    }
}

fn is_pytest_param(func: &Expr) -> bool {
    matches!(func, Expr::Attribute(a) if a.attr.as_str() == "param"
        && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "pytest"))
}

fn callee_name(func: &Expr) -> Option<&str> {
    match func {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        _ => None,
    }
}

fn row(e: &Expr) -> Option<Row<'_>> {
    match e {
        Expr::Call(c) => {
            let mut args: Vec<Arg<'_>> =
                c.arguments.args.iter().enumerate().map(|(i, v)| Arg { key: SlotKey::Pos(i), value: v }).collect();
            for k in c.arguments.keywords.iter() {
                let name = k.arg.as_ref()?.as_str().to_string();
                args.push(Arg { key: SlotKey::Kw(name), value: &k.value });
            }
            Some(Row { expr: e, args, is_param: is_pytest_param(&c.func) })
        }
        Expr::Tuple(t) => Some(Row {
            expr: e,
            args: t.elts.iter().enumerate().map(|(i, v)| Arg { key: SlotKey::Pos(i), value: v }).collect(),
            is_param: false,
        }),
        _ => None,
    }
}

/// The elements of a list or tuple display.
fn display(e: &Expr) -> Option<&[Expr]> {
    match e {
        Expr::List(l) => Some(&l.elts),
        Expr::Tuple(t) => Some(&t.elts),
        _ => None,
    }
}

/// `"a, b"` / `["a", "b"]` argnames.
fn argnames(e: &Expr) -> Vec<String> {
    if let Some(s) = str_value(e) {
        return s.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
    }
    display(e).map(|els| els.iter().filter_map(str_value).collect()).unwrap_or_default()
}

/// `@pytest.mark.parametrize(argnames, TABLE, ids=...)` decorators of a
/// function: (argnames, table name, the `ids=` comprehension's attribute).
fn parametrizations(stmt: &Stmt) -> Vec<(String, Vec<String>, String, Option<String>)> {
    let Stmt::FunctionDef(f) = stmt else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in &f.decorator_list {
        let Expr::Call(c) = &d.expression else { continue };
        if callee_name(&c.func) != Some("parametrize") {
            continue;
        }
        let args = &c.arguments.args;
        let (Some(names), Some(Expr::Name(table))) = (args.first(), args.get(1)) else { continue };
        let ids_attr = c.arguments.find_keyword("ids").and_then(|k| match &k.value {
            Expr::ListComp(lc) => match &*lc.elt {
                Expr::Attribute(a) => Some(a.attr.as_str().to_string()),
                _ => None,
            },
            _ => None,
        });
        out.push((f.name.as_str().to_string(), argnames(names), table.id.as_str().to_string(), ids_attr));
    }
    out
}

/// The annotated fields of a module-level class (a dataclass), in order.
fn class_fields(body: &[Stmt], name: &str) -> Option<Vec<String>> {
    body.iter().find_map(|s| match s {
        Stmt::ClassDef(c) if c.name.as_str() == name => Some(
            c.body
                .iter()
                .filter_map(|s| match s {
                    Stmt::AnnAssign(a) => match &*a.target {
                        Expr::Name(n) => Some(n.id.as_str().to_string()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}

/// The names bound at module level by plain assignments.
pub fn module_names(body: &[Stmt]) -> Vec<String> {
    let mut out = Vec::new();
    for s in body {
        let targets: Vec<&Expr> = match s {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AnnAssign(a) => vec![&*a.target],
            _ => continue,
        };
        for t in targets {
            if let Expr::Name(n) = t {
                out.push(n.id.as_str().to_string());
            }
        }
    }
    out
}

/// The tables of a module.
pub fn tables(body: &[Stmt]) -> Vec<Table<'_>> {
    let params: Vec<_> = body.iter().flat_map(parametrizations).collect();
    let mut out = Vec::new();
    for s in body {
        let Some((target, value)) = facts::one_target_assignment(s) else { continue };
        let Expr::Name(name) = target else { continue };
        let Some(elts) = display(value) else { continue };
        if elts.is_empty() {
            continue;
        }
        let Some(rows) = elts.iter().map(row).collect::<Option<Vec<_>>>() else {
            continue;
        };
        let name = name.id.as_str().to_string();
        let uses: Vec<_> = params.iter().filter(|p| p.2 == name).collect();
        // A test table is what a test is parametrized with.
        if uses.is_empty() {
            continue;
        }
        let tests = uses.iter().map(|p| p.0.clone()).collect();
        // Slot names: the dataclass's fields when the rows construct one,
        // else the parametrize argnames.
        let dataclass = rows.iter().find_map(|r| match r.expr {
            Expr::Call(c) if !r.is_param => callee_name(&c.func).and_then(|n| class_fields(body, n)),
            _ => None,
        });
        let slots = dataclass.clone().or_else(|| uses.first().map(|p| p.1.clone())).unwrap_or_default();
        let id_source = match uses.iter().find_map(|p| p.3.clone()) {
            Some(field) => {
                let position = dataclass.as_ref().and_then(|f| f.iter().position(|x| *x == field));
                IdSource::Field { name: field, position }
            }
            None if rows.iter().any(|r| r.is_param) => IdSource::ParamId,
            None => IdSource::Generated,
        };
        out.push(Table { name, rows, tests, slots, id_source });
    }
    out
}

/// Every single-part string literal inside `e`, with its range.
pub fn strings(e: &Expr) -> Vec<(TextRange, String)> {
    use ruff_python_ast::visitor::{self, Visitor};
    struct V(Vec<(TextRange, String)>);
    impl<'a> Visitor<'a> for V {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Some(s) = str_value(expr) {
                self.0.push((expr.range(), s));
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut v = V(Vec::new());
    v.visit_expr(e);
    v.0
}

/// Identifiers with their ranges: every `Name`, and with `defs` also the
/// names of the functions and classes a statement defines.
struct Identifiers {
    out: Vec<(TextRange, String)>,
    defs: bool,
}

impl<'a> ruff_python_ast::visitor::Visitor<'a> for Identifiers {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr {
            self.out.push((expr.range(), n.id.as_str().to_string()));
        }
        ruff_python_ast::visitor::walk_expr(self, expr);
    }
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.defs {
            match stmt {
                Stmt::FunctionDef(f) => self.out.push((f.name.range(), f.name.as_str().to_string())),
                Stmt::ClassDef(c) => self.out.push((c.name.range(), c.name.as_str().to_string())),
                _ => {}
            }
        }
        ruff_python_ast::visitor::walk_stmt(self, stmt);
    }
}

/// Every identifier (`Name`) inside `e`, with its range.
pub fn names(e: &Expr) -> Vec<(TextRange, String)> {
    use ruff_python_ast::visitor::Visitor;
    let mut v = Identifiers { out: Vec::new(), defs: false };
    v.visit_expr(e);
    v.out
}

/// Every identifier of a statement with its range: its `Name`s, and with
/// `defs` the names of the functions and classes it defines.
pub fn stmt_identifiers(stmt: &Stmt, defs: bool) -> Vec<(TextRange, String)> {
    use ruff_python_ast::visitor::Visitor;
    let mut v = Identifiers { out: Vec::new(), defs };
    v.visit_stmt(stmt);
    v.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> ruff_python_parser::Parsed<ruff_python_ast::ModModule> {
        ruff_python_parser::parse_module(src).unwrap()
    }

    #[test]
    fn finds_param_case_and_tuple_tables() {
        let src = r#"
from dataclasses import dataclass
import pytest

@dataclass
class Case:
    case_id: str
    arch: str
    kind: str = "x"

CASES = [Case("a-eager", "A", "k"), Case(case_id="b", arch="B")]
P = [pytest.param("./t/a_toy", False, id="a")]
T = [("a", 1), ("b", 2)]
NOT = ["a", "b"]
UNUSED = [("a", 1)]

@pytest.mark.parametrize("case", CASES, ids=[c.case_id for c in CASES])
def test_case(case): ...

@pytest.mark.parametrize("config_path, is_moe", P)
def test_p(config_path, is_moe): ...

@pytest.mark.parametrize(("name", "n"), T)
def test_t(name, n): ...
"#;
        let parsed = parse(src);
        let t = tables(&parsed.syntax().body);
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["CASES", "P", "T"]);
        assert_eq!(t[0].slots, ["case_id", "arch", "kind"]);
        assert_eq!(t[0].id_source, IdSource::Field { name: "case_id".into(), position: Some(0) });
        assert_eq!(t[0].rows[1].id(&t[0]).unwrap().1, "b");
        assert_eq!(t[1].slots, ["config_path", "is_moe"]);
        assert_eq!(t[1].rows[0].id(&t[1]).unwrap().1, "a");
        assert_eq!(t[1].tests, ["test_p"]);
        assert_eq!(t[2].slots, ["name", "n"]);
        assert_eq!(t[2].rows[1].id(&t[2]).unwrap().1, "b");
    }
}
