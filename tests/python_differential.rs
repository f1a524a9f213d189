//! Differential tests against the live `python3`: what patchgen mimics is
//! compared with what CPython does, over generated inputs. Each property
//! batches its cases into one python3 process.
//!
//! - `str.splitlines` (with and without keepends), `str.strip`, `textwrap.dedent`,
//!   whether `\n` is a text's only line boundary, and universal-newline
//!   reading (`io.StringIO(s, newline=None)`)
//! - import collection order (`ast.NodeVisitor`) and rendering (`ast.unparse`),
//!   with `drop_import_names` filtering and relative → absolute resolution

mod oracle;

use patchgen_config::plan::PatchPlan;
use patchgen_core::codegen::imports::{collect_imports, transform_imports};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::pytext;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

/// Run a python3 program that reads a JSON list on stdin and prints a JSON list.
fn python(program: &str, input: &serde_json::Value) -> Vec<serde_json::Value> {
    oracle::run_python(program, input)
}

fn sample<T: std::fmt::Debug>(strategy: impl Strategy<Value = T>, n: usize, seed: u8) -> Vec<T> {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &[seed; 32]),
    );
    (0..n).map(|_| strategy.new_tree(&mut runner).unwrap().current()).collect()
}

fn text_strategy() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just(" "),
        Just("  "),
        Just("    "),
        Just("\t"),
        Just("\n"),
        Just("\r\n"),
        Just("\r"),
        Just("\x0c"),
        Just("\x0b"),
        Just("\x1c"),
        Just("\u{85}"),
        Just("\u{2028}"),
        Just("\u{2029}"),
        Just("\x1d"),
        Just("\x1e"),
        Just("\x1f"),
        Just("\u{a0}"),
        Just("\u{3000}"),
        // Not whitespace for Python (nor Rust).
        Just("\u{200b}"),
        // Lead bytes of breaks (C2, E2) in characters that are not.
        Just("€"),
        Just("\u{2027}"),
        // Runs long enough to be skipped eight bytes at a time.
        Just("return self.forward(x)"),
        Just("a"),
        Just("def f():"),
        Just("# c"),
        Just("é"),
    ];
    prop::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
}

#[test]
fn str_methods_and_dedent_match_python() {
    let inputs = sample(text_strategy(), 600, 7);
    let expected = python(
        r#"
import io, json, sys, textwrap
out = []
for s in json.load(sys.stdin):
    out.append([s.splitlines(), s.splitlines(True), s.strip(), s.lstrip(), s.rstrip(), textwrap.dedent(s),
                s.splitlines() == s.split("\n")[:len(s.splitlines())] and s.count("\n") == len(s.splitlines(True)) - (not s.endswith("\n") and s != ""),
                [not line.strip() for line in [s] + s.splitlines()], len(s.splitlines()),
                io.StringIO(s, newline=None).read()])
print(json.dumps(out))
"#,
        &serde_json::json!(inputs),
    );
    for (s, exp) in inputs.iter().zip(expected) {
        let got = serde_json::json!([
            pytext::splitlines(s),
            pytext::splitlines_keepends(s),
            pytext::strip(s),
            pytext::lstrip(s),
            pytext::rstrip(s),
            pytext::dedent(s),
            pytext::only_newline_breaks(s),
            std::iter::once(s.as_str()).chain(pytext::lines(s, false)).map(pytext::is_blank).collect::<Vec<_>>(),
            pytext::count_lines(s),
            pytext::universal_newlines(s),
        ]);
        assert_eq!(pytext::universal_newlines_owned(s.clone()), pytext::universal_newlines(s), "input {s:?}");
        let stripped: Vec<&str> = pytext::splitlines_keepends(s).into_iter().map(pytext::without_line_break).collect();
        assert_eq!(stripped, pytext::splitlines(s), "input {s:?}");
        assert_eq!(got, exp, "input {s:?}");
    }
}

/// A random Python module with imports at various depths.
/// `codegen::text::collapse_blank_lines` (the reference's
/// `_collapse_blank_lines`): the kept lines of `splitlines()`, a run of
/// blank lines cut at `max`, joined with "\n".
#[test]
fn collapse_blank_lines_matches_python() {
    let lines = prop::collection::vec(
        prop_oneof![Just(""), Just("  "), Just("\t"), Just("\u{a0}"), Just("x = 1"), Just("    return x"), Just("# c")],
        0..12,
    );
    let breaks = prop::collection::vec(
        prop_oneof![4 => Just("\n"), 1 => Just("\r\n"), 1 => Just("\r"), 1 => Just("\u{2028}"), 1 => Just("")],
        12,
    );
    // Half of them with "\n" as the only break (a path of its own).
    let newlines = prop::collection::vec(prop_oneof![6 => Just("\n"), 1 => Just("")], 12);
    let inputs: Vec<(String, usize)> = sample((lines.clone(), breaks, 0..4usize), 300, 11)
        .into_iter()
        .chain(sample((lines, newlines, 0..4usize), 300, 12))
        .map(|(lines, breaks, max)| (lines.iter().zip(&breaks).map(|(l, b)| format!("{l}{b}")).collect(), max))
        .collect();
    let expected = python(
        r#"
import json, sys
out = []
for s, limit in json.load(sys.stdin):
    kept, run = [], 0
    for line in s.splitlines():
        run = run + 1 if not line.strip() else 0
        if run <= limit:
            kept.append(line)
    out.append("\n".join(kept))
print(json.dumps(out))
"#,
        &serde_json::json!(inputs),
    );
    for ((s, max), exp) in inputs.iter().zip(expected) {
        assert_eq!(
            serde_json::json!(patchgen_core::codegen::text::collapse_blank_lines(s, *max)),
            exp,
            "input {s:?}, max {max}"
        );
    }
}

/// `codegen::text::indent_preserved_source`: every line moved so the first
/// non-blank one sits at `target` spaces (code points, as Python slices),
/// a line shorter than that indentation stripped instead, blank lines
/// emptied.
#[test]
fn indent_preserved_source_matches_python() {
    let lines = prop::collection::vec(
        prop_oneof![
            Just(""),
            Just("  "),
            Just("    x = 1"),
            Just("  y"),
            Just("\u{a0}\u{a0}z"),
            Just("\té"),
            Just("        deep"),
            Just("ab")
        ],
        0..8,
    );
    let inputs: Vec<(String, usize)> = sample((lines, prop_oneof![Just("\n"), Just("\r\n")], 0..9usize), 600, 13)
        .into_iter()
        .map(|(l, br, t)| (l.join(br), t))
        .collect();
    let expected = python(
        r#"
import json, sys
out = []
for text, target in json.load(sys.stdin):
    lines = text.splitlines()
    first = next((l for l in lines if l.strip()), "")
    width = len(first) - len(first.lstrip())
    out.append([" " * target + (l[width:] if len(l) >= width else l.lstrip()) if l.strip() else "" for l in lines])
print(json.dumps(out))
"#,
        &serde_json::json!(inputs),
    );
    for ((text, target), exp) in inputs.iter().zip(expected) {
        assert_eq!(
            serde_json::json!(patchgen_core::codegen::text::indent_preserved_source(text, *target)),
            exp,
            "input {text:?}, target {target}"
        );
    }
}

fn module_strategy() -> impl Strategy<Value = String> {
    let name = prop_oneof![Just("a"), Just("b"), Just("torch"), Just("nn"), Just("x_y"), Just("F"), Just("utils")];
    let dotted = prop::collection::vec(name.clone(), 1..4).prop_map(|v| v.join("."));
    let alias = (dotted.clone(), prop::option::of(name.clone())).prop_map(|(n, a)| match a {
        Some(a) => format!("{n} as {a}"),
        None => n,
    });
    let from_alias = (name.clone(), prop::option::of(name.clone())).prop_map(|(n, a)| match a {
        Some(a) => format!("{n} as {a}"),
        None => n.to_string(),
    });
    let import = prop_oneof![
        prop::collection::vec(alias, 1..3).prop_map(|v| format!("import {}", v.join(", "))),
        (0u32..4, prop::option::of(dotted), prop::collection::vec(from_alias, 1..4), any::<bool>()).prop_map(
            |(level, module, names, paren)| {
                let level = if module.is_none() && level == 0 { 1 } else { level };
                let names = if paren { format!("(\n    {},\n)", names.join(",\n    ")) } else { names.join(", ") };
                format!("from {}{} import {}", ".".repeat(level as usize), module.unwrap_or_default(), names)
            }
        ),
        Just("from m import *".to_string()),
    ];
    let leaf = prop_oneof![import.clone(), Just("x = 1".to_string()), Just("pass".to_string())];
    let block = leaf.prop_recursive(3, 24, 4, move |inner| {
        let body = prop::collection::vec(inner, 1..4).prop_map(|v| v.join("\n"));
        prop_oneof![
            body.clone().prop_map(|b| format!("if c:\n{}", indent(&b))),
            (body.clone(), body.clone()).prop_map(|(a, b)| format!("try:\n{}\nexcept E:\n{}", indent(&a), indent(&b))),
            body.clone().prop_map(|b| format!("def f():\n{}", indent(&b))),
            body.clone().prop_map(|b| format!("class C:\n{}", indent(&b))),
            (body.clone(), body.clone()).prop_map(|(a, b)| format!(
                "for i in x:\n{}\nelse:\n{}",
                indent(&a),
                indent(&b)
            )),
            (body.clone(), body.clone()).prop_map(|(a, b)| format!("if c:\n{}\nelif d:\n{}", indent(&a), indent(&b))),
            body.prop_map(|b| format!("with w:\n{}", indent(&b))),
        ]
    });
    prop::collection::vec(block, 1..6).prop_map(|v| v.join("\n") + "\n")
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

fn plan(source_module: &str, drop: &[&str]) -> PatchPlan {
    PatchPlan {
        config_module: "cfg".into(),
        config_path: Default::default(),
        created_at: patchgen_config::Loc::line("cfg.py", 0),
        source_module: source_module.into(),
        target_file: "out.py".into(),
        description: String::new(),
        patches: vec![],
        additional_imports: vec![],
        post_import_blocks: vec![],
        helpers: vec![],
        positioned_helpers: vec![],
        drop_imported_names: drop.iter().map(|s| s.to_string()).collect(),
        exclude: vec![],
        transformers_version: None,
        optional: false,
        call_sites: Default::default(),
    }
}

#[test]
fn import_collection_and_rendering_match_ast() {
    let sources = sample(module_strategy(), 300, 11);
    let source_modules = ["transformers.models.qwen3.modeling_qwen3", "pkg.mod", "top"];
    let drops: [&[&str]; 3] = [&[], &["nn", "b"], &["a.b", "torch", "F"]];
    let mut cases = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        cases.push(serde_json::json!({
            "src": src,
            "module": source_modules[i % 3],
            "drop": drops[(i / 3) % 3],
        }));
    }
    // What CPython does: collect with ast.NodeVisitor, filter aliases, make
    // relative imports absolute from the source module, print with ast.unparse.
    let expected = python(
        r#"
import ast, json, sys
class Collect(ast.NodeVisitor):
    def __init__(self): self.found = []
    def visit_Import(self, node): self.found.append(node)
    def visit_ImportFrom(self, node): self.found.append(node)
out = []
for case in json.load(sys.stdin):
    c = Collect(); c.visit(ast.parse(case["src"]))
    drop = set(case["drop"]); lines = []
    def keep(a):
        names = {a.name, a.name.rsplit(".", 1)[-1]} | ({a.asname} if a.asname else set())
        return not drop or names.isdisjoint(drop)
    for node in c.found:
        kept = [a for a in node.names if keep(a)]
        if not kept: continue
        if isinstance(node, ast.ImportFrom):
            level, module = node.level, node.module
            parts = case["module"].split(".")
            if level > 0 and level <= len(parts):
                module = ".".join(parts[:-level]) + (("." + node.module) if node.module else "")
                level = 0
            lines.append(ast.unparse(ast.ImportFrom(module=module, names=kept, level=level)))
        else:
            lines.append(ast.unparse(ast.Import(names=kept)))
    out.append("\n".join(lines))
print(json.dumps(out))
"#,
        &serde_json::json!(cases),
    );
    for (case, exp) in cases.iter().zip(expected) {
        let src = case["src"].as_str().unwrap();
        let file = ParsedFile::parse(Default::default(), src).unwrap_or_else(|e| panic!("{src}\n{e:?}"));
        let drop: Vec<&str> = case["drop"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let got = transform_imports(&plan(case["module"].as_str().unwrap(), &drop), &collect_imports(file.body()));
        assert_eq!(got, exp.as_str().unwrap(), "source:\n{src}\nmodule: {}", case["module"]);
    }
}
