//! The shared Python-source layer (`pysource`) against python3.
//!
//! The binding visitor (`pysource::names::bindings`) against python3's own
//! symbol table: for every module, function and class scope of a module,
//! the names `symtable` marks assigned or imported must be exactly the
//! local bindings we find, and its `global`/`nonlocal` names exactly our
//! declarations (in function and class scopes: a module's table also lists
//! the names declared `global` in its functions). Over generated modules (every binding construct, walrus
//! targets in comprehensions, decorators, defaults, lambdas and bases,
//! `match` captures) and over every module of the transformers 5.9.0 wheel.
//! There too, statement locations (`ParsedFile::location`) against `ast`.
//! Parameter lists (`pysource::signature::Signature`) against
//! `inspect.signature` on generated `def`s.

mod oracle;

use std::collections::BTreeSet;
use std::io::Read;

use oracle::run_python;
use patchgen_python::pysource::names::bindings;
use patchgen_python::pysource::signature::Signature;
use patchgen_python::pysource::{ParsedFile, keyword_line};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use ruff_python_ast::statement_visitor::{StatementVisitor, walk_stmt};
use ruff_python_ast::{Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::Ranged;

/// For each source: its scopes as `[kind, name, line, locals, declared]`
/// (module/function/class scopes only, in line order), or `null` when
/// CPython rejects the source.
const ORACLE: &str = r#"
import json, sys, symtable
out = []
for src in json.load(sys.stdin):
    try:
        top = symtable.symtable(src, "m.py", "exec")
    except SyntaxError:
        out.append(None)
        continue
    scopes = []
    comprehensions = ("listcomp", "setcomp", "dictcomp", "genexpr")
    def walrus_globals(t):
        # At module level a walrus in a comprehension binds a module name,
        # which the table marks as a `global` of the comprehension, not as
        # assigned in the module.
        found = set()
        for c in t.get_children():
            if c.get_name() in comprehensions:
                found |= {s.get_name() for s in c.get_symbols() if s.is_declared_global()}
                found |= walrus_globals(c)
        return found
    def walk(t):
        kind = t.get_type()
        kind = kind if isinstance(kind, str) else kind.name.lower()
        if kind in ("module", "function", "class") and t.get_name() not in ("lambda", "listcomp", "setcomp", "dictcomp", "genexpr"):
            syms = t.get_symbols()
            local = {s.get_name() for s in syms if s.is_assigned() or s.is_imported()}
            local = sorted(local | walrus_globals(t) if kind == "module" else local)
            # The module's table also holds every name declared `global`
            # anywhere in it: a module scope's own declarations are not told apart.
            declared = [] if kind == "module" else sorted(s.get_name() for s in syms if s.is_declared_global() or s.is_nonlocal())
            scopes.append([kind, t.get_name() if kind != "module" else "top", t.get_lineno() if kind != "module" else 0, local, declared])
        for c in t.get_children():
            walk(c)
    walk(top)
    scopes.sort(key=lambda s: (s[2], s[0], s[1]))
    out.append(scopes)
json.dump(out, sys.stdout)
"#;

type Scope = (String, String, usize, Vec<String>, Vec<String>);

/// Our scopes of `file`, as the oracle lists them.
fn ours(file: &ParsedFile) -> Vec<Scope> {
    fn scope(kind: &str, name: &str, line: usize, body: &[Stmt]) -> Scope {
        let mut local = BTreeSet::new();
        let mut declared = BTreeSet::new();
        for b in bindings(body) {
            if b.is_local() { &mut local } else { &mut declared }.insert(b.name.to_string());
        }
        (kind.into(), name.into(), line, local.into_iter().collect(), declared.into_iter().collect())
    }
    struct Scopes<'f>(&'f ParsedFile, Vec<Scope>);
    impl<'a> StatementVisitor<'a> for Scopes<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::FunctionDef(StmtFunctionDef { name, body, .. }) => {
                    let line = keyword_line(self.0, name.start());
                    self.1.push(scope("function", name, line, body));
                }
                Stmt::ClassDef(StmtClassDef { name, body, .. }) => {
                    let line = keyword_line(self.0, name.start());
                    self.1.push(scope("class", name, line, body));
                }
                _ => {}
            }
            walk_stmt(self, stmt);
        }
    }
    let mut top = scope("module", "top", 0, file.body());
    top.4.clear();
    let mut v = Scopes(file, vec![top]);
    v.visit_body(file.body());
    v.1.sort_by(|a, b| (a.2, &a.0, &a.1).cmp(&(b.2, &b.0, &b.1)));
    v.1
}

/// Compare every source python3 accepts; returns how many it accepted.
fn compare(sources: &[String], label: impl Fn(usize) -> String) -> usize {
    let expected: Vec<Option<Vec<Scope>>> = run_python(ORACLE, sources);
    assert_eq!(expected.len(), sources.len());
    let mut accepted = 0;
    for (i, (src, want)) in sources.iter().zip(expected).enumerate() {
        let Some(want) = want else { continue };
        accepted += 1;
        let file = ParsedFile::parse(label(i).into(), src)
            .unwrap_or_else(|e| panic!("{}: python3 compiles it, ruff does not: {e:?}", label(i)));
        let got = ours(&file);
        assert_eq!(got, want, "{}:\n{src}", label(i));
    }
    accepted
}

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "x", "y"]).prop_map(str::to_string)
}

/// A comprehension variable: mostly names no walrus rebinds (which
/// CPython rejects).
fn comp_var() -> impl Strategy<Value = String> {
    prop_oneof![3 => prop::sample::select(vec!["i", "j"]).prop_map(str::to_string), 1 => name()]
}

fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![name(), Just("1".to_string()), Just("f(a)".to_string()), Just("o.attr".to_string())];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (name(), inner.clone()).prop_map(|(n, e)| format!("({n} := {e})")),
            (comp_var(), inner.clone(), inner.clone()).prop_map(|(n, it, e)| format!("[{e} for {n} in {it}]")),
            (comp_var(), inner.clone(), inner.clone())
                .prop_map(|(n, it, c)| format!("{{{n}: 1 for {n} in {it} if {c}}}")),
            (comp_var(), comp_var(), inner.clone(), inner.clone())
                .prop_map(|(n, m, it, e)| format!("({e} for {n} in {it} for {m} in {n})")),
            (name(), inner.clone(), inner.clone()).prop_map(|(n, d, e)| format!("(lambda {n}={d}: {e})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("g({a}, k={b})")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("({a} + {b})")),
        ]
    })
}

fn target() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => name(),
        1 => (name(), name()).prop_map(|(a, b)| format!("({a}, *{b})")),
        1 => (name(), name()).prop_map(|(a, b)| format!("[{a}, {b}]")),
        1 => name().prop_map(|a| format!("o.{a}")),
        1 => (name(), expr()).prop_map(|(a, e)| format!("{a}[{e}]")),
    ]
}

fn indent(block: &[String]) -> String {
    let body: String = block.concat();
    let body = if body.is_empty() { "pass\n".to_string() } else { body };
    body.lines().map(|l| format!("    {l}\n")).collect()
}

fn stmt() -> impl Strategy<Value = String> {
    let simple = prop_oneof![
        (target(), expr()).prop_map(|(t, e)| format!("{t} = {e}\n")),
        (name(), expr()).prop_map(|(t, e)| format!("{t} += {e}\n")),
        (name(), expr()).prop_map(|(t, e)| format!("{t}: int = {e}\n")),
        name().prop_map(|t| format!("{t}: int\n")),
        expr().prop_map(|e| format!("{e}\n")),
        name().prop_map(|n| format!("del {n}\n")),
        name().prop_map(|n| format!("import {n}.sub\n")),
        (name(), name()).prop_map(|(n, m)| format!("import os.path as {n}, {m}\n")),
        (name(), name()).prop_map(|(n, m)| format!("from .mod import {n} as {m}, z\n")),
        Just("from mod import *\n".to_string()),
        name().prop_map(|n| format!("global {n}\n")),
        name().prop_map(|n| format!("nonlocal {n}\n")),
        (name(), expr(), expr()).prop_map(|(n, d, e)| format!("def {n}(i={d}):\n    return {e}\n")),
    ];
    simple.prop_recursive(3, 24, 4, |inner| {
        let block = prop::collection::vec(inner, 0..3);
        prop_oneof![
            (name(), expr(), expr(), block.clone())
                .prop_map(|(n, d, deco, b)| format!("@{deco}\ndef {n}(p, q={d}, *r, s: {d} = 1, **t) -> {d}:\n{}", indent(&b))),
            (name(), expr(), block.clone()).prop_map(|(n, base, b)| format!("class {n}({base}, metaclass=M):\n{}", indent(&b))),
            (target(), expr(), block.clone(), block.clone())
                .prop_map(|(t, e, b, o)| format!("for {t} in {e}:\n{}else:\n{}", indent(&b), indent(&o))),
            (expr(), block.clone(), block.clone())
                .prop_map(|(e, b, o)| format!("if {e}:\n{}elif x:\n{}", indent(&b), indent(&o))),
            (expr(), block.clone()).prop_map(|(e, b)| format!("while {e}:\n{}", indent(&b))),
            (expr(), target(), block.clone()).prop_map(|(e, t, b)| format!("with {e} as {t}, h():\n{}", indent(&b))),
            (block.clone(), name(), block.clone(), block.clone()).prop_map(|(b, n, h, f)| format!(
                "try:\n{}except (E, F) as {n}:\n{}except G:\n    pass\nfinally:\n{}",
                indent(&b),
                indent(&h),
                indent(&f)
            )),
            (expr(), name(), name(), name(), block).prop_map(|(e, n, m, k, b)| format!(
                "match {e}:\n    case [1, *{n}] | ({n}, *_):\n{}    case {{'k': P(a={m}), **{k}}}:\n        pass\n    case Q() as {m} if {m}:\n        pass\n",
                indent(&[indent(&b)])
            )),
        ]
    })
}

fn module() -> impl Strategy<Value = String> {
    prop::collection::vec(stmt(), 1..6).prop_map(|v| v.concat())
}

#[test]
fn bindings_match_symtable_on_generated_modules() {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &[11; 32]),
    );
    let strategy = module();
    let sources: Vec<String> = (0..3000).map(|_| strategy.new_tree(&mut runner).unwrap().current()).collect();
    let accepted = compare(&sources, |i| format!("generated #{i}"));
    // Most generated modules must be valid Python, or the test tests little.
    assert!(accepted * 3 > sources.len(), "only {accepted} of {} generated modules compile", sources.len());
    eprintln!("{accepted} of {} generated modules compile and match", sources.len());
}

/// Every `.py` module of the transformers 5.9.0 wheel: (names, sources).
fn wheel_modules() -> Option<(Vec<String>, Vec<String>)> {
    let Some(wheel) = std::env::var_os("PATCHGEN_TEST_TRANSFORMERS") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "PATCHGEN_TEST_TRANSFORMERS must point at the transformers 5.9.0 wheel (scripts/test-env.sh)"
        );
        eprintln!("skipped: PATCHGEN_TEST_TRANSFORMERS is not set");
        return None;
    };
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&wheel).unwrap()).unwrap();
    let mut names = Vec::new();
    let mut sources = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).unwrap();
        let name = entry.name().unwrap().into_owned();
        if !name.ends_with(".py") {
            continue;
        }
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        names.push(name);
        sources.push(text);
    }
    Some((names, sources))
}

#[test]
fn bindings_match_symtable_on_transformers() {
    let Some((names, sources)) = wheel_modules() else { return };
    let accepted = compare(&sources, |i| names[i].clone());
    assert!(accepted > 1000, "only {accepted} modules of the wheel checked");
}

/// For each source, each top-level statement's (line, column, end line, end
/// column) as `ast` gives them, columns converted from UTF-8 bytes to
/// characters and made 1-based (definitions with decorators left out: `ast`
/// starts them at the keyword, ruff at the first decorator).
const AST_LOCATIONS: &str = r#"
import ast, json, sys
out = []
for src in json.load(sys.stdin):
    text = src.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    col = lambda line, offset: len(lines[line - 1].encode()[:offset].decode()) + 1
    spans = []
    for s in ast.parse(text).body:
        if getattr(s, "decorator_list", None):
            continue
        spans.append([s.lineno, col(s.lineno, s.col_offset), s.end_lineno, col(s.end_lineno, s.end_col_offset)])
    out.append(spans)
json.dump(out, sys.stdout)
"#;

#[test]
fn statement_locations_match_ast_on_transformers() {
    let Some((names, sources)) = wheel_modules() else { return };
    let expected: Vec<Vec<[usize; 4]>> = run_python(AST_LOCATIONS, &sources);
    let mut checked = 0;
    for ((name, src), want) in names.iter().zip(&sources).zip(expected) {
        let file = ParsedFile::parse(name.into(), src).unwrap();
        let got: Vec<[usize; 4]> = file
            .body()
            .iter()
            .filter(|s| match s {
                Stmt::FunctionDef(f) => f.decorator_list.is_empty(),
                Stmt::ClassDef(c) => c.decorator_list.is_empty(),
                _ => true,
            })
            .map(|s| {
                let l = file.location(s.range());
                let (end_line, end_column) = l.end.unwrap();
                [l.line, l.column, end_line, end_column]
            })
            .collect();
        assert_eq!(got, want, "{name}");
        checked += got.len();
    }
    assert!(checked > 10_000, "only {checked} statements checked");
}

/// A parameter as compared: name, kind, `repr` of the default.
type ParamRow = (String, String, Option<String>);

/// For each `def`: its parameters as `inspect.signature` gives them
/// (name, kind, `repr` of the default), or `null` when CPython rejects it.
const INSPECT_SIGNATURES: &str = r#"
import inspect, json, sys
out = []
for src in json.load(sys.stdin):
    ns = {}
    try:
        exec(compile(src, "m.py", "exec"), ns)
    except SyntaxError:
        out.append(None)
        continue
    e = inspect.Parameter.empty
    out.append([[p.name, p.kind.name.lower(), None if p.default is e else repr(p.default)]
                for p in inspect.signature(ns["f"]).parameters.values()])
json.dump(out, sys.stdout)
"#;

fn parameter_list() -> impl Strategy<Value = String> {
    let default = prop::sample::select(vec!["", "", "=1", "=None", "='a'", "=-2", "=(1, 2)", "=[]"]);
    let param = (prop::sample::select(vec!["a", "b", "self", "x_1", "é"]), default);
    (
        prop::collection::vec(param.clone(), 0..3),
        any::<bool>(),
        prop::collection::vec(param.clone(), 0..3),
        prop::sample::select(vec!["", "*", "*args"]),
        prop::collection::vec(param, 0..3),
        any::<bool>(),
    )
        .prop_map(|(posonly, slash, regular, star, kwonly, kwargs)| {
            let mut parts: Vec<String> = Vec::new();
            let mut n = 0;
            // Distinct names: CPython rejects duplicate parameters.
            let mut name = |base: &str| {
                n += 1;
                format!("{base}{n}")
            };
            for (p, d) in &posonly {
                parts.push(format!("{}{d}", name(p)));
            }
            if slash && !posonly.is_empty() {
                parts.push("/".into());
            }
            for (p, d) in &regular {
                parts.push(format!("{}{d}", name(p)));
            }
            match star {
                "*args" => parts.push(format!("*{}", name("args"))),
                // Keyword-only parameters need a star before them.
                _ if !kwonly.is_empty() => parts.push("*".into()),
                _ => {}
            }
            for (p, d) in &kwonly {
                parts.push(format!("{}{d}", name(p)));
            }
            if kwargs {
                parts.push(format!("**{}", name("kw")));
            }
            format!("def f({}):\n    pass\n", parts.join(", "))
        })
}

#[test]
fn signatures_match_inspect_on_generated_defs() {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &[12; 32]),
    );
    let strategy = parameter_list();
    let sources: Vec<String> = (0..2000).map(|_| strategy.new_tree(&mut runner).unwrap().current()).collect();
    let expected: Vec<Option<Vec<ParamRow>>> = run_python(INSPECT_SIGNATURES, &sources);
    let mut accepted = 0;
    for (src, want) in sources.iter().zip(expected) {
        let Some(want) = want else { continue };
        accepted += 1;
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let Stmt::FunctionDef(f) = &parsed.syntax().body[0] else { unreachable!() };
        let got: Vec<ParamRow> = Signature::of(&f.parameters, src)
            .params
            .into_iter()
            .map(|p| (p.name, p.kind.as_str().to_string(), p.default))
            .collect();
        assert_eq!(got, want, "{src}");
    }
    assert!(accepted * 2 > sources.len(), "only {accepted} of {} generated defs compile", sources.len());
}
