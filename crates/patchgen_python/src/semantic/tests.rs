//! The walk's scopes and the node facts on small sources (what Python's
//! `ast` says of them: the statement kinds, the `Load` names, the
//! docstring `ast.get_docstring(clean=False)` returns).

use ruff_python_ast::{Expr, Stmt};

use super::facts::{Loads, docstring, dotted, loaded_names, one_target_assignment};
use super::walk::{self, Scope};

fn body(src: &str) -> Vec<Stmt> {
    ruff_python_parser::parse_module(src).expect("parses").into_syntax().body.into_iter().collect()
}

#[test]
fn own_scope_stops_at_nested_definitions() {
    let b = body("for x in y:\n    a = 1\nelse:\n    def f():\n        b = 2\n    class C:\n        c = 3\n");
    let kinds = |scope| -> Vec<&'static str> {
        walk::statements(&b, scope)
            .into_iter()
            .map(|s| match s {
                Stmt::For(_) => "for",
                Stmt::Assign(_) => "assign",
                Stmt::FunctionDef(_) => "def",
                Stmt::ClassDef(_) => "class",
                _ => "other",
            })
            .collect()
    };
    assert_eq!(kinds(Scope::Own), ["for", "assign", "def", "class"]);
    assert_eq!(kinds(Scope::All), ["for", "assign", "def", "assign", "class", "assign"]);
}

#[test]
fn own_scope_expressions_skip_definitions_whole() {
    let b = body("@deco\ndef f(a=default):\n    inner\nx = outer\n");
    let names = |scope| -> Vec<String> {
        walk::expressions(&b, scope)
            .into_iter()
            .filter_map(|e| if let Expr::Name(n) = e { Some(n.id.to_string()) } else { None })
            .collect()
    };
    assert_eq!(names(Scope::Own), ["outer", "x"]);
    assert_eq!(names(Scope::All), ["deco", "default", "inner", "outer", "x"]);
}

#[test]
fn dotted_names() {
    let b = body("a.b.c\nf().x\n");
    let Stmt::Expr(first) = &b[0] else { panic!() };
    let Stmt::Expr(second) = &b[1] else { panic!() };
    assert_eq!(dotted(&first.value).as_deref(), Some("a.b.c"));
    assert_eq!(dotted(&second.value), None);
}

#[test]
fn docstrings_are_plain_first_strings() {
    assert_eq!(docstring(&body("'''Doc.'''\nx = 1\n")), Some("Doc."));
    assert_eq!(docstring(&body("x = 1\n'''Not a doc.'''\n")), None);
    assert_eq!(docstring(&body("f'{x}'\n")), None);
}

#[test]
fn loaded_names_when_run_and_anywhere() {
    let b = body("@deco(a)\ndef f(x=d):\n    return inner\nclass C(Base):\n    y = z\nv = w + w\n");
    assert_eq!(loaded_names(&b, Loads::WhenRun), ["deco", "a", "Base", "z", "w"]);
    assert_eq!(loaded_names(&b, Loads::Anywhere), ["deco", "a", "d", "inner", "Base", "z", "w"]);
}

#[test]
fn one_target_assignments() {
    let b = body("a = 1\na: int = 2\na = b = 3\na: int\na += 4\n");
    let targets: Vec<bool> = b.iter().map(|s| one_target_assignment(s).is_some()).collect();
    assert_eq!(targets, [true, true, false, false, false]);
}
