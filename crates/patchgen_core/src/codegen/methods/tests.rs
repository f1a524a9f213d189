//! `ClassEdit` keeps the shape of the class up to date instead of
//! re-parsing it after every override; these tests check, over generated
//! classes and replacements (well-formed and not), that it ends with the
//! same text and errors as re-parsing every time (the reference's way), and
//! that every shape it keeps is what parsing the text gives.

use proptest::prelude::*;
use proptest::sample::select;
use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use super::class_edit::{ClassEdit, ClassShape};
use crate::codegen::text::segment_range;
use patchgen_python::pysource::{ParsedFile, keyword_line};
use patchgen_python::pytext;

const NAMES: [&str; 4] = ["forward", "__init__", "helper", "missing"];

/// Body members, `{i}` standing for the body's indentation.
const MEMBERS: [&str; 24] = [
    "{i}\\",
    "{i}x = 2  # ends in \\",
    "{i}\"\"\"Doc with def forward( inside.\"\"\"",
    "{i}\"\"\"Multi-line doc.\n\ndef helper(self):\n{i}\"\"\"",
    "{i}x = 1",
    "{i}y = (\n{i}    1,\n{i})",
    "{i}pass",
    "{i}...",
    "{i}def forward(self, x):\n{i}{i}return x",
    "{i}@property\n{i}def helper(self):\n{i}{i}return 1",
    "{i}@deco(\n{i}    1,\n{i})\n{i}def forward(self):\n{i}{i}pass",
    "{i}# a comment\n{i}def __init__(self, config):\n{i}{i}super().__init__()\n{i}{i}self.config = config",
    "{i}async def forward(self):\n{i}{i}await x",
    "{i}def helper(self):\n{i}{i}def inner():\n{i}{i}{i}pass\n{i}{i}return inner",
    "{i}def forward(self):\n{i}{i}s = \"\"\"\nraw at column 0\n  def helper(self):\n\"\"\"\n{i}{i}return s",
    "{i}def helper(self):\n{i}{i}x = 1 + \\\n{i}{i}{i}2\n{i}{i}return x",
    "{i}def forward(self): return 1",
    "{i}class Inner:\n{i}{i}def forward(self):\n{i}{i}{i}pass",
    "{i}def __init__(self):\n{i}{i}pass\n# column-0 comment\n{i}{i}# deeper comment",
    "{i}def helper(self):\n{i}{i}return 2\n\n\n",
    "{i}if True:\n{i}{i}def forward(self):\n{i}{i}{i}pass",
    "{i}def forward(self):\n{i}{i}x = 1 \\\n",
    "{i}\n{i}def missing_not(self):\n{i}{i}pass",
    "\t\tz = 3",
];

const HEADERS: [&str; 5] = [
    "class A(Base):",
    "class A(Base):  # note",
    "@dataclass\nclass A:",
    "# leading\n\nclass A(\n    Base,\n):",
    "class A(Base): pass",
];

const INDENTS: [&str; 3] = ["    ", "  ", "\t"];

/// Replacement sources, as `prepare_override` leaves them.
const REPLACEMENTS: [&str; 22] = [
    "def forward(self):\n    x = 1 \\",
    "def helper(self):\n    return 1  # \\",
    "def forward(self):\n    return 1\n\\",
    "def forward(self, x):\n    return x + 1",
    "# why\n# more\n\ndef forward(self):\n    pass",
    "@torch.no_grad()\ndef helper(self):\n    return 1",
    "    def forward(self):\n        return 2\n",
    "def forward(self):\n    pass\n\ndef extra(self):\n    pass",
    "def forward(self):\n    s = '''abc\n",
    "def forward(self):\n    x = 1 + \\",
    "def forward(self):\n\treturn 1",
    "def forward(self:\n    pass",
    "pass\ndef forward(self): ...",
    "    def forward(self):\n  return 1",
    "def forward(self):\n    return '''\nraw\n'''",
    "# only a comment",
    "",
    "async def helper(self):\n    await y",
    "class Inner:\n    pass",
    "def __init__(self, config):\n    super().__init__()\n\n    self.x = 1\n",
    "@deco(\n    2,\n)\ndef forward(self):\n    pass",
    "x = 1\ndef helper(self):\n    return 3",
];

fn class_source(header: &str, indent: &str, members: &[&str]) -> String {
    let mut s = header.to_string();
    for m in members {
        s.push('\n');
        s.push_str(&m.replace("{i}", indent));
    }
    s
}

/// Apply `overrides` both ways; the texts and errors must agree, and every
/// shape the fast way keeps must be the text's parse.
fn compare(lines: Vec<String>, shape: Option<ClassShape>, overrides: &[(&str, &str)]) -> Result<(), TestCaseError> {
    let mut fast = ClassEdit::new(lines.clone(), shape, 1);
    let mut slow = ClassEdit::reparsing(lines);
    for (name, preserved) in overrides {
        let a = fast.replace_method(name, preserved).map_err(|e| e.message);
        let b = slow.replace_method(name, preserved).map_err(|e| e.message);
        prop_assert_eq!(&a, &b);
        if a.is_err() {
            return Ok(());
        }
        let text = fast.clone_text();
        if let Some(kept) = fast.kept_shape() {
            let parsed = ClassShape::parse(&text);
            prop_assert_eq!(Some(kept), parsed.as_ref(), "kept shape differs from the parse of\n{}", text);
        }
    }
    prop_assert_eq!(fast.finish(), slow.finish());
    Ok(())
}

fn lines_of(source: &str) -> Vec<String> {
    pytext::splitlines(source).into_iter().map(str::to_string).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Starting from a parse of the segment itself.
    #[test]
    fn incremental_shape_matches_reparsing(
        header in select(&HEADERS[..]),
        indent in select(&INDENTS[..]),
        members in proptest::collection::vec(select(&MEMBERS[..]), 1..7),
        overrides in proptest::collection::vec((select(&NAMES[..]), select(&REPLACEMENTS[..])), 1..5),
    ) {
        let source = class_source(header, indent, &members);
        let shape = ClassShape::parse(&source);
        compare(lines_of(&source), shape, &overrides)?;
    }

    /// Starting from the upstream module's parse, as the generator does:
    /// the segment may begin with comments, decorators and blank lines, or
    /// overlap the statement before it.
    #[test]
    fn upstream_shape_matches_reparsing(
        before in select(&["import os", "x = 1", "x = 1 \\\n", "s = '''\n@not_a_decorator'''", "def f():\n    pass\n# c", "y = a \\\n@ b"][..]),
        gap in select(&["\n", "\n\n# comment\n", "\n@decorator\n", "\n\n"][..]),
        header in select(&HEADERS[..]),
        indent in select(&INDENTS[..]),
        members in proptest::collection::vec(select(&MEMBERS[..]), 1..6),
        after_class in select(&["", "\nz = 2", "\n\\\n", "\n# trailing"][..]),
        overrides in proptest::collection::vec((select(&NAMES[..]), select(&REPLACEMENTS[..])), 1..4),
    ) {
        let module = format!("{before}{gap}{}{after_class}\n", class_source(header, indent, &members));
        let Ok(upstream) = ParsedFile::parse(Default::default(), &module) else { return Ok(()) };
        let source_lines = pytext::splitlines(&upstream.text);
        let mut after = 0;
        for stmt in upstream.body() {
            let previous_end = after;
            after = upstream.line_of(stmt.end());
            let Stmt::ClassDef(class) = stmt else { continue };
            let start = class
                .decorator_list
                .iter()
                .map(|d| upstream.line_of(d.expression.start()))
                .min()
                .unwrap_or_else(|| keyword_line(&upstream, class.name.start()));
            let range = segment_range(&source_lines, start, upstream.line_of(class.end()));
            let segment = source_lines[range.clone()].join("\n");
            let mut edit = ClassEdit::upstream_segment(&upstream, &source_lines, true, class, range, previous_end);
            if let Some(kept) = edit.kept_shape() {
                let parsed = ClassShape::parse(&segment);
                prop_assert_eq!(Some(kept), parsed.as_ref(), "upstream shape differs for\n{}", module);
            }
            compare(lines_of(&segment), edit.kept_shape().cloned(), &overrides)?;
        }
    }
}

#[test]
fn keeps_the_shape_for_well_formed_overrides() {
    // The common case must not fall back to re-parsing.
    let source = class_source("class A(Base):", "    ", &[MEMBERS[11], MEMBERS[8], MEMBERS[9]]);
    let mut edit = ClassEdit::new(lines_of(&source), ClassShape::parse(&source), 1);
    edit.replace_method("forward", REPLACEMENTS[3]).unwrap();
    edit.replace_method("__init__", REPLACEMENTS[19]).unwrap();
    edit.replace_method("missing", "def missing(self):\n    return 0").unwrap();
    assert!(edit.kept_shape().is_some());
    let text = edit.finish();
    assert!(text.contains("    def forward(self, x):\n        return x + 1\n    @property"), "{text}");
    assert!(text.ends_with("\n\n    def missing(self):\n        return 0"), "{text}");
}
