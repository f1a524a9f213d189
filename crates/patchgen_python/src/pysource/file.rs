//! A Python file read and parsed once: its text after universal-newline
//! decoding (as Python reads it), the ruff syntax tree, a line index, the
//! Python line views (`str.splitlines`, `file.readlines()`), and per-file
//! memos any layer above can hang its own derived data on.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use ruff_python_ast::{ModModule, Stmt};
use ruff_text_size::{TextRange, TextSize};

use crate::pytext;
use patchgen_diagnostics::Location;

/// A Python file read and parsed once, shared by everything that uses it.
pub struct ParsedFile {
    pub path: PathBuf,
    /// Text after universal-newline decoding, as Python reads it.
    pub text: String,
    /// The syntax tree. The parser's token list is not kept: it takes a
    /// large share of a parse's memory and almost nothing reads it (the
    /// one reader that wants comments asks [`ParsedFile::parse_with_tokens`]).
    pub module: ModModule,
    /// Byte offset where each line starts (lines counted by `\n`).
    line_starts: Vec<u32>,
    /// Derived data computed once per file, one slot per type (see
    /// [`ParsedFile::memo`]).
    memos: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    /// `str.splitlines(True)` of the text, as byte ranges, with where each
    /// line's break starts, and whether `\n` is its only line break
    /// (computed once: every config of a model reads the same upstream).
    splitlines: OnceLock<SplitLines>,
    /// Whether `\n` is the only line break (often wanted without the lines).
    newline_only: OnceLock<bool>,
}

/// Each line's (start, start of its line break, end) and whether every
/// break is `\n`.
type SplitLines = (Vec<(u32, u32, u32)>, bool);

impl std::fmt::Debug for ParsedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ParsedFile({})", self.path.display())
    }
}

/// Why a Python file could not be parsed: its first syntax error.
#[derive(Debug)]
pub struct SyntaxProblem {
    /// 1-based line of the error.
    pub line: usize,
    pub message: String,
}

/// Files parsed through [`ParsedFile::parse_shared`], by path: the text each
/// was parsed from, and the parse.
type SharedParses = Mutex<HashMap<PathBuf, (String, Arc<ParsedFile>)>>;
static SHARED: OnceLock<SharedParses> = OnceLock::new();

impl ParsedFile {
    /// [`ParsedFile::parse`], memoised for the process: the file parsed
    /// before from the same path and the very same text is that parse
    /// again (compared byte for byte, so never a stale one). For files that
    /// outlive one run, the upstream modules: the language server's checks
    /// and the rounds and lints of `patchgen new` parse them once. Only the
    /// last text of each path is kept; a syntax error is not kept.
    pub fn parse_shared(path: PathBuf, raw_text: &str) -> Result<Arc<ParsedFile>, SyntaxProblem> {
        let shared = SHARED.get_or_init(SharedParses::default);
        let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((text, file)) = lock().get(&path)
            && text == raw_text
        {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(ParsedFile::parse(path.clone(), raw_text)?);
        lock().insert(path, (raw_text.to_string(), Arc::clone(&file)));
        Ok(file)
    }

    /// Parse `raw_text` (already decoded to `str`); `Err` carries the first
    /// syntax error.
    pub fn parse(path: PathBuf, raw_text: &str) -> Result<ParsedFile, SyntaxProblem> {
        Self::parse_keeping(path, raw_text, false).map(|(file, _)| file)
    }

    /// [`ParsedFile::parse`], and the parser's tokens (which a
    /// `ParsedFile` does not keep) for a reader that wants the comments.
    pub fn parse_with_tokens(
        path: PathBuf,
        raw_text: &str,
    ) -> Result<(ParsedFile, Vec<ruff_python_ast::token::Token>), SyntaxProblem> {
        Self::parse_keeping(path, raw_text, true).map(|(file, tokens)| (file, tokens.unwrap_or_default()))
    }

    fn parse_keeping(
        path: PathBuf,
        raw_text: &str,
        tokens: bool,
    ) -> Result<(ParsedFile, Option<Vec<ruff_python_ast::token::Token>>), SyntaxProblem> {
        let text = pytext::universal_newlines(raw_text).into_owned();
        let line_starts = line_starts(&text);
        match ruff_python_parser::parse_module(&text) {
            Ok(parsed) => {
                let kept = tokens.then(|| parsed.tokens().to_vec());
                let file = ParsedFile {
                    path,
                    text,
                    module: parsed.into_syntax(),
                    line_starts,
                    memos: Mutex::default(),
                    splitlines: OnceLock::new(),
                    newline_only: OnceLock::new(),
                };
                Ok((file, kept))
            }
            Err(err) => {
                let offset: usize = err.location.start().into();
                let line = line_starts.partition_point(|&s| s as usize <= offset).max(1);
                Err(SyntaxProblem { line, message: err.error.to_string() })
            }
        }
    }

    /// The module's top-level statements.
    pub fn body(&self) -> &[Stmt] {
        &self.module.body
    }

    /// 1-based line of a byte offset (lines counted by "\n", as CPython's
    /// tokenizer counts them after universal-newline decoding).
    pub fn line_of(&self, offset: TextSize) -> usize {
        let offset = u32::from(offset);
        self.line_starts.partition_point(|&s| s <= offset)
    }

    /// 1-based (line, column) of a byte offset; the column counts
    /// characters, as ruff and rustc print it.
    pub fn line_column(&self, offset: TextSize) -> (usize, usize) {
        let mut offset = (u32::from(offset) as usize).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_of(TextSize::from(offset as u32));
        let start = self.line_start(line);
        (line, self.text[start..offset].chars().count() + 1)
    }

    /// Where `range` is, for a diagnostic (1-based, end exclusive).
    pub fn location(&self, range: TextRange) -> Location {
        let start = self.line_column(range.start());
        let end = self.line_column(range.end().max(range.start()));
        Location::range(self.path.clone(), start, end)
    }

    /// How many lines the text has (counted by `\n`; a last line without
    /// one counts).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Byte offset where 1-based `line` starts.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts[line - 1] as usize
    }

    /// The text of 1-based lines `first..=last` (lines counted by `\n`),
    /// with the last one's `\n` if it has one.
    pub fn line_range(&self, first: usize, last: usize) -> &str {
        let end = self.line_starts.get(last).map_or(self.text.len(), |&s| s as usize);
        &self.text[self.line_start(first)..end]
    }

    /// The memo of type `T` for this file, created empty on first use:
    /// layers above keep what they derive from a file here (the config
    /// reader keeps the `inspect` sources of its objects), so it is
    /// computed once however many users share the file.
    pub fn memo<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut memos = self.memos.lock().unwrap_or_else(|e| e.into_inner());
        let slot = memos.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(T::default()));
        Arc::clone(slot).downcast::<T>().expect("a memo slot holds its own type")
    }

    fn splitlines_ranges(&self) -> &SplitLines {
        self.splitlines.get_or_init(|| {
            let offset = |l: &str| (l.as_ptr() as usize - self.text.as_ptr() as usize) as u32;
            let ranges = pytext::splitlines_keepends(&self.text)
                .iter()
                .map(|l| {
                    let start = offset(l);
                    let content = pytext::without_line_break(l).len() as u32;
                    (start, start + content, start + l.len() as u32)
                })
                .collect();
            (ranges, pytext::only_newline_breaks(&self.text))
        })
    }

    /// `str.splitlines()` of the text.
    pub fn splitlines(&self) -> Vec<&str> {
        self.splitlines_ranges().0.iter().map(|&(a, b, _)| &self.text[a as usize..b as usize]).collect()
    }

    /// `str.splitlines(True)` of the text.
    pub fn splitlines_keepends(&self) -> Vec<&str> {
        self.splitlines_ranges().0.iter().map(|&(a, _, c)| &self.text[a as usize..c as usize]).collect()
    }

    /// Whether `\n` is the text's only line break (so the parse's line
    /// numbers index [`ParsedFile::splitlines`]).
    pub fn only_newline_breaks(&self) -> bool {
        *self.newline_only.get_or_init(|| match self.splitlines.get() {
            Some((_, only)) => *only,
            None => pytext::only_newline_breaks(&self.text),
        })
    }

    /// The file's lines as `file.readlines()` gives them (split after "\n").
    pub fn readlines(&self) -> Vec<&str> {
        let mut lines: Vec<&str> =
            self.line_starts.windows(2).map(|w| &self.text[w[0] as usize..w[1] as usize]).collect();
        let last = *self.line_starts.last().expect("line 1 always starts") as usize;
        if last < self.text.len() {
            lines.push(&self.text[last..]);
        }
        lines
    }
}

/// Byte offsets where the lines of `text` start (after each `\n`): the
/// workspace's one line index, `patchgen_diagnostics::LineIndex`.
pub fn line_starts(text: &str) -> Vec<u32> {
    patchgen_diagnostics::LineIndex::new(text).into_starts()
}

/// Python's `lineno` of a `def`/`class` statement: the line of its keyword
/// (`async` for `async def`), found by walking back from the name.
pub fn keyword_line(file: &ParsedFile, name_start: TextSize) -> usize {
    let text = file.text.as_bytes();
    let mut i = u32::from(name_start) as usize;
    // Skip whitespace and backslash continuations before the name, then the keyword.
    let skip_ws = |mut i: usize| {
        loop {
            while i > 0 && matches!(text[i - 1], b' ' | b'\t' | b'\x0c') {
                i -= 1;
            }
            if i >= 2 && text[i - 1] == b'\n' && text[i - 2] == b'\\' {
                i -= 2;
                continue;
            }
            return i;
        }
    };
    i = skip_ws(i);
    while i > 0 && text[i - 1].is_ascii_alphabetic() {
        i -= 1;
    }
    let kw_start = i;
    let j = skip_ws(i);
    if j >= 5 && &text[j - 5..j] == b"async" {
        return file.line_of(TextSize::from((j - 5) as u32));
    }
    file.line_of(TextSize::from(kw_start as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_text_size::Ranged;

    #[test]
    fn locations_count_characters_and_agree_with_diagnostics() {
        let src = "x = 1\nçé = f(\n    y)\r\nz = 'ü'\n";
        let file = ParsedFile::parse("m.py".into(), src).unwrap();
        for stmt in file.body() {
            let loc = file.location(stmt.range());
            let expected = Location::from_offsets("m.py", &file.text, stmt.start().into(), stmt.end().into());
            assert_eq!(loc, expected);
        }
        // `y` on line 3, column 5; the call ends after `)` (column 7).
        let loc = file.location(file.body()[1].range());
        assert_eq!((loc.line, loc.column, loc.end), (2, 1, Some((3, 7))));
        // 'ç' is two bytes: `=` is the 4th character of line 2.
        let eq = file.text.find(" = f").unwrap() + 1;
        assert_eq!(file.line_column(TextSize::from(eq as u32)), (2, 4));
    }

    #[test]
    fn syntax_errors_name_their_line() {
        // Line 2, as `compile()` reports it.
        let err = ParsedFile::parse("m.py".into(), "a = 1\nb = = 2\n").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn memos_are_per_type_and_shared() {
        #[derive(Default)]
        struct Count(std::sync::atomic::AtomicUsize);
        let file = ParsedFile::parse("m.py".into(), "").unwrap();
        file.memo::<Count>().0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(file.memo::<Count>().0.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(file.memo::<Mutex<Vec<u8>>>().lock().unwrap().is_empty());
    }
}

#[cfg(test)]
mod shared_tests {
    use super::*;

    #[test]
    fn a_shared_parse_is_reused_only_for_the_same_path_and_text() {
        let path = PathBuf::from("/shared-parse-test/m.py");
        let a = ParsedFile::parse_shared(path.clone(), "x = 1\n").unwrap();
        let again = ParsedFile::parse_shared(path.clone(), "x = 1\n").unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        // Other text at that path: parsed anew, and it replaces the old one.
        let b = ParsedFile::parse_shared(path.clone(), "x = 2\n").unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(b.text, "x = 2\n");
        let back = ParsedFile::parse_shared(path.clone(), "x = 1\n").unwrap();
        assert!(!Arc::ptr_eq(&a, &back) && back.text == "x = 1\n");
        // The same text at another path is another file (its locations name it).
        let elsewhere = ParsedFile::parse_shared(PathBuf::from("/shared-parse-test/n.py"), "x = 1\n").unwrap();
        assert_eq!(elsewhere.path, PathBuf::from("/shared-parse-test/n.py"));
        // A syntax error is returned, not kept.
        assert!(ParsedFile::parse_shared(path.clone(), "x = = 1\n").is_err());
        assert!(Arc::ptr_eq(&back, &ParsedFile::parse_shared(path, "x = 1\n").unwrap()));
    }
}
