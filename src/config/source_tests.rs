//! `ObjectSource::dedents_to_function` must never claim a parse that ruff
//! would refuse: over generated config-like modules, every function whose
//! source it vouches for is parsed here after `textwrap.dedent`, as
//! `prepare_override` would otherwise do.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::sample::select;
use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use super::{DefObj, ParsedFile, keyword_line, object_source_with_leading_comments};
use crate::config::plan::Loc;
use crate::pytext;

/// Module pieces; `{i}` is a class body's indentation.
const PIECES: [&str; 24] = [
    "class H:\n# column-0 comment right above a method\n{i}def m(self):\n{i}{i}return 1\n",
    "\\\ndef after_lone_backslash():\n    pass\n",
    "def f(x):\n    return x\n",
    "# leading\n# comment\ndef g(x):\n    return x\n",
    "@decorator\ndef h(self):\n    pass\n",
    "@decorator(\n    1,\n)\ndef h2():\n    pass\n",
    "@\\\n decorator\ndef h3():\n    pass\n",
    "async def a():\n    await b\n",
    "def one(): return 1\n",
    "def doc():\n    \"\"\"Doc\nat column 0\n    \"\"\"\n    return 1\n",
    "def cont():\n    x = 1 + \\\n        2\n    return x\n",
    "x = 1 + \\\n    2\ndef after_backslash():\n    pass\n",
    "def tabs():\n\treturn 1\n",
    "def trailing():\n    return 1\n    # trailing comment\n# column-0 comment\n",
    "def outer():\n    def inner():\n        return 1\n    return inner\n",
    "if True:\n    def in_if():\n        pass\n",
    "class C:\n{i}def m(self):\n{i}{i}return 1\n\n{i}# note\n{i}@property\n{i}def p(self):\n{i}{i}return 2\n",
    "class D:\n# column-0 comment in a class\n{i}def m(self):\n{i}{i}s = '''\nraw\n'''\n{i}{i}return s\n",
    "class E:\n{i}def m(self): return 1\n{i}def n(self):\n{i}{i}pass\n",
    "class F:\n{i}def m(self):\n{i}{i}x = (\n1)\n{i}{i}return x\n",
    "def blank_lines():\n\n    x = 1\n   \n    return x\n",
    "y = 2\n",
    "def ws_only():\n    s = '''\n  \n'''\n    return s\n",
    "class G:\n{i}@decorator\n\n{i}def spaced(self):\n{i}{i}pass\n",
];

fn functions<'f>(file: &'f ParsedFile, body: &'f [Stmt], out: &mut Vec<&'f ruff_python_ast::StmtFunctionDef>) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(f) => {
                out.push(f);
                functions(file, &f.body, out);
            }
            Stmt::ClassDef(c) => functions(file, &c.body, out),
            Stmt::If(s) => {
                functions(file, &s.body, out);
                for c in &s.elif_else_clauses {
                    functions(file, &c.body, out);
                }
            }
            _ => {}
        }
    }
}

fn has_function(body: &[Stmt]) -> bool {
    body.iter().any(|s| matches!(s, Stmt::FunctionDef(_)))
}

/// Checks every function of `text`; returns how many were vouched for.
fn check_module(text: &str) -> Result<usize, TestCaseError> {
    let Ok(file) = ParsedFile::parse("m.py".into(), text) else { return Ok(0) };
    let file = Arc::new(file);
    let mut found = Vec::new();
    functions(&file, file.body(), &mut found);
    let mut vouched = 0;
    for f in found {
        // `co_firstlineno`: the first decorator's expression, else the keyword.
        let first_line = f
            .decorator_list
            .first()
            .map(|d| file.line_of(d.expression.start()))
            .unwrap_or_else(|| keyword_line(&file, f.name.start()));
        let def = DefObj {
            name: f.name.id.to_string(),
            qualname: f.name.id.to_string(),
            module: "m".into(),
            file: file.clone(),
            is_class: false,
            first_line,
            loc: Loc { path: "m.py".into(), line: first_line },
        };
        let Ok(source) = object_source_with_leading_comments(&def) else { continue };
        if source.dedents_to_function {
            vouched += 1;
            let dedented = pytext::dedent(&source.text);
            let parsed = ruff_python_parser::parse_module(&dedented);
            prop_assert!(
                parsed.as_ref().is_ok_and(|p| has_function(&p.syntax().body)),
                "vouched for, but does not parse as a function:\n{}",
                dedented
            );
        }
    }
    Ok(vouched)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn vouched_sources_parse_after_dedent(
        pieces in proptest::collection::vec(select(&PIECES[..]), 1..6),
        indent in select(&["    ", "  ", "\t"][..]),
    ) {
        let text: String = pieces.iter().map(|p| p.replace("{i}", indent)).collect::<Vec<_>>().join("\n");
        check_module(&text)?;
    }
}

#[test]
fn plain_functions_and_methods_are_vouched_for() {
    // The common cases skip the parse: a top-level function with leading
    // comments, a decorated method.
    let text = format!("{}\n{}", PIECES[3], PIECES[16].replace("{i}", "    "));
    assert_eq!(check_module(&text).unwrap(), 3);
    // Tabs, column-0 string content inside a method: parse to know.
    assert_eq!(check_module(PIECES[12]).unwrap(), 0);
    assert_eq!(check_module(&PIECES[17].replace("{i}", "    ")).unwrap(), 0);
}
