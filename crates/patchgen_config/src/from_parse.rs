//! Answers read off a config file's own syntax tree, where CPython would
//! tokenize (`inspect.getblock`) or the reference would parse again
//! (`textwrap.dedent` then `ast.parse`). Each answer is given only when
//! conditions checked here make it provably the same; `None`/`false` means
//! "do it the long way". `source_tests.rs` checks both against the long
//! way over generated modules.

use ruff_python_ast::Stmt;
use ruff_python_ast::visitor::Visitor;
use ruff_text_size::Ranged;

use super::{ParsedFile, keyword_line};
use patchgen_python::pytext;

/// `inspect.getblock(lines[lnum..])` (the number of lines) for a function,
/// from the parse; `lines` are the file's `linecache` lines.
///
/// CPython 3.11's `BlockFinder` ends a function's block at the `DEDENT`
/// back to the `def`'s level; the block's last line is that of the last
/// `NEWLINE` token, which is the statement's last line, or of a later
/// comment-only line indented at least as deep as the body (the column of
/// its first `INDENT`) and coming before the next line of code. So when
/// `lines[lnum]` is the first line of a function statement of the file
/// whose body starts on a line of its own, the block is that statement
/// plus such comment lines, provided the tokenizer sees the logical lines
/// the parser saw. Conditions for that:
/// - `\n` is the file's only line break and the line before `lnum` does not
///   end in a backslash (the statement starts a logical line);
/// - no tab, form feed or NUL, and no backslash continuation, in the
///   statement and the lines after it up to the next line of code
///   (indentation is then a count of spaces, and line joining is the
///   parser's; tabs inside the statement are excluded defensively);
/// - every f-string and t-string in the statement ends where 3.11's
///   tokenizer ends it (at its first unescaped closing quote, a one-quote
///   string also at a line end): 3.11 does not know PEP 701/750 strings,
///   and a quote nested in one would end it early and unbalance brackets;
/// - the next line of code is indented less than the body.
pub(super) fn block_len(file: &ParsedFile, lines: &[&str], lnum: usize) -> Option<usize> {
    if !file.only_newline_breaks() || lnum >= lines.len() || (lnum > 0 && lines[lnum - 1].ends_with("\\\n")) {
        return None;
    }
    let function = find_function_at(file, lnum + 1)?;
    let first = function.body.first()?;
    let body_line = file.line_of(first.start());
    let body_col0 = usize::from(first.start()).checked_sub(file.line_start(body_line))?;
    let body_text = lines.get(body_line - 1)?;
    // (The line test is defensive: a body on the header's line has the
    // header before it.)
    if body_line <= lnum + 1 || !body_text.as_bytes().get(..body_col0)?.iter().all(|&b| b == b' ') {
        return None;
    }
    let end_line = file.line_of(function.end());
    if end_line > lines.len() {
        return None;
    }
    let statement = file.line_range(lnum + 1, end_line).as_bytes();
    if memchr::memchr3(b'\t', b'\x0c', 0, statement).is_some()
        || memchr::memmem::find(statement, b"\\\n").is_some()
        || statement.ends_with(b"\\")
        || (has_prefixed_string(statement) && !interpolated_strings_tokenize_alike(file, function))
    {
        return None;
    }
    let mut last = end_line;
    for (i, line) in lines.iter().enumerate().skip(end_line) {
        let rest = line.trim_start_matches(' ');
        let col = line.len() - rest.len();
        match rest.as_bytes().first() {
            None | Some(b'\n') => {}
            Some(b'#') if !tokenizes_apart(line) => {
                if col >= body_col0 {
                    last = i + 1;
                }
            }
            _ if col < body_col0 && !tokenizes_apart(line) => break,
            _ => return None,
        }
    }
    Some(last - lnum)
}

/// A line where the tokenizer's view may differ from a plain reading:
/// tabs and form feeds (indentation columns), NUL, a backslash
/// continuation.
fn tokenizes_apart(line: &str) -> bool {
    line.contains(['\t', '\x0c', '\0']) || line.ends_with("\\\n")
}

/// Whether `text` may hold an f-string or t-string: `f`/`t` (any case)
/// right before a quote or before an `r` before it (false alarms, such as
/// a name ending in `f` before a string, only cost a closer look).
fn has_prefixed_string(text: &[u8]) -> bool {
    let interpolated = |b: u8| matches!(b, b'f' | b'F' | b't' | b'T');
    memchr::memchr2_iter(b'"', b'\'', text).any(|i| {
        (i >= 1 && interpolated(text[i - 1]))
            || (i >= 2 && matches!(text[i - 1], b'r' | b'R') && interpolated(text[i - 2]))
    })
}

/// Whether every f-string and t-string part of `function` ends where
/// 3.11's tokenizer, which takes it for a plain string from its first
/// quote on, ends it.
fn interpolated_strings_tokenize_alike(file: &ParsedFile, function: &ruff_python_ast::StmtFunctionDef) -> bool {
    struct Check<'f> {
        text: &'f str,
        alike: bool,
    }
    impl<'a> Visitor<'a> for Check<'_> {
        // Nested strings are inside the outer one's token: not walked.
        fn visit_f_string(&mut self, f: &'a ruff_python_ast::FString) {
            self.alike &= plain_string_end(&self.text[f.range]) == Some(f.range.len().into());
        }
        fn visit_t_string(&mut self, t: &'a ruff_python_ast::TString) {
            self.alike &= plain_string_end(&self.text[t.range]) == Some(t.range.len().into());
        }
    }
    let mut check = Check { text: &file.text, alike: true };
    // `walk_stmt` for a function definition.
    for decorator in &function.decorator_list {
        check.visit_decorator(decorator);
    }
    if let Some(type_params) = &function.type_params {
        check.visit_type_params(type_params);
    }
    check.visit_parameters(&function.parameters);
    if let Some(returns) = &function.returns {
        check.visit_annotation(returns);
    }
    check.visit_body(&function.body);
    check.alike
}

/// Where 3.11's tokenizer ends a string token that starts at the first
/// quote of `text` (after any prefix), as a byte offset into `text`; `None`
/// when it does not end it (a one-quote string reaching a line end).
fn plain_string_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let open = memchr::memchr2(b'"', b'\'', bytes)?;
    let q = bytes[open];
    let triple = bytes[open..].starts_with(&[q, q, q]);
    let mut i = open + if triple { 3 } else { 1 };
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' if !triple => return None,
            b if b == q && (!triple || bytes[i..].starts_with(&[q, q, q])) => {
                return Some(i + if triple { 3 } else { 1 });
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether `textwrap.dedent` of the text made of `lines[block]` (and, when
/// `has_leading`, column-0 comment lines above them) certainly parses as a
/// module holding a function definition, judged from the file's own parse
/// instead of parsing again.
///
/// It does when the block is a function statement of the file (from its
/// first decorator or `def` line to its last line) followed by nothing but
/// blank and comment lines, the statement's first line does not continue a
/// backslash line, there are no tabs, `\n` is the only line break, and
/// every non-blank line starts with the first line's indentation (which
/// is empty when there are leading comments): dedent then removes exactly
/// that indentation (spaces only) from every line, which moves the
/// statement to column 0 and keeps every indentation relation inside it
/// and the ends of its strings and brackets, so it parses as it did in the
/// file. (The backslash and trailing-line conditions are defensive: valid
/// code does not seem to reach them.) `false` only means "parse it to know".
pub(super) fn dedents_to_function(
    file: &ParsedFile,
    lines: &[&str],
    block: std::ops::Range<usize>,
    has_leading: bool,
) -> bool {
    if !file.only_newline_breaks() || block.is_empty() || block.end > lines.len() {
        return false;
    }
    let Some(function) = find_function_at(file, block.start + 1) else { return false };
    let last_line = file.line_of(function.end());
    if last_line > block.end {
        return false;
    }
    if lines[last_line..block.end].iter().any(|l| {
        let t = pytext::strip(l);
        !t.is_empty() && !t.starts_with('#')
    }) {
        return false;
    }
    if block.start > 0 && lines[block.start - 1].ends_with("\\\n") {
        return false;
    }
    let first = lines[block.start];
    let indent = &first[..first.len() - first.trim_start_matches(' ').len()];
    if has_leading && !indent.is_empty() {
        return false;
    }
    lines[block.clone()].iter().all(|l| {
        let blank = l.bytes().all(|b| matches!(b, b' ' | b'\n'));
        !l.contains('\t') && (blank || l.starts_with(indent))
    })
}

/// The function statement whose first line (its first decorator's `@`,
/// else its keyword) is `line` (1-based), at any depth; its first
/// decorator must also start on that line (`co_firstlineno`).
pub(super) fn find_function_at(file: &ParsedFile, line: usize) -> Option<&ruff_python_ast::StmtFunctionDef> {
    fn walk<'f>(file: &'f ParsedFile, body: &'f [Stmt], line: usize) -> Option<&'f ruff_python_ast::StmtFunctionDef> {
        body.iter().find_map(|stmt| match stmt {
            Stmt::FunctionDef(f) => {
                let first = match f.decorator_list.first() {
                    Some(d) if file.line_of(d.start()) == file.line_of(d.expression.start()) => file.line_of(d.start()),
                    Some(_) => return None,
                    None => keyword_line(file, f.name.start()),
                };
                if first == line { Some(f) } else { walk(file, &f.body, line) }
            }
            Stmt::ClassDef(c) => walk(file, &c.body, line),
            Stmt::If(s) => {
                walk(file, &s.body, line).or_else(|| s.elif_else_clauses.iter().find_map(|c| walk(file, &c.body, line)))
            }
            Stmt::For(s) => walk(file, &s.body, line).or_else(|| walk(file, &s.orelse, line)),
            Stmt::While(s) => walk(file, &s.body, line).or_else(|| walk(file, &s.orelse, line)),
            Stmt::With(s) => walk(file, &s.body, line),
            Stmt::Try(s) => walk(file, &s.body, line)
                .or_else(|| {
                    s.handlers.iter().find_map(|h| {
                        let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                        walk(file, &h.body, line)
                    })
                })
                .or_else(|| walk(file, &s.orelse, line))
                .or_else(|| walk(file, &s.finalbody, line)),
            Stmt::Match(s) => s.cases.iter().find_map(|c| walk(file, &c.body, line)),
            _ => None,
        })
    }
    walk(file, file.body(), line)
}
