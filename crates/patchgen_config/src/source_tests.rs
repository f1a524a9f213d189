//! The answers `from_parse` reads off a file's syntax tree, against the
//! long way, over generated config-like modules:
//! `ObjectSource::dedents_to_function` must never claim a parse that ruff
//! would refuse (every function whose source it vouches for is parsed here
//! after `textwrap.dedent`, as `prepare_override` would otherwise do), and
//! `block_len` must give what the 3.11 tokenizer port gives to `getblock`.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::sample::select;
use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use super::{DefObj, ParsedFile, from_parse, keyword_line, object_source_with_leading_comments};
use crate::plan::Loc;
use patchgen_python::pytext;

/// Module pieces; `{i}` is a class body's indentation.
const PIECES: [&str; 40] = [
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
    "def fstr(d):\n    return f\"{d[\"k\"]}\"\n",
    "def fstr_quote():\n    return f\"{'\"'}\" + ')'\n\nx = (\n1)\n",
    "def comments_after(x):\n    if x:\n        return 1\n      # between\n  # shallow\n        # deep\n\n# column 0\nz = 3\n",
    "def eof_comment():\n    pass\n    # last line, deep",
    "def no_final_newline():\n    return 1",
    "def cont_header(a,\n        b):\n    return a\n",
    "def header_backslash(): \\\n    return 1\n",
    "class K:\n{i}def m(self):\n{i}{i}pass\n{i}{i}# inside\n{i}# member level\n\n{i}x = 1\n",
    "def body_comment_first():\n        # deeper than the body\n    return 1\n",
    "def semi():\n    a = 1; b = 2\n    return a  # trailing\n",
    r#"def raw_fstr(d):
    return fr"{d["k"]}" + fR'{d['(']}'

x = (
1)
"#,
    r#"def plain_fstr(x, y):
    s = f"{x!r:>{y}} {'a'} \" " + F'''{x}
'''
    return rf'{s}\\' + s
"#,
    r#"def triple_fstr(d):
    s = f'''{d[''' ''']}'''
    return s
"#,
    r#"def fstr_newline_in_field(x):
    return f"{
    x}" + (")")
"#,
    r#"def tstr(d):
    return t"{d["k"]}" + t'{d}'
"#,
    r#"@decorator(f"{'x'}")
def fstr_decorated(a=f'{1}'):
    pass
"#,
];

fn functions<'f>(body: &'f [Stmt], out: &mut Vec<&'f ruff_python_ast::StmtFunctionDef>) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(f) => {
                out.push(f);
                functions(&f.body, out);
            }
            Stmt::ClassDef(c) => functions(&c.body, out),
            Stmt::If(s) => {
                functions(&s.body, out);
                for c in &s.elif_else_clauses {
                    functions(&c.body, out);
                }
            }
            _ => {}
        }
    }
}

fn has_function(body: &[Stmt]) -> bool {
    body.iter().any(|s| matches!(s, Stmt::FunctionDef(_)))
}

/// Every function of `file` (at any depth) with its `co_firstlineno`: the
/// first decorator's expression, else the keyword.
fn functions_and_first_lines(file: &ParsedFile) -> Vec<(&ruff_python_ast::StmtFunctionDef, usize)> {
    let mut found = Vec::new();
    functions(file.body(), &mut found);
    found
        .into_iter()
        .map(|f| {
            let first_line = f
                .decorator_list
                .first()
                .map(|d| file.line_of(d.expression.start()))
                .unwrap_or_else(|| keyword_line(file, f.name.start()));
            (f, first_line)
        })
        .collect()
}

/// Checks every function of `text`; returns how many were vouched for.
fn check_module(text: &str) -> Result<usize, TestCaseError> {
    let Ok(file) = ParsedFile::parse("m.py".into(), text) else { return Ok(0) };
    let file = Arc::new(file);
    let mut vouched = 0;
    for (f, first_line) in functions_and_first_lines(&file) {
        let def = DefObj {
            name: f.name.id.to_string(),
            qualname: f.name.id.to_string(),
            module: "m".into(),
            file: file.clone(),
            is_class: false,
            first_line,
            loc: Loc::line("m.py", first_line),
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

/// Compares `block_len` with the tokenizer for every function of `text`;
/// returns how many it answered.
fn check_blocks(text: &str) -> Result<usize, TestCaseError> {
    let Ok(file) = ParsedFile::parse("m.py".into(), text) else { return Ok(0) };
    let mut lines = file.readlines();
    let completed;
    if let Some(last) = lines.last_mut().filter(|l| !l.ends_with('\n')) {
        completed = format!("{last}\n");
        *last = &completed;
    }
    let mut answered = 0;
    for (_, first_line) in functions_and_first_lines(&file) {
        let Ok(lnum) = pytext::getblock::find_function_start(&lines, first_line - 1) else { continue };
        if let Some(n) = from_parse::block_len(&file, &lines, lnum) {
            answered += 1;
            let long_way = pytext::getblock::getblock(&lines[lnum..]);
            prop_assert_eq!(Ok(n), long_way, "function at line {}:\n{}", lnum + 1, text);
        }
    }
    Ok(answered)
}

/// Modules made of 1–5 pieces, class bodies indented by 4 or 2 spaces or a tab.
fn module_text() -> impl Strategy<Value = String> {
    (proptest::collection::vec(select(&PIECES[..]), 1..6), select(&["    ", "  ", "\t"][..]))
        .prop_map(|(pieces, indent)| pieces.iter().map(|p| p.replace("{i}", indent)).collect::<Vec<_>>().join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn blocks_read_off_the_parse_match_the_tokenizer(text in module_text()) {
        check_blocks(&text)?;
    }

    #[test]
    fn vouched_sources_parse_after_dedent(text in module_text()) {
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

#[test]
fn blocks_of_plain_functions_are_read_off_the_parse() {
    // Trailing comments, a last line without "\n", a multi-line header.
    for (piece, answered) in [(PIECES[26], 1), (PIECES[27], 1), (PIECES[28], 1), (PIECES[29], 1), (PIECES[33], 1)] {
        assert_eq!(check_blocks(piece).unwrap(), answered, "{piece}");
    }
    // f-strings with nothing 3.11 would end early.
    for piece in [PIECES[35], PIECES[39]] {
        assert_eq!(check_blocks(piece).unwrap(), 1, "{piece}");
    }
    // Nested quotes in f-strings, a backslash after the header, a
    // one-liner: tokenize to know.
    for piece in [PIECES[24], PIECES[25], PIECES[34], PIECES[36], PIECES[37], PIECES[30], PIECES[8]] {
        assert_eq!(check_blocks(piece).unwrap(), 0, "{piece}");
    }
}
