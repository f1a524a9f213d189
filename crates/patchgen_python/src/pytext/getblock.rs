//! `inspect.getblock` and the walk-back of `inspect.findsource`, as in
//! CPython 3.11.7 (`Lib/inspect.py`).
//!
//! `inspect.getsource(obj)` is `lines[start:][:getblock(lines[start:])]`
//! joined, where `lines` are the `linecache` lines of the file (universal
//! newlines, so every line ends in `"\n"`; linecache also appends a `"\n"`
//! to a last line that lacks one) and `start` is, for a function, what
//! [`find_function_start`] returns for its `co_firstlineno - 1`.
//!
//! Note that 3.11's `BlockFinder` has no `decoratorhasargs` state and 3.11's
//! `getblock` has no `SyntaxError` handling: both arrived with the C
//! tokenizer in 3.12. Only `EndOfBlock` and `IndentationError` are
//! swallowed; a `TokenError` (end of input inside a multi-line string or
//! statement) propagates, and is returned here as an `Err`.

use std::fmt;

use super::tokenize::{Token, TokenType, Tokenizer, is_py_whitespace, is_py_word};

/// An exception `inspect.getblock` / `inspect.findsource` would raise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetBlockError {
    /// Python's exception class and message, e.g.
    /// `TokenError: EOF in multi-line statement`.
    pub message: String,
    /// 1-based line number within the `lines` that were passed in.
    pub line: usize,
    /// 0-based column in code points (0 when Python reports none).
    pub col: usize,
}

impl fmt::Display for GetBlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (line {}, column {})", self.message, self.line, self.col)
    }
}

impl std::error::Error for GetBlockError {}

/// `inspect.BlockFinder`.
#[derive(Debug)]
struct BlockFinder {
    indent: i64,
    islambda: bool,
    started: bool,
    passline: bool,
    indecorator: bool,
    last: usize,
    body_col0: Option<usize>,
}

/// `raise EndOfBlock`.
struct EndOfBlock;

impl BlockFinder {
    fn new() -> Self {
        BlockFinder {
            indent: 0,
            islambda: false,
            started: false,
            passline: false,
            indecorator: false,
            last: 1,
            body_col0: None,
        }
    }

    fn tokeneater(&mut self, token: &Token) -> Result<(), EndOfBlock> {
        let kind = token.kind;
        if !self.started && !self.indecorator {
            // skip any decorators
            if token.string == "@" {
                self.indecorator = true;
            } else if matches!(token.string.as_str(), "def" | "class" | "lambda") {
                // look for the first "def", "class" or "lambda"
                if token.string == "lambda" {
                    self.islambda = true;
                }
                self.started = true;
            }
            self.passline = true; // skip to the end of the line
        } else if kind == TokenType::Newline {
            self.passline = false; // stop skipping when a NEWLINE is seen
            self.last = token.start.0;
            if self.islambda {
                // lambdas always end at the first NEWLINE
                return Err(EndOfBlock);
            }
            // hitting a NEWLINE when in a decorator without args ends the
            // decorator
            if self.indecorator {
                self.indecorator = false;
            }
        } else if self.passline {
        } else if kind == TokenType::Indent {
            if self.body_col0.is_none() && self.started {
                self.body_col0 = Some(token.end.1);
            }
            self.indent += 1;
            self.passline = true;
        } else if kind == TokenType::Dedent {
            self.indent -= 1;
            // the end of matching indent/dedent pairs end a block
            if self.indent <= 0 {
                return Err(EndOfBlock);
            }
        } else if kind == TokenType::Comment {
            // Include comments if indented at least as much as the block
            if let Some(body_col0) = self.body_col0
                && token.start.1 >= body_col0
            {
                self.last = token.start.0;
            }
        } else if self.indent == 0 && kind != TokenType::Comment && kind != TokenType::Nl {
            // any other token on the same indentation level ends the
            // previous block as well, except the pseudo-tokens COMMENT and NL
            return Err(EndOfBlock);
        }
        Ok(())
    }
}

/// `len(inspect.getblock(lines))`: how many of `lines` (each with its line
/// ending, as `file.readlines()` gives them) make up the block that starts
/// at `lines[0]`.
///
/// Returns `Err` where Python raises, i.e. for a `tokenize.TokenError`
/// reached before the block ends. Never panics; runs in time roughly linear
/// in the size of the input.
pub fn getblock(lines: &[&str]) -> Result<usize, GetBlockError> {
    let mut finder = BlockFinder::new();
    for item in Tokenizer::for_blocks(lines) {
        match item {
            Ok(token) => {
                if finder.tokeneater(&token).is_err() {
                    break;
                }
            }
            Err(error) if error.is_indentation_error() => break,
            Err(error) => {
                return Err(GetBlockError {
                    message: format!("{}: {}", error.python_class(), error.message()),
                    line: error.row,
                    col: error.col,
                });
            }
        }
    }
    Ok(finder.last.min(lines.len()))
}

/// The start line `inspect.findsource` returns for a code object whose
/// `co_firstlineno - 1` is `co_firstlineno_0based`: it walks back from there
/// to the first line matching
/// `^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)`
/// (with `re.match`), stopping at line 0 without looking at it.
///
/// `Err` where Python raises `OSError`: no lines at all ("could not get
/// source code"), or a start past the end ("lineno is out of bounds").
pub fn find_function_start(lines: &[&str], co_firstlineno_0based: usize) -> Result<usize, GetBlockError> {
    if lines.is_empty() {
        return Err(GetBlockError {
            message: "OSError: could not get source code".to_owned(),
            line: co_firstlineno_0based + 1,
            col: 0,
        });
    }
    let mut lnum = co_firstlineno_0based;
    while lnum > 0 {
        let Some(line) = lines.get(lnum) else {
            return Err(GetBlockError {
                message: "OSError: lineno is out of bounds".to_owned(),
                line: lnum + 1,
                col: 0,
            });
        };
        if matches_function_start(line) {
            break;
        }
        lnum -= 1;
    }
    Ok(lnum)
}

/// `re.match(r'^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)', line)`
/// with Python's Unicode `\s` and `\w`.
pub fn matches_function_start(line: &str) -> bool {
    let chars: Vec<char> = line.chars().collect();
    let is_space = |i: usize| chars.get(i).is_some_and(|&c| is_py_whitespace(c));
    let has_at = |i: usize, word: &str| word.chars().enumerate().all(|(k, c)| chars.get(i + k) == Some(&c));

    // `\s*` is greedy and none of what follows it can match whitespace, so
    // backtracking into it never helps.
    let mut indent = 0;
    while is_space(indent) {
        indent += 1;
    }
    // ^(\s*def\s)
    if has_at(indent, "def") && is_space(indent + 3) {
        return true;
    }
    // (\s*async\s+def\s)
    if has_at(indent, "async") && is_space(indent + 5) {
        let mut i = indent + 6;
        while is_space(i) {
            i += 1;
        }
        if has_at(i, "def") && is_space(i + 3) {
            return true;
        }
    }
    // (.*(?<!\w)lambda(:|\s)): `.` matches anything but "\n", so "lambda"
    // must start at or before the first newline.
    let first_newline = chars.iter().position(|&c| c == '\n').unwrap_or(chars.len());
    for p in 0..=first_newline {
        if has_at(p, "lambda")
            && (p == 0 || !is_py_word(chars[p - 1]))
            && (chars.get(p + 6) == Some(&':') || is_space(p + 6))
        {
            return true;
        }
    }
    // ^(\s*@)
    chars.get(indent) == Some(&'@')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits like `file.readlines()`: after each `"\n"` only.
    fn readlines(src: &str) -> Vec<&str> {
        src.split_inclusive('\n').collect()
    }

    fn block(src: &str) -> Result<usize, GetBlockError> {
        getblock(&readlines(src))
    }

    // Expected values below were obtained from CPython 3.11.7's
    // `len(inspect.getblock(lines))`.

    #[test]
    fn decorator_with_nested_parentheses_over_lines() {
        let src = "@dec(\n    a=(1,\n       2),\n    b=[\n3],\n)\n@other\ndef f(x):\n    return x\n\ny = 1\n";
        assert_eq!(block(src), Ok(9));
    }

    #[test]
    fn decorator_without_args() {
        assert_eq!(block("@staticmethod\ndef f():\n    pass\nx = 1\n"), Ok(3));
    }

    #[test]
    fn trailing_comments() {
        // A comment at least as indented as the body is kept (even after a
        // blank line); a shallower one is not, and later deeper ones are
        // kept only while the block goes on.
        let src = "def f():\n    x = 1\n    # trailing at body indent\n\n        # deeper\n  # shallower\n# col0\ndef g(): pass\n";
        assert_eq!(block(src), Ok(5));
        assert_eq!(block("def f():\n    x = 1\n# col0\n    # body\nx = 2\n"), Ok(4));
    }

    #[test]
    fn method_in_class() {
        let src = "    @property\n    def f(self):\n        return 1\n\n    def g(self):\n        pass\n";
        assert_eq!(block(src), Ok(3));
    }

    #[test]
    fn tabs() {
        let src = "def f():\n\tif x:\n\t\treturn 1\n        return 2\n\treturn 3\nx = 1\n";
        assert_eq!(block(src), Ok(5));
        // unindent to a column that matches no level: IndentationError is
        // swallowed and the block ends at the last NEWLINE.
        assert_eq!(block("def f():\n        x = 1\n    y = 2\n"), Ok(2));
    }

    #[test]
    fn backslash_continuation() {
        assert_eq!(block("def f(a, \\\n      b):\n    return a + \\\n2\nz = 3\n"), Ok(4));
    }

    #[test]
    fn triple_quoted_string_with_def_class_and_dedented_text() {
        let src = "def f():\n    s = '''\ndef g():\n  pass\nclass C:\n'''\n    return s\nclass D: pass\n";
        assert_eq!(block(src), Ok(7));
    }

    #[test]
    fn class_one_liner() {
        assert_eq!(block("class X: ...\nclass Y: ...\n"), Ok(1));
    }

    #[test]
    fn file_without_final_newline() {
        assert_eq!(block("def f():\n    return 1"), Ok(2));
        assert_eq!(block("def f(): return 1"), Ok(1));
    }

    #[test]
    fn lambda_assignment() {
        assert_eq!(block("f = lambda x: (x +\n   1)\ny = 2\n"), Ok(2));
    }

    #[test]
    fn token_errors_propagate() {
        let e = block("def f():\n    s = '''abc\n").unwrap_err();
        assert_eq!(e.message, "TokenError: EOF in multi-line string");
        assert_eq!((e.line, e.col), (2, 8));
        let e = block("def f(:\n    x = (1,\n").unwrap_err();
        assert_eq!(e.message, "TokenError: EOF in multi-line statement");
        assert_eq!((e.line, e.col), (3, 0));
        // An unmatched closing bracket makes every later line a continuation
        // line, so no DEDENT ever ends the block.
        let e = block("def f():\n    x = 1)\n    y = 2\nz = 3\n").unwrap_err();
        assert_eq!((e.message.as_str(), e.line), ("TokenError: EOF in multi-line statement", 5));
        // ...but an error past the end of the block is never reached.
        assert_eq!(block("def f():\n    pass\nx = (\n"), Ok(2));
    }

    #[test]
    fn empty_input() {
        assert_eq!(getblock(&[]), Ok(0));
        assert_eq!(block("\n\n"), Ok(1));
    }

    #[test]
    fn function_start_walk_back() {
        let lines = readlines(
            "x = 1\n@dec(\n    arg)\ndef f():\n    return 1\nasync  def g():\n    y = lambda\n    z = xlambda: 1\n    deffoo = 1\n",
        );
        assert_eq!(find_function_start(&lines, 1), Ok(1)); // decorator line
        assert_eq!(find_function_start(&lines, 2), Ok(1)); // "    arg)" walks back
        assert_eq!(find_function_start(&lines, 4), Ok(3)); // body line walks back to def
        assert_eq!(find_function_start(&lines, 5), Ok(5)); // async  def
        assert_eq!(find_function_start(&lines, 6), Ok(6)); // "lambda\n": \s matches "\n"
        assert_eq!(find_function_start(&lines, 8), Ok(6)); // (?<!\w)lambda, deffoo don't match
        assert_eq!(find_function_start(&lines, 0), Ok(0));
        assert!(find_function_start(&lines, 9).is_err());
        assert!(find_function_start(&[], 0).is_err());
        assert!(matches_function_start("\u{3000}def\u{a0}f(): pass\n"));
        assert!(!matches_function_start("define = 1\n"));
        assert!(!matches_function_start("x = 1\nlambda: 0\n"));
    }

    proptest::proptest! {
        /// Arbitrary text never panics (errors are fine).
        #[test]
        fn arbitrary_text_never_panics(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::any::<String>(),
                    "[ \t\x0c\\\\'\"#@()\\[\\]{}:=a-z0-9.\r\n]{0,20}",
                ],
                0..12,
            ),
            newline in proptest::prelude::any::<bool>(),
            start in 0usize..14,
        ) {
            let lines: Vec<String> = lines
                .into_iter()
                .map(|l| if newline { l + "\n" } else { l })
                .collect();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            let n = getblock(&lines).unwrap_or(0);
            proptest::prop_assert!(n <= lines.len());
            if let Ok(s) = find_function_start(&lines, start) {
                proptest::prop_assert!(s <= start && s < lines.len().max(1));
            }
        }
    }

    /// Inputs on which a naive port (or CPython itself, for the first one)
    /// is quadratic. Expected values are CPython's (checked with shorter
    /// runs of spaces for the first one).
    #[test]
    fn pathological_lines_are_linear() {
        let spaces = format!(" x{}$\n", " ".repeat(200_000));
        let escapes = format!(" x = '{}\n", "\\a".repeat(100_000));
        let deep = format!(" {}\n", "(".repeat(100_000));
        let many: Vec<String> = (0..20_000).map(|i| format!("{}x\n", " ".repeat(1 + i % 50))).collect();
        let mut many: Vec<&str> = many.iter().map(String::as_str).collect();
        many.insert(0, "def f():\n");
        let started = std::time::Instant::now();
        assert_eq!(getblock(&["def f():\n", &spaces, "x\n"]), Ok(2));
        assert_eq!(getblock(&["def f():\n", &escapes, "x\n"]), Ok(2));
        let e = getblock(&["def f():\n", &deep]).unwrap_err();
        assert_eq!((e.message.as_str(), e.line), ("TokenError: EOF in multi-line statement", 3));
        assert_eq!(getblock(&many), Ok(20_001));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// Differential test against the live CPython 3.11: random Python-ish
    /// sources, all checked in one `python3` process.
    mod differential {
        use super::super::*;
        use crate::pytext::tokenize::generate_tokens;
        use proptest::prelude::*;
        use proptest::sample::Index;
        use proptest::strategy::ValueTree;
        use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
        use serde_json::{Value, json};
        use std::io::Write;
        use std::process::{Command, Stdio};

        /// Fragments of source: `(opens a block, lines)`. Each line gets the
        /// current indentation, except lines starting with `|`, which are
        /// used as they are (minus the `|`).
        const FRAGMENTS: &[(bool, &[&str])] = &[
            (false, &["@dec"]),
            (false, &["@dec()"]),
            (false, &["@mod.dec(a, b=(1, 2))"]),
            (false, &["@dec(", "    x=1,", "    y=(2,", "|3),", ")"]),
            (false, &["@ dec  # comment"]),
            (false, &["@property"]),
            (true, &["def f(a, b):"]),
            (true, &["async def f(a):"]),
            (true, &["async  def  spaced():"]),
            (true, &["def f(", "    a,", "    b=[1,", "|        2],", ") -> int:"]),
            (false, &["def f(): return 1"]),
            (true, &["def\tg(x) :  # header comment"]),
            (true, &["class C:"]),
            (true, &["class C(Base, metaclass=M):"]),
            (false, &["class X: ..."]),
            (false, &["pass"]),
            (false, &["return x"]),
            (false, &["x = 1"]),
            (false, &["\"\"\"Docstring.\"\"\""]),
            (false, &["s = \"\"\"", "|def inner():", "|class Fake:", "|  text\"\"\""]),
            (false, &["s = r'''raw", "    @not_a_decorator", "'''  # after"]),
            (false, &["s = '''", "    line\\", "'''"]),
            (false, &["x = (1,", "|2)"]),
            (false, &["x = {", "|  'a': [", "|      1,", "|  ],", "}"]),
            (false, &["x = 1 + \\", "    2"]),
            (false, &["x = \\"]),
            (false, &["# comment"]),
            (false, &["    # deeper comment"]),
            (false, &["  # shallower comment"]),
            (false, &["|# column-0 comment"]),
            (false, &["|"]),
            (false, &[""]),
            (false, &["f = lambda x: x"]),
            (false, &["g = lambda: (", "|1)"]),
            (true, &["if x:"]),
            (true, &["else:"]),
            (true, &["for i in range(3):"]),
            (false, &["y = 'it\\'s' + r\"raw\\\"\" + b'\\x00' + f\"{x}\" + Rb'' + U\"u\""]),
            (false, &["s = 'abc\\", "|def'"]),
            (false, &["s = 'abc\\", "|def"]),
            (false, &["s = \"\\", "|  \\", "|\""]),
            (false, &["x = [1, 2]  # trailing comment"]),
            (false, &[")"]),
            (false, &["("]),
            (false, &["'''unterminated"]),
            (false, &["x = 1; y = 2"]),
            (false, &["lambda_ = 1"]),
            (false, &["xlambda: int = 2"]),
            (false, &["deffoo = 1"]),
            (false, &["|\x0cdef h(): pass"]),
            (false, &["n = 0x_1f + 1_000j + .5e-3 + 1.e5J + 0b102 + 0o17 + 1__2 + 00 + 012"]),
            (false, &["x = a @ b; x @= c; y = a->b != c ... ! ? $ `"]),
            (false, &["café = défini = 1  # non-ASCII é"]),
            (false, &["defé = classλ = lambdaµ = ١٢ + x\u{2028}y"]),
            (false, &["x = f'{a!r:>{w}}' \"\"\"one-line triple\"\"\" '''x''''"]),
            (false, &["x = 1\r"]),
            (false, &["s = 'a\\\r", "|b'"]),
        ];

        const GARBAGE: &[char] = &[
            'a', 'b', 'r', 'f', 'd', 'e', 'l', '_', '0', '1', '.', 'j', ' ', ' ', '\t', '\x0c', '\'', '"', '#', '@',
            '(', ')', '[', ']', '{', '}', '\\', ':', '=', '\n', '\r', 'é', '١', 'λ', '$', '!', '?', '\u{2028}',
            '\u{a0}', '\u{85}', '-', '>', '*', '<', '`', ';', '/', '+', 'x', 'B', 'U',
        ];

        #[derive(Debug, Clone)]
        enum Body {
            Fragment(usize),
            Garbage(String),
        }

        #[derive(Debug, Clone)]
        struct Item {
            body: Body,
            dedent: usize,
            style: Option<usize>,
        }

        #[derive(Debug, Clone)]
        struct Case {
            items: Vec<Item>,
            style: usize,
            no_final_newline: bool,
            start: Index,
            finds: Vec<Index>,
        }

        fn item() -> impl Strategy<Value = Item> {
            let body = prop_oneof![
                12 => (0..FRAGMENTS.len()).prop_map(Body::Fragment),
                1 => proptest::collection::vec(proptest::sample::select(GARBAGE), 0..12)
                    .prop_map(|chars| Body::Garbage(chars.into_iter().collect())),
            ];
            let dedent = prop_oneof![8 => Just(0usize), 3 => Just(1usize), 1 => 2..5usize];
            let style = prop_oneof![12 => Just(None), 1 => (0..6usize).prop_map(Some)];
            (body, dedent, style).prop_map(|(body, dedent, style)| Item { body, dedent, style })
        }

        fn case() -> impl Strategy<Value = Case> {
            (
                proptest::collection::vec(item(), 1..16),
                prop_oneof![6 => Just(0usize), 1 => 1..6usize],
                proptest::bool::weighted(0.2),
                any::<Index>(),
                proptest::collection::vec(any::<Index>(), 3),
            )
                .prop_map(|(items, style, no_final_newline, start, finds)| Case {
                    items,
                    style,
                    no_final_newline,
                    start,
                    finds,
                })
        }

        fn indent(style: usize, level: usize) -> String {
            let unit = match style {
                0 => "    ",
                1 => "  ",
                2 => "\t",
                3 => "   ",
                4 => " \t",
                _ => "\x0c    ",
            };
            unit.repeat(level)
        }

        fn render(case: &Case) -> Vec<String> {
            let mut lines = Vec::new();
            let mut level = 0usize;
            for item in &case.items {
                level = level.saturating_sub(item.dedent);
                let prefix = indent(item.style.unwrap_or(case.style), level);
                match &item.body {
                    Body::Fragment(k) => {
                        let (opens, frag) = FRAGMENTS[*k];
                        for line in frag {
                            match line.strip_prefix('|') {
                                Some(raw) => lines.push(format!("{raw}\n")),
                                None => lines.push(format!("{prefix}{line}\n")),
                            }
                        }
                        if opens {
                            level = (level + 1).min(5);
                        }
                    }
                    Body::Garbage(text) => lines.push(format!("{prefix}{text}\n")),
                }
            }
            if case.no_final_newline
                && let Some(last) = lines.last_mut()
            {
                last.pop();
            }
            lines
        }

        const PYTHON: &str = r#"
import sys, json, inspect, tokenize, linecache
assert sys.version_info[:2] == (3, 11), sys.version

def err(e):
    if isinstance(e, tokenize.TokenError):
        return {"error": "TokenError: " + e.args[0], "pos": list(e.args[1])}
    if isinstance(e, IndentationError):
        return {"error": "IndentationError: " + e.msg, "pos": [e.lineno, e.offset]}
    return {"error": type(e).__name__ + ": " + str(e), "pos": None}

def toks(lines):
    out = []
    try:
        for t in tokenize.generate_tokens(iter(lines).__next__):
            out.append([tokenize.tok_name[t.type], t.string, list(t.start), list(t.end)])
    except Exception as e:
        out.append(err(e))
    return out

def block(lines):
    try:
        return {"n": len(inspect.getblock(lines))}
    except Exception as e:
        return err(e)

# inspect.getmodule returns None for these code objects (no __module__, no
# __name__, a file no module has), after scanning sys.modules on each call:
# skip the scan.
inspect.getmodule = lambda object, _filename=None: None

def find(lines, fl):
    # The real inspect.findsource, on a code object whose file is only in
    # linecache.
    name = "<patchgen-pytext-differential>"
    linecache.cache[name] = (0, None, lines, name)
    try:
        code = compile("pass", name, "exec").replace(co_firstlineno=fl + 1)
        return {"n": inspect.findsource(code)[1]}
    except Exception as e:
        r = err(e)
        r["pos"] = None
        return r
    finally:
        linecache.cache.pop(name, None)

out = []
for c in json.load(sys.stdin):
    lines = c["lines"]
    out.append({
        "tokens": [toks(lines[s:]) for s in c["token_starts"]],
        "blocks": [block(lines[s:]) for s in c["starts"]],
        "finds": [find(lines, f) for f in c["finds"]],
    })
sys.stdout.write(json.dumps(out, separators=(",", ":")))
"#;

        fn rust_tokens(lines: &[&str]) -> Value {
            let (tokens, error) = generate_tokens(lines);
            let mut out: Vec<Value> = tokens
                .iter()
                .map(|t| json!([t.kind.name(), t.string, [t.start.0, t.start.1], [t.end.0, t.end.1]]))
                .collect();
            if let Some(e) = error {
                out.push(json!({
                    "error": format!("{}: {}", e.python_class(), e.message()),
                    "pos": [e.row, e.col],
                }));
            }
            Value::Array(out)
        }

        fn rust_result(result: Result<usize, GetBlockError>, with_pos: bool) -> Value {
            match result {
                Ok(n) => json!({ "n": n }),
                Err(e) if with_pos => json!({ "error": e.message, "pos": [e.line, e.col] }),
                Err(e) => json!({ "error": e.message, "pos": null }),
            }
        }

        fn is_start_candidate(line: &str) -> bool {
            let t = line.trim_start_matches(crate::pytext::tokenize::is_py_whitespace);
            ["@", "def", "class", "async"].iter().any(|p| t.starts_with(p)) || line.contains("lambda")
        }

        #[test]
        fn getblock_matches_cpython() {
            let count: usize = std::env::var("PYTEXT_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(512);
            let mut runner = match std::env::var("PYTEXT_DIFF_SEED").ok().and_then(|s| s.parse::<u64>().ok()) {
                Some(seed) => {
                    let mut bytes = [0u8; 32];
                    bytes[..8].copy_from_slice(&seed.to_le_bytes());
                    TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
                }
                None => TestRunner::deterministic(),
            };
            let strategy = case();
            let mut sources = Vec::with_capacity(count);
            let mut requests = Vec::with_capacity(count);
            for _ in 0..count {
                let case = strategy.new_tree(&mut runner).expect("generate a case").current();
                let lines = render(&case);
                let n = lines.len();
                let random_start = case.start.index(n);
                let mut starts: Vec<usize> = (0..n).filter(|&i| is_start_candidate(&lines[i])).collect();
                starts.push(random_start);
                let finds: Vec<usize> = case.finds.iter().map(|f| f.index(n + 2)).collect();
                requests.push(json!({
                    "lines": lines,
                    "token_starts": [0, random_start],
                    "starts": starts,
                    "finds": finds,
                }));
                sources.push(lines);
            }

            let python_started = std::time::Instant::now();
            let mut child = Command::new("python3")
                .args(["-c", PYTHON])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("python3 (CPython 3.11) must be installed for this test");
            let input = serde_json::to_vec(&requests).unwrap();
            child.stdin.take().unwrap().write_all(&input).unwrap();
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "python3 failed: {}", String::from_utf8_lossy(&output.stderr));
            let expected: Vec<Value> = serde_json::from_slice(&output.stdout).expect("python's JSON");
            let python_time = python_started.elapsed();
            assert_eq!(expected.len(), count);

            let mut failures = Vec::new();
            let (mut blocks, mut errors, mut finds) = (0, 0, 0);
            for ((request, lines), python) in requests.iter().zip(&sources).zip(&expected) {
                let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
                let indices = |key: &str| -> Vec<usize> {
                    request[key].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect()
                };
                let mut check = |what: String, rust: Value, python: &Value| {
                    if &rust != python {
                        failures.push(format!("{what} of {lines:?}:\n  python: {python}\n  rust:   {rust}"));
                    }
                };
                for (k, s) in indices("token_starts").into_iter().enumerate() {
                    check(format!("tokens from line {s}"), rust_tokens(&lines[s..]), &python["tokens"][k]);
                }
                for (k, s) in indices("starts").into_iter().enumerate() {
                    let rust = rust_result(getblock(&lines[s..]), true);
                    blocks += 1;
                    errors += usize::from(rust.get("error").is_some());
                    check(format!("getblock from line {s}"), rust, &python["blocks"][k]);
                }
                for (k, f) in indices("finds").into_iter().enumerate() {
                    finds += 1;
                    check(
                        format!("findsource walk-back from line {f}"),
                        rust_result(find_function_start(&lines, f), false),
                        &python["finds"][k],
                    );
                }
            }
            eprintln!(
                "{count} sources, {blocks} getblock calls ({errors} raising), \
                 {finds} findsource walk-backs; python3 took {python_time:.2?}"
            );
            assert!(
                failures.is_empty(),
                "{} mismatches with CPython; first ones:\n{}",
                failures.len(),
                failures[..failures.len().min(5)].join("\n\n")
            );
        }
    }
}
