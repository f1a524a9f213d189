//! A Python file read and parsed once: its text after universal-newline
//! decoding (as Python reads it), the ruff syntax tree, a line index, the
//! Python line views (`str.splitlines`, `file.readlines()`), and per-file
//! memos any layer above can hang its own derived data on.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
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

/// How much text [`ParsedFile::parse_shared`] keeps parsed, in bytes of
/// the texts (a parse holds its text and a tree several times its size):
/// every upstream module a run reads, many times over (the 29 configs of
/// VeOmni's tree read 18 modules, 1.2 MB of text), yet a bound for a
/// language server that lives for days.
pub const SHARED_PARSE_BUDGET: usize = 16 << 20;

/// Files parsed through [`ParsedFile::parse_shared`], by path: the text each
/// was parsed from and the parse, the least recently used dropped once the
/// texts pass the budget.
struct ParseCache {
    budget: usize,
    /// The bytes of the texts kept.
    bytes: usize,
    /// A use counter: an entry's last use orders the evictions.
    clock: u64,
    entries: HashMap<PathBuf, CachedParse>,
}

struct CachedParse {
    text: String,
    file: Arc<ParsedFile>,
    used: u64,
}

impl ParseCache {
    fn new(budget: usize) -> ParseCache {
        ParseCache { budget, bytes: 0, clock: 0, entries: HashMap::new() }
    }

    /// The parse of `path` from this very text, if kept (and now the most
    /// recently used).
    fn get(&mut self, path: &Path, text: &str) -> Option<Arc<ParsedFile>> {
        self.clock += 1;
        let entry = self.entries.get_mut(path).filter(|e| e.text == text)?;
        entry.used = self.clock;
        Some(Arc::clone(&entry.file))
    }

    /// Keep `file`, parsed from `text`, as `path`'s parse (replacing an
    /// older text's), then drop the least recently used past the budget. A
    /// text over the whole budget is not kept.
    fn insert(&mut self, path: PathBuf, text: &str, file: Arc<ParsedFile>) {
        if let Some(old) = self.entries.remove(&path) {
            self.bytes -= old.text.len();
        }
        if text.len() > self.budget {
            return;
        }
        self.clock += 1;
        self.bytes += text.len();
        self.entries.insert(path, CachedParse { text: text.to_string(), file, used: self.clock });
        while self.bytes > self.budget {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(p, _)| p.clone()) else { break };
            if let Some(gone) = self.entries.remove(&oldest) {
                self.bytes -= gone.text.len();
            }
        }
    }
}

static SHARED: OnceLock<Mutex<ParseCache>> = OnceLock::new();

fn shared() -> std::sync::MutexGuard<'static, ParseCache> {
    let cache = SHARED.get_or_init(|| Mutex::new(ParseCache::new(SHARED_PARSE_BUDGET)));
    cache.lock().unwrap_or_else(|e| e.into_inner())
}

impl ParsedFile {
    /// [`ParsedFile::parse`], memoised for the process: the file parsed
    /// before from the same path and the very same text is that parse
    /// again (compared byte for byte, so never a stale one). For files that
    /// outlive one run, the upstream modules: the language server's checks
    /// and the rounds and lints of `patchgen new` parse them once. Only the
    /// last text of each path is kept, the least recently used paths are
    /// dropped past [`SHARED_PARSE_BUDGET`]; a syntax error is not kept.
    pub fn parse_shared(path: PathBuf, raw_text: &str) -> Result<Arc<ParsedFile>, SyntaxProblem> {
        if let Some(file) = shared().get(&path, raw_text) {
            return Ok(file);
        }
        let file = Arc::new(ParsedFile::parse(path.clone(), raw_text)?);
        shared().insert(path, raw_text, Arc::clone(&file));
        Ok(file)
    }

    /// The bytes of text [`ParsedFile::parse_shared`] keeps parsed now (at
    /// most [`SHARED_PARSE_BUDGET`]).
    pub fn shared_parse_bytes() -> usize {
        shared().bytes
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

    #[test]
    fn the_cache_drops_the_least_recently_used_past_its_budget() {
        let parse = |name: &str, text: &str| Arc::new(ParsedFile::parse(PathBuf::from(name), text).unwrap());
        let text = |n: usize| format!("x = {}\n", "9".repeat(n));
        let mut cache = ParseCache::new(100);
        for (i, name) in ["a.py", "b.py", "c.py"].into_iter().enumerate() {
            let t = text(26 + i);
            cache.insert(PathBuf::from(name), &t, parse(name, &t));
        }
        assert_eq!(cache.bytes, 31 + 32 + 33);
        // `a` used last: `b` goes when `d` comes.
        assert!(cache.get(Path::new("a.py"), &text(26)).is_some());
        let d = text(30);
        cache.insert(PathBuf::from("d.py"), &d, parse("d.py", &d));
        assert!(cache.bytes <= 100, "{} bytes kept", cache.bytes);
        let mut kept: Vec<&str> = cache.entries.keys().map(|p| p.to_str().unwrap()).collect();
        kept.sort_unstable();
        assert_eq!(kept, ["a.py", "c.py", "d.py"]);
        assert_eq!(cache.bytes, 31 + 33 + 35);
        // Another text at a path replaces the old one's bytes; a text over
        // the whole budget is not kept, and takes the old one with it.
        let a2 = text(10);
        cache.insert(PathBuf::from("a.py"), &a2, parse("a.py", &a2));
        assert_eq!(cache.bytes, 15 + 33 + 35);
        let big = text(200);
        cache.insert(PathBuf::from("a.py"), &big, parse("a.py", &big));
        assert_eq!(cache.bytes, 33 + 35);
        assert!(cache.get(Path::new("a.py"), &big).is_none());
    }

    #[test]
    fn the_shared_cache_stays_under_its_budget() {
        // Modules of 1 MiB each (one string: quick to parse), twice the
        // budget's worth: never more kept than the budget.
        let body = format!("x = '{}'\n", "a".repeat(1 << 20));
        for i in 0..2 * SHARED_PARSE_BUDGET / (1 << 20) {
            let path = PathBuf::from(format!("/shared-parse-budget/m{i}.py"));
            ParsedFile::parse_shared(path, &body).unwrap();
            assert!(ParsedFile::shared_parse_bytes() <= SHARED_PARSE_BUDGET);
        }
        assert!(ParsedFile::shared_parse_bytes() > SHARED_PARSE_BUDGET / 2, "the cache keeps what fits");
    }
}
