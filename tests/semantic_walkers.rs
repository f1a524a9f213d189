//! The walkers agree: every user of `patchgen_python::semantic`'s walk
//! (the semantic layer itself, codegen's import block, lint's package
//! facts and definition lookup, moe's fused-expert classes) sees a
//! statement in every block kind (`for`/`while` and their `else`, `match`
//! cases, `try`/`except`/`else`/`finally`, `with`, `if`/`elif`/`else`), and
//! a statement inside a nested function or class exactly when its scope
//! says so. Which definition owns each slot of the fixture is python3's
//! `ast`'s answer, not ours.

mod oracle;

use std::collections::BTreeMap;
use std::path::PathBuf;

use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::walk::{self, Scope};
use ruff_python_ast::Stmt;

const FIXTURE: &str = include_str!("fixtures/semantic/blocks.py");

/// For each `pass  # slot: NAME` line: the slot's innermost enclosing
/// `def`/`class` (`""` at module level) and whether that is a method (a
/// `def` directly in a class body).
const ORACLE: &str = r##"
import ast, json, sys
src = json.load(sys.stdin)
slots = {i + 1: l.split("# slot: ")[1].strip() for i, l in enumerate(src.splitlines()) if l.strip().startswith("pass  # slot: ")}
out = {}
def visit(node, owner, is_method):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Pass) and child.lineno in slots:
            out[slots[child.lineno]] = [owner, is_method]
        if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
            visit(child, child.name, isinstance(child, ast.FunctionDef) and isinstance(node, ast.ClassDef))
        else:
            visit(child, owner, is_method)
visit(ast.parse(src), "", False)
json.dump(out, sys.stdout)
"##;

/// The fixture with slot `name` holding `stmt` (indented as the slot).
fn with_slot(name: &str, stmt: &str) -> String {
    let marker = format!("pass  # slot: {name}");
    let line = FIXTURE.lines().find(|l| l.trim_end().ends_with(&marker)).expect("slot");
    let indent = &line[..line.len() - line.trim_start().len()];
    let body: Vec<String> = stmt.lines().map(|l| format!("{indent}{l}")).collect();
    FIXTURE.replacen(line, &body.join("\n"), 1)
}

fn parse(text: &str) -> ParsedFile {
    ParsedFile::parse(PathBuf::from("__init__.py"), text).expect("the fixture parses")
}

/// The method `f` of class `Experts`: the function the own-scope users walk.
fn method_f(file: &ParsedFile) -> &ruff_python_ast::StmtFunctionDef {
    let class = file.body().iter().find_map(|s| if let Stmt::ClassDef(c) = s { Some(c) } else { None }).unwrap();
    class.body.iter().find_map(|s| if let Stmt::FunctionDef(f) = s { Some(f) } else { None }).unwrap()
}

fn is_import(s: &&Stmt) -> bool {
    matches!(s, Stmt::Import(_))
}

/// Whether each user sees a statement put in `slot`.
fn seen(slot: &str) -> BTreeMap<&'static str, bool> {
    let import = parse(&with_slot(slot, "import marker"));
    let returns = parse(&with_slot(slot, "return marker"));
    let converter = parse(&with_slot(slot, "K._create_checkpoint_tensor_converter = staticmethod(make)"));
    let def = with_slot(slot, "def marker():\n    pass");
    let def_line = def.lines().position(|l| l.trim_start().starts_with("def marker")).unwrap() + 1;
    let def = parse(&def);
    let fused = with_slot(slot, "self.gate_up_proj = torch.nn.Parameter(w)");
    BTreeMap::from([
        ("semantic statements (All)", walk::statements(import.body(), Scope::All).iter().any(is_import)),
        (
            "semantic statements (Own, in f)",
            walk::statements(&method_f(&import).body, Scope::Own).iter().any(is_import),
        ),
        ("codegen import block", !patchgen_core::codegen::imports::import_statements(import.body()).is_empty()),
        ("lint package converter factories", !patchgen_lint::package::converter_factories(&converter).is_empty()),
        (
            "lint package returned names (in f)",
            patchgen_lint::package::returned_names(method_f(&returns)).contains(&"marker".to_string()),
        ),
        ("lint definition_at", patchgen_lint::pyfacts::definition_at(&def, "marker", def_line).is_some()),
        ("moe fused expert classes", !patchgen_moe::modeling::fused_expert_classes(&fused).unwrap().is_empty()),
    ])
}

#[test]
fn every_user_of_the_walk_sees_every_block() {
    let owners: BTreeMap<String, (String, bool)> = oracle::run_python(ORACLE, FIXTURE);
    assert_eq!(owners.len(), 19, "{owners:?}");
    for (slot, (owner, in_method)) in &owners {
        let in_f = owner == "f";
        let expected = BTreeMap::from([
            // Everything: python's `ast.walk` reaches every slot.
            ("semantic statements (All)", true),
            ("codegen import block", true),
            ("lint package converter factories", true),
            ("lint definition_at", true),
            // The own scope of `f`: not inside a nested def or class.
            ("semantic statements (Own, in f)", in_f),
            ("lint package returned names (in f)", in_f),
            // A method's own statements, in a class at any depth.
            ("moe fused expert classes", *in_method),
        ]);
        assert_eq!(seen(slot), expected, "slot {slot} (owner `{owner}`)");
    }
}

#[test]
fn the_walk_is_in_source_order() {
    // Every slot holds an import of its own name: the walk lists them in
    // the order of their lines (codegen's import block depends on it).
    let mut text = FIXTURE.to_string();
    let slots: Vec<String> =
        FIXTURE.lines().filter_map(|l| l.trim().strip_prefix("pass  # slot: ")).map(str::to_string).collect();
    for slot in &slots {
        text = text.replacen(&format!("pass  # slot: {slot}"), &format!("import {slot}"), 1);
    }
    let file = parse(&text);
    let names: Vec<String> = patchgen_core::codegen::imports::import_statements(file.body())
        .into_iter()
        .filter_map(|s| match s {
            Stmt::Import(i) => Some(i.names[0].name.id.to_string()),
            _ => None,
        })
        .filter(|n| n != "torch")
        .collect();
    assert_eq!(names, slots);
}
