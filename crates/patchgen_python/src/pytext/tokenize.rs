//! A faithful port of CPython 3.11's pure-Python tokenizer
//! (`tokenize.generate_tokens` in `Lib/tokenize.py`, 3.11.7).
//!
//! Only what `inspect.getblock` needs is kept from each token (type, string,
//! start and end), but the token stream itself — types, strings and
//! `(row, col)` positions, including `ERRORTOKEN`s, the implicit trailing
//! `NEWLINE`, `DEDENT`s and `ENDMARKER` — is meant to be identical to
//! Python's. Rows are 1-based indices into the lines handed to the tokenizer
//! and columns count code points, as in Python.
//!
//! Quirks of the pure-Python tokenizer that are reproduced on purpose:
//! - an unmatched closing bracket does not raise: `parenlev` goes negative,
//!   newlines keep being `NEWLINE`, following lines are treated as
//!   continuation lines (no `INDENT`/`DEDENT`), and reaching the end of the
//!   input raises `TokenError("EOF in multi-line statement")`;
//! - an empty string handed back by `readline` is end of input, even in the
//!   middle of the list;
//! - a line made only of spaces/tabs/form feeds without a line ending ends
//!   the input;
//! - `needcont` is not reset when a backslash-continued single-quoted string
//!   turns into an `ERRORTOKEN`, so a later multi-line triple-quoted string
//!   is turned into an `ERRORTOKEN` too unless its lines end in a backslash;
//! - characters the regular expressions cannot match become one-character
//!   `ERRORTOKEN`s, starting *before* any skipped whitespace;
//! - `\w` and `str.isidentifier` follow Python's Unicode 14.0 tables.

use std::collections::VecDeque;
use std::fmt;

/// `tokenize.tabsize`.
pub const TABSIZE: usize = 8;

/// The token types `generate_tokens` can produce (no `ENCODING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenType {
    Endmarker,
    Name,
    Number,
    String,
    Newline,
    Indent,
    Dedent,
    Op,
    Comment,
    Nl,
    ErrorToken,
}

impl TokenType {
    /// The name `token.tok_name` gives the type.
    pub fn name(self) -> &'static str {
        match self {
            TokenType::Endmarker => "ENDMARKER",
            TokenType::Name => "NAME",
            TokenType::Number => "NUMBER",
            TokenType::String => "STRING",
            TokenType::Newline => "NEWLINE",
            TokenType::Indent => "INDENT",
            TokenType::Dedent => "DEDENT",
            TokenType::Op => "OP",
            TokenType::Comment => "COMMENT",
            TokenType::Nl => "NL",
            TokenType::ErrorToken => "ERRORTOKEN",
        }
    }
}

/// One `TokenInfo`, without its `line` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenType,
    pub string: String,
    /// `(row, col)`: 1-based row, 0-based column in code points.
    pub start: (usize, usize),
    pub end: (usize, usize),
}

/// Which exception the Python tokenizer raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenizeErrorKind {
    /// `TokenError("EOF in multi-line string", strstart)`.
    EofInMultiLineString,
    /// `TokenError("EOF in multi-line statement", (lnum, 0))`.
    EofInMultiLineStatement,
    /// `IndentationError("unindent does not match any outer indentation level")`.
    UnindentMismatch,
}

/// An exception raised by the tokenizer, with the position Python reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizeError {
    pub kind: TokenizeErrorKind,
    /// 1-based row (index into the tokenized lines, plus one).
    pub row: usize,
    /// Column in code points.
    pub col: usize,
}

impl TokenizeError {
    /// The exception's message, as Python spells it.
    pub fn message(&self) -> &'static str {
        match self.kind {
            TokenizeErrorKind::EofInMultiLineString => "EOF in multi-line string",
            TokenizeErrorKind::EofInMultiLineStatement => "EOF in multi-line statement",
            TokenizeErrorKind::UnindentMismatch => "unindent does not match any outer indentation level",
        }
    }

    /// The Python exception class: `TokenError` or `IndentationError`.
    pub fn python_class(&self) -> &'static str {
        match self.kind {
            TokenizeErrorKind::UnindentMismatch => "IndentationError",
            _ => "TokenError",
        }
    }

    pub fn is_indentation_error(&self) -> bool {
        self.kind == TokenizeErrorKind::UnindentMismatch
    }
}

impl fmt::Display for TokenizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (line {}, column {})", self.python_class(), self.message(), self.row, self.col)
    }
}

impl std::error::Error for TokenizeError {}

/// The regex `endpats` picks to finish a string: `Single`, `Double`,
/// `Single3` or `Double3`.
#[derive(Debug, Clone, Copy)]
struct EndPat {
    quote: char,
    triple: bool,
}

/// A string that continues over lines (`contstr`, `strstart`, `endprog`).
#[derive(Debug)]
struct ContStr {
    text: String,
    start: (usize, usize),
    endprog: EndPat,
}

/// `tokenize.generate_tokens(iter(lines).__next__)` as an iterator.
///
/// Yields `Ok(token)`s, then either ends (after `ENDMARKER`) or yields one
/// `Err` (the exception the generator raises) and ends. It reads one line at
/// a time, lazily, like the generator, so a consumer that stops early never
/// sees an error that later lines would cause.
pub struct Tokenizer<'a> {
    lines: &'a [&'a str],
    next_index: usize,
    /// The line read by the previous `readline` call (`line`, becoming
    /// `last_line` on the next one).
    line: &'a str,
    lnum: usize,
    parenlev: i64,
    continued: bool,
    needcont: bool,
    indents: Vec<usize>,
    contstr: Option<ContStr>,
    queue: VecDeque<Token>,
    pending_error: Option<TokenizeError>,
    finished: bool,
    /// Whether tokens carry their text. `getblock` only looks at the text
    /// of `@`, `def`, `class` and `lambda`; the others get an empty string.
    keep_strings: bool,
    /// The current line's code points (reused from line to line).
    chars: Vec<char>,
}

/// Tokenizes all of `lines`, collecting the tokens before the error if any.
pub fn generate_tokens(lines: &[&str]) -> (Vec<Token>, Option<TokenizeError>) {
    let mut tokens = Vec::new();
    for item in Tokenizer::new(lines) {
        match item {
            Ok(token) => tokens.push(token),
            Err(error) => return (tokens, Some(error)),
        }
    }
    (tokens, None)
}

impl<'a> Tokenizer<'a> {
    /// `lines` are what `readline` returns one after the other (each
    /// normally ending in `"\n"`); after the last one `readline` returns `""`.
    pub fn new(lines: &'a [&'a str]) -> Self {
        Tokenizer {
            lines,
            next_index: 0,
            line: "",
            lnum: 0,
            parenlev: 0,
            continued: false,
            needcont: false,
            indents: vec![0],
            contstr: None,
            queue: VecDeque::new(),
            pending_error: None,
            finished: false,
            keep_strings: true,
            chars: Vec::new(),
        }
    }

    /// A tokenizer for `inspect.getblock`: the same tokens, but only those
    /// whose text `BlockFinder` compares (`@`, `def`, `class`, `lambda`)
    /// carry it.
    pub fn for_blocks(lines: &'a [&'a str]) -> Self {
        Tokenizer { keep_strings: false, ..Tokenizer::new(lines) }
    }

    /// Queue a token whose text is `chars` (built only when kept).
    fn push_chars(&mut self, kind: TokenType, chars: &[char], start: (usize, usize), end: (usize, usize)) {
        let keep = self.keep_strings
            || matches!(chars, ['@'] | ['d', 'e', 'f'] | ['c', 'l', 'a', 's', 's'] | ['l', 'a', 'm', 'b', 'd', 'a']);
        let string = if keep { chars.iter().collect() } else { String::new() };
        self.push(kind, string, start, end);
    }

    /// Start the text of a string continued over lines.
    fn cont_text(&self, chars: &[char]) -> String {
        if self.keep_strings { chars.iter().collect() } else { String::new() }
    }

    fn readline(&mut self) -> &'a str {
        match self.lines.get(self.next_index) {
            Some(line) => {
                self.next_index += 1;
                line
            }
            None => "",
        }
    }

    fn push(&mut self, kind: TokenType, string: String, start: (usize, usize), end: (usize, usize)) {
        self.queue.push_back(Token { kind, string, start, end });
    }

    fn fail(&mut self, kind: TokenizeErrorKind, row: usize, col: usize) {
        self.pending_error = Some(TokenizeError { kind, row, col });
    }

    /// The code after the `while True` loop: implicit `NEWLINE`, the
    /// remaining `DEDENT`s and `ENDMARKER`.
    fn finish(&mut self, last_line: &str) {
        let lnum = self.lnum;
        if let Some(last_char) = last_line.chars().next_back()
            && last_char != '\r'
            && last_char != '\n'
            && !last_line.trim_matches(is_py_whitespace).starts_with('#')
        {
            let len = last_line.chars().count();
            self.push(TokenType::Newline, String::new(), (lnum - 1, len), (lnum - 1, len + 1));
        }
        for _ in 1..self.indents.len() {
            self.push(TokenType::Dedent, String::new(), (lnum, 0), (lnum, 0));
        }
        self.push(TokenType::Endmarker, String::new(), (lnum, 0), (lnum, 0));
        self.finished = true;
    }

    /// One iteration of the generator's `while True` loop: reads one line
    /// and queues its tokens (or records the error / the end of input).
    fn step(&mut self) {
        let new_line = self.readline();
        let last_line = std::mem::replace(&mut self.line, new_line);
        self.lnum += 1;
        let mut line = std::mem::take(&mut self.chars);
        line.clear();
        if new_line.is_ascii() {
            line.extend(new_line.bytes().map(char::from));
        } else {
            line.extend(new_line.chars());
        }
        self.step_line(&line, new_line, last_line);
        self.chars = line;
    }

    /// `step` for the line just read (`line` its code points).
    fn step_line(&mut self, line: &[char], new_line: &'a str, last_line: &'a str) {
        let lnum = self.lnum;
        let max = line.len();
        let mut pos = 0;

        if let Some(mut cont) = self.contstr.take() {
            // continued string
            if line.is_empty() {
                let (row, col) = cont.start;
                self.fail(TokenizeErrorKind::EofInMultiLineString, row, col);
                return;
            }
            if let Some(end) = end_match(cont.endprog, line, 0) {
                pos = end;
                if self.keep_strings {
                    cont.text.extend(&line[..end]);
                }
                self.push(TokenType::String, cont.text, cont.start, (lnum, end));
                self.needcont = false;
            } else if self.needcont && !line.ends_with(&['\\', '\n']) && !line.ends_with(&['\\', '\r', '\n']) {
                if self.keep_strings {
                    cont.text.push_str(new_line);
                }
                self.push(TokenType::ErrorToken, cont.text, cont.start, (lnum, max));
                return;
            } else {
                if self.keep_strings {
                    cont.text.push_str(new_line);
                }
                self.contstr = Some(cont);
                return;
            }
        } else if self.parenlev == 0 && !self.continued {
            // new statement
            if line.is_empty() {
                self.finish(last_line);
                return;
            }
            let mut column = 0;
            while pos < max {
                match line[pos] {
                    ' ' => column += 1,
                    '\t' => column = (column / TABSIZE + 1) * TABSIZE,
                    '\x0c' => column = 0,
                    _ => break,
                }
                pos += 1;
            }
            if pos == max {
                self.finish(last_line);
                return;
            }

            if matches!(line[pos], '#' | '\r' | '\n') {
                // skip comments or blank lines
                if line[pos] == '#' {
                    let mut end = max;
                    while end > pos && matches!(line[end - 1], '\r' | '\n') {
                        end -= 1;
                    }
                    self.push_chars(TokenType::Comment, &line[pos..end], (lnum, pos), (lnum, end));
                    pos = end;
                }
                self.push_chars(TokenType::Nl, &line[pos..], (lnum, pos), (lnum, max));
                return;
            }

            if column > *self.indents.last().unwrap_or(&0) {
                // count indents or dedents
                self.indents.push(column);
                self.push_chars(TokenType::Indent, &line[..pos], (lnum, 0), (lnum, pos));
            }
            while let Some(&top) = self.indents.last()
                && column < top
            {
                if !self.indents.contains(&column) {
                    self.fail(TokenizeErrorKind::UnindentMismatch, lnum, pos);
                    return;
                }
                self.indents.pop();
                self.push(TokenType::Dedent, String::new(), (lnum, pos), (lnum, pos));
            }
        } else {
            // continued statement
            if line.is_empty() {
                self.fail(TokenizeErrorKind::EofInMultiLineStatement, lnum, 0);
                return;
            }
            self.continued = false;
        }

        while pos < max {
            let (start, end) = match pseudo_match(line, pos) {
                Ok(span) => span,
                Err(failed_at) => {
                    // Python yields `ERRORTOKEN line[pos]` and retries at
                    // `pos + 1`; when `line[pos]` is whitespace the retry
                    // skips to the same failing character, so emit the
                    // whole run at once (linear instead of quadratic).
                    let last = failed_at.min(max - 1);
                    for (i, c) in line.iter().enumerate().take(last + 1).skip(pos) {
                        self.push(TokenType::ErrorToken, c.to_string(), (lnum, i), (lnum, i + 1));
                    }
                    pos = failed_at + 1;
                    continue;
                }
            };
            let (spos, epos) = ((lnum, start), (lnum, end));
            pos = end;
            if start == end {
                continue;
            }
            let token = &line[start..end];
            let initial = token[0];

            if initial.is_ascii_digit() || (initial == '.' && token != ['.'] && token != ['.', '.', '.']) {
                // ordinary number
                self.push_chars(TokenType::Number, token, spos, epos);
            } else if initial == '\r' || initial == '\n' {
                let kind = if self.parenlev > 0 { TokenType::Nl } else { TokenType::Newline };
                self.push_chars(kind, token, spos, epos);
            } else if initial == '#' {
                self.push_chars(TokenType::Comment, token, spos, epos);
            } else if is_triple_quoted(token) {
                let endprog = EndPat { quote: token[token.len() - 1], triple: true };
                if let Some(end) = end_match(endprog, line, pos) {
                    // all on one line
                    pos = end;
                    self.push_chars(TokenType::String, &line[start..pos], spos, (lnum, pos));
                } else {
                    // multiple lines
                    self.contstr = Some(ContStr { text: self.cont_text(&line[start..]), start: spos, endprog });
                    break;
                }
            } else if is_single_quoted(&token[..1])
                || is_single_quoted(&token[..token.len().min(2)])
                || is_single_quoted(&token[..token.len().min(3)])
            {
                if token[token.len() - 1] == '\n' {
                    // continued string
                    let quote = token.iter().take(3).copied().find(|&c| c == '\'' || c == '"').unwrap_or('\'');
                    self.contstr = Some(ContStr {
                        text: self.cont_text(&line[start..]),
                        start: spos,
                        endprog: EndPat { quote, triple: false },
                    });
                    self.needcont = true;
                    break;
                }
                // ordinary string
                self.push_chars(TokenType::String, token, spos, epos);
            } else if is_identifier_start(initial) {
                // ordinary name
                self.push_chars(TokenType::Name, token, spos, epos);
            } else if initial == '\\' {
                // continued stmt
                self.continued = true;
            } else {
                match initial {
                    '(' | '[' | '{' => self.parenlev += 1,
                    ')' | ']' | '}' => self.parenlev -= 1,
                    _ => {}
                }
                self.push_chars(TokenType::Op, token, spos, epos);
            }
        }
    }
}

impl Iterator for Tokenizer<'_> {
    type Item = Result<Token, TokenizeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(token) = self.queue.pop_front() {
                return Some(Ok(token));
            }
            if let Some(error) = self.pending_error.take() {
                self.finished = true;
                return Some(Err(error));
            }
            if self.finished {
                return None;
            }
            // Every step consumes a line; once the input is exhausted the
            // step finishes or fails, so this loop terminates.
            self.step();
        }
    }
}

/// Matches `PseudoToken` (`Whitespace + group(PseudoExtras, Number, Funny,
/// ContStr, Name)`) at `pos`; returns the span of group 1, or, when nothing
/// matches, where the failing character is (after the whitespace, always
/// before the end of the line since `\Z` matches there).
fn pseudo_match(line: &[char], pos: usize) -> Result<(usize, usize), usize> {
    let mut start = pos;
    while start < line.len() && matches!(line[start], ' ' | '\x0c' | '\t') {
        start += 1;
    }
    // Backtracking into the whitespace cannot help: no alternative can start
    // with a space, tab or form feed.
    // An ASCII letter that cannot begin a string prefix, or `_`, can only
    // begin a name (the other alternatives start with digits, `.`,
    // operators, quotes, `#`, `\\` or a prefix letter).
    if let Some(&c) = line.get(start)
        && (c == '_' || (c.is_ascii_alphabetic() && !matches!(c, 'b' | 'B' | 'r' | 'R' | 'u' | 'U' | 'f' | 'F')))
    {
        return Ok((start, name(line, start).expect("a word character")));
    }
    // Likewise ASCII punctuation other than `.`, `\\`, `#` and quotes, and
    // line ends, can only begin an operator or a newline (`Funny`).
    if let Some(&c) = line.get(start)
        && ((c.is_ascii_punctuation() && !matches!(c, '.' | '\\' | '#' | '\'' | '"')) || c == '\n' || c == '\r')
    {
        return funny(line, start).map(|end| (start, end)).ok_or(start);
    }
    let end = pseudo_extras(line, start)
        .or_else(|| number(line, start))
        .or_else(|| funny(line, start))
        .or_else(|| cont_str(line, start))
        .or_else(|| name(line, start))
        .ok_or(start)?;
    Ok((start, end))
}

fn at(line: &[char], i: usize) -> Option<char> {
    line.get(i).copied()
}

/// `PseudoExtras = group(r'\\\r?\n|\Z', Comment, Triple)`.
fn pseudo_extras(line: &[char], i: usize) -> Option<usize> {
    let n = line.len();
    if i == n {
        return Some(i); // \Z
    }
    match line[i] {
        '\\' => match (at(line, i + 1), at(line, i + 2)) {
            (Some('\n'), _) => Some(i + 2),
            (Some('\r'), Some('\n')) => Some(i + 3),
            _ => None,
        },
        '#' => {
            let mut j = i + 1;
            while j < n && line[j] != '\r' && line[j] != '\n' {
                j += 1;
            }
            Some(j)
        }
        _ => {
            // Triple = group(StringPrefix + "'''", StringPrefix + '"""')
            let (k, quote) = string_prefix(line, i)?;
            let q = i + k;
            (at(line, q + 1) == Some(quote) && at(line, q + 2) == Some(quote)).then_some(q + 3)
        }
    }
}

/// Whether `prefix` is in `_all_string_prefixes()`.
fn is_valid_prefix(prefix: &[char]) -> bool {
    let lower: Vec<char> = prefix.iter().map(|c| c.to_ascii_lowercase()).collect();
    matches!(lower.as_slice(), [] | ['b'] | ['r'] | ['u'] | ['f'] | ['b', 'r'] | ['r', 'b'] | ['f', 'r'] | ['r', 'f'])
}

/// `StringPrefix` followed by a quote at `i`: the prefix length and the
/// quote. Only one prefix length can be followed by a quote.
fn string_prefix(line: &[char], i: usize) -> Option<(usize, char)> {
    (0..=2).find_map(|k| {
        let quote = at(line, i + k)?;
        ((quote == '\'' || quote == '"') && is_valid_prefix(line.get(i..i + k)?)).then_some((k, quote))
    })
}

/// `token in single_quoted`: a valid prefix plus one quote.
fn is_single_quoted(token: &[char]) -> bool {
    match token.split_last() {
        Some((&quote, prefix)) => (quote == '\'' || quote == '"') && is_valid_prefix(prefix),
        None => false,
    }
}

/// `token in triple_quoted`: a valid prefix plus three equal quotes.
fn is_triple_quoted(token: &[char]) -> bool {
    let n = token.len();
    n >= 3 && {
        let quote = token[n - 1];
        (quote == '\'' || quote == '"')
            && token[n - 2] == quote
            && token[n - 3] == quote
            && is_valid_prefix(&token[..n - 3])
    }
}

/// `ContStr`: a single-quoted string that ends on this line or continues
/// with a backslash-newline.
fn cont_str(line: &[char], start: usize) -> Option<usize> {
    let n = line.len();
    let (k, quote) = string_prefix(line, start)?;
    // r"'[^\n'\\]*(?:\\.[^\n'\\]*)*" + group("'", r'\\\r?\n')
    let mut i = start + k + 1;
    let mut last_pair = None;
    while i < n {
        let c = line[i];
        if c == quote {
            return Some(i + 1);
        }
        if c == '\n' {
            // Backtracking: give back a final `\\\r` pair so that
            // `\\\r?\n` can match it.
            return (i >= 2 && last_pair == Some(i - 2) && line[i - 1] == '\r').then_some(i + 1);
        }
        if c == '\\' {
            match at(line, i + 1) {
                None => return None,
                Some('\n') => return Some(i + 2),
                Some(_) => {
                    last_pair = Some(i);
                    i += 2;
                    continue;
                }
            }
        }
        i += 1;
    }
    None
}

/// `endprog.match(line, pos)` for `Single`, `Double`, `Single3` and
/// `Double3`; returns the end of the match.
fn end_match(endprog: EndPat, line: &[char], mut i: usize) -> Option<usize> {
    let n = line.len();
    let quote = endprog.quote;
    while i < n {
        let c = line[i];
        if c == '\\' {
            // `\\.`: `.` matches anything but a newline.
            match at(line, i + 1) {
                Some(next) if next != '\n' => {
                    i += 2;
                    continue;
                }
                _ => return None,
            }
        }
        if c == quote {
            if !endprog.triple {
                return Some(i + 1);
            }
            if at(line, i + 1) == Some(quote) && at(line, i + 2) == Some(quote) {
                return Some(i + 3);
            }
        }
        i += 1;
    }
    None
}

/// `Funny = group(r'\r?\n', Special)`.
fn funny(line: &[char], i: usize) -> Option<usize> {
    match (at(line, i)?, at(line, i + 1)) {
        ('\n', _) => return Some(i + 1),
        ('\r', Some('\n')) => return Some(i + 2),
        _ => {}
    }
    // Special: the operators sorted in reverse, so that the longest one
    // wins (every operator that starts another sorts after it). They are
    // ASCII.
    let (c0, c1, c2) = (line[i], at(line, i + 1), at(line, i + 2));
    let three = matches!(
        (c0, c1, c2),
        ('*', Some('*'), Some('='))
            | ('.', Some('.'), Some('.'))
            | ('/', Some('/'), Some('='))
            | ('<', Some('<'), Some('='))
            | ('>', Some('>'), Some('='))
    );
    let two = || {
        matches!(
            (c0, c1),
            ('!' | '%' | '&' | '*' | '+' | '-' | '/' | ':' | '<' | '=' | '>' | '@' | '^' | '|', Some('='))
                | ('*', Some('*'))
                | ('-', Some('>'))
                | ('/', Some('/'))
                | ('<', Some('<'))
                | ('>', Some('>'))
        )
    };
    let one = || {
        matches!(
            c0,
            '%' | '&'
                | '('
                | ')'
                | '*'
                | '+'
                | ','
                | '-'
                | '.'
                | '/'
                | ':'
                | ';'
                | '<'
                | '='
                | '>'
                | '@'
                | '['
                | ']'
                | '^'
                | '{'
                | '|'
                | '}'
                | '~'
        )
    };
    if three {
        Some(i + 3)
    } else if two() {
        Some(i + 2)
    } else if one() {
        Some(i + 1)
    } else {
        None
    }
}

/// `Name = r'\w+'`.
fn name(line: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    while j < line.len() && is_py_word(line[j]) {
        j += 1;
    }
    (j > i).then_some(j)
}

/// `[0-9](?:_?[0-9])*`
fn digit_part(line: &[char], i: usize) -> Option<usize> {
    if !at(line, i)?.is_ascii_digit() {
        return None;
    }
    let mut j = i + 1;
    loop {
        match (at(line, j), at(line, j + 1)) {
            (Some(c), _) if c.is_ascii_digit() => j += 1,
            (Some('_'), Some(c)) if c.is_ascii_digit() => j += 2,
            _ => return Some(j),
        }
    }
}

/// `Exponent = r'[eE][-+]?[0-9](?:_?[0-9])*'`
fn exponent(line: &[char], i: usize) -> Option<usize> {
    if !matches!(at(line, i)?, 'e' | 'E') {
        return None;
    }
    let j = if matches!(at(line, i + 1), Some('-' | '+')) { i + 2 } else { i + 1 };
    digit_part(line, j)
}

/// `Pointfloat = group(r'[0-9](?:_?[0-9])*\.(?:[0-9](?:_?[0-9])*)?',
/// r'\.[0-9](?:_?[0-9])*') + maybe(Exponent)`
fn point_float(line: &[char], i: usize) -> Option<usize> {
    let end = match digit_part(line, i) {
        Some(d) if at(line, d) == Some('.') => digit_part(line, d + 1).unwrap_or(d + 1),
        Some(_) => return None,
        None if at(line, i) == Some('.') => digit_part(line, i + 1)?,
        None => return None,
    };
    Some(exponent(line, end).unwrap_or(end))
}

/// `Floatnumber = group(Pointfloat, Expfloat)`
fn float_number(line: &[char], i: usize) -> Option<usize> {
    point_float(line, i).or_else(|| exponent(line, digit_part(line, i)?))
}

/// `(?:_?[digits])+` after a two-character radix prefix.
fn radix_digits(line: &[char], i: usize, is_digit: fn(char) -> bool) -> Option<usize> {
    let mut j = i;
    loop {
        match (at(line, j), at(line, j + 1)) {
            (Some(c), _) if is_digit(c) => j += 1,
            (Some('_'), Some(c)) if is_digit(c) => j += 2,
            _ => break,
        }
    }
    (j > i).then_some(j)
}

/// `Intnumber = group(Hexnumber, Binnumber, Octnumber, Decnumber)`
fn int_number(line: &[char], i: usize) -> Option<usize> {
    let first = at(line, i)?;
    if first == '0' {
        let radix: Option<fn(char) -> bool> = match at(line, i + 1) {
            Some('x' | 'X') => Some(|c| c.is_ascii_hexdigit()),
            Some('b' | 'B') => Some(|c| c == '0' || c == '1'),
            Some('o' | 'O') => Some(|c| ('0'..='7').contains(&c)),
            _ => None,
        };
        if let Some(end) = radix.and_then(|is_digit| radix_digits(line, i + 2, is_digit)) {
            return Some(end);
        }
        // r'0(?:_?0)*'
        return radix_digits(line, i, |c| c == '0');
    }
    if first.is_ascii_digit() {
        return digit_part(line, i);
    }
    None
}

/// `Number = group(Imagnumber, Floatnumber, Intnumber)`, where
/// `Imagnumber = group(r'[0-9](?:_?[0-9])*[jJ]', Floatnumber + r'[jJ]')`.
///
/// Every repetition is greedy and nothing after a shorter match could be a
/// `j`/`J`, so taking the longest match of each piece is what the regex
/// engine ends up with.
fn number(line: &[char], i: usize) -> Option<usize> {
    let imag = |end: usize| matches!(at(line, end), Some('j' | 'J')).then_some(end + 1);
    let digits = digit_part(line, i);
    if let Some(end) = digits.and_then(imag) {
        return Some(end);
    }
    let float = float_number(line, i);
    if let Some(end) = float.and_then(imag) {
        return Some(end);
    }
    float.or_else(|| int_number(line, i))
}

/// Python's `\w` (`str.isalnum()` or `_`), for `str` patterns.
pub fn is_py_word(c: char) -> bool {
    if c.is_ascii() { c.is_ascii_alphanumeric() || c == '_' } else { in_ranges(WORD_RANGES, c) }
}

/// Python's `\s` for `str` patterns, which is also what `str.strip()` and
/// `str.split()` strip (`Py_UNICODE_ISSPACE`).
pub fn is_py_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\x0b'
            | '\x0c'
            | '\r'
            | '\x1c'..='\x1f'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// `c.isidentifier()` for a character `c` that matches `\w` (the only case
/// the tokenizer asks about).
fn is_identifier_start(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic() || c == '_'
    } else {
        is_py_word(c) && !in_ranges(WORD_NOT_IDENTIFIER_START_RANGES, c)
    }
}

fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

// Generated with CPython 3.11.7 (Unicode 14.0.0) from
//     [c for c in map(chr, range(0x80, 0x110000)) if re.match(r'\w', c)]
// and the subset of those with `not c.isidentifier()`, as inclusive ranges
// of code points. `tests::unicode_tables_match_python` checks them.
#[rustfmt::skip]
const WORD_RANGES: &[(u32, u32)] = &[
    (0x000AA, 0x000AA), (0x000B2, 0x000B3), (0x000B5, 0x000B5), (0x000B9, 0x000BA), (0x000BC, 0x000BE),
    (0x000C0, 0x000D6), (0x000D8, 0x000F6), (0x000F8, 0x002C1), (0x002C6, 0x002D1), (0x002E0, 0x002E4),
    (0x002EC, 0x002EC), (0x002EE, 0x002EE), (0x00370, 0x00374), (0x00376, 0x00377), (0x0037A, 0x0037D),
    (0x0037F, 0x0037F), (0x00386, 0x00386), (0x00388, 0x0038A), (0x0038C, 0x0038C), (0x0038E, 0x003A1),
    (0x003A3, 0x003F5), (0x003F7, 0x00481), (0x0048A, 0x0052F), (0x00531, 0x00556), (0x00559, 0x00559),
    (0x00560, 0x00588), (0x005D0, 0x005EA), (0x005EF, 0x005F2), (0x00620, 0x0064A), (0x00660, 0x00669),
    (0x0066E, 0x0066F), (0x00671, 0x006D3), (0x006D5, 0x006D5), (0x006E5, 0x006E6), (0x006EE, 0x006FC),
    (0x006FF, 0x006FF), (0x00710, 0x00710), (0x00712, 0x0072F), (0x0074D, 0x007A5), (0x007B1, 0x007B1),
    (0x007C0, 0x007EA), (0x007F4, 0x007F5), (0x007FA, 0x007FA), (0x00800, 0x00815), (0x0081A, 0x0081A),
    (0x00824, 0x00824), (0x00828, 0x00828), (0x00840, 0x00858), (0x00860, 0x0086A), (0x00870, 0x00887),
    (0x00889, 0x0088E), (0x008A0, 0x008C9), (0x00904, 0x00939), (0x0093D, 0x0093D), (0x00950, 0x00950),
    (0x00958, 0x00961), (0x00966, 0x0096F), (0x00971, 0x00980), (0x00985, 0x0098C), (0x0098F, 0x00990),
    (0x00993, 0x009A8), (0x009AA, 0x009B0), (0x009B2, 0x009B2), (0x009B6, 0x009B9), (0x009BD, 0x009BD),
    (0x009CE, 0x009CE), (0x009DC, 0x009DD), (0x009DF, 0x009E1), (0x009E6, 0x009F1), (0x009F4, 0x009F9),
    (0x009FC, 0x009FC), (0x00A05, 0x00A0A), (0x00A0F, 0x00A10), (0x00A13, 0x00A28), (0x00A2A, 0x00A30),
    (0x00A32, 0x00A33), (0x00A35, 0x00A36), (0x00A38, 0x00A39), (0x00A59, 0x00A5C), (0x00A5E, 0x00A5E),
    (0x00A66, 0x00A6F), (0x00A72, 0x00A74), (0x00A85, 0x00A8D), (0x00A8F, 0x00A91), (0x00A93, 0x00AA8),
    (0x00AAA, 0x00AB0), (0x00AB2, 0x00AB3), (0x00AB5, 0x00AB9), (0x00ABD, 0x00ABD), (0x00AD0, 0x00AD0),
    (0x00AE0, 0x00AE1), (0x00AE6, 0x00AEF), (0x00AF9, 0x00AF9), (0x00B05, 0x00B0C), (0x00B0F, 0x00B10),
    (0x00B13, 0x00B28), (0x00B2A, 0x00B30), (0x00B32, 0x00B33), (0x00B35, 0x00B39), (0x00B3D, 0x00B3D),
    (0x00B5C, 0x00B5D), (0x00B5F, 0x00B61), (0x00B66, 0x00B6F), (0x00B71, 0x00B77), (0x00B83, 0x00B83),
    (0x00B85, 0x00B8A), (0x00B8E, 0x00B90), (0x00B92, 0x00B95), (0x00B99, 0x00B9A), (0x00B9C, 0x00B9C),
    (0x00B9E, 0x00B9F), (0x00BA3, 0x00BA4), (0x00BA8, 0x00BAA), (0x00BAE, 0x00BB9), (0x00BD0, 0x00BD0),
    (0x00BE6, 0x00BF2), (0x00C05, 0x00C0C), (0x00C0E, 0x00C10), (0x00C12, 0x00C28), (0x00C2A, 0x00C39),
    (0x00C3D, 0x00C3D), (0x00C58, 0x00C5A), (0x00C5D, 0x00C5D), (0x00C60, 0x00C61), (0x00C66, 0x00C6F),
    (0x00C78, 0x00C7E), (0x00C80, 0x00C80), (0x00C85, 0x00C8C), (0x00C8E, 0x00C90), (0x00C92, 0x00CA8),
    (0x00CAA, 0x00CB3), (0x00CB5, 0x00CB9), (0x00CBD, 0x00CBD), (0x00CDD, 0x00CDE), (0x00CE0, 0x00CE1),
    (0x00CE6, 0x00CEF), (0x00CF1, 0x00CF2), (0x00D04, 0x00D0C), (0x00D0E, 0x00D10), (0x00D12, 0x00D3A),
    (0x00D3D, 0x00D3D), (0x00D4E, 0x00D4E), (0x00D54, 0x00D56), (0x00D58, 0x00D61), (0x00D66, 0x00D78),
    (0x00D7A, 0x00D7F), (0x00D85, 0x00D96), (0x00D9A, 0x00DB1), (0x00DB3, 0x00DBB), (0x00DBD, 0x00DBD),
    (0x00DC0, 0x00DC6), (0x00DE6, 0x00DEF), (0x00E01, 0x00E30), (0x00E32, 0x00E33), (0x00E40, 0x00E46),
    (0x00E50, 0x00E59), (0x00E81, 0x00E82), (0x00E84, 0x00E84), (0x00E86, 0x00E8A), (0x00E8C, 0x00EA3),
    (0x00EA5, 0x00EA5), (0x00EA7, 0x00EB0), (0x00EB2, 0x00EB3), (0x00EBD, 0x00EBD), (0x00EC0, 0x00EC4),
    (0x00EC6, 0x00EC6), (0x00ED0, 0x00ED9), (0x00EDC, 0x00EDF), (0x00F00, 0x00F00), (0x00F20, 0x00F33),
    (0x00F40, 0x00F47), (0x00F49, 0x00F6C), (0x00F88, 0x00F8C), (0x01000, 0x0102A), (0x0103F, 0x01049),
    (0x01050, 0x01055), (0x0105A, 0x0105D), (0x01061, 0x01061), (0x01065, 0x01066), (0x0106E, 0x01070),
    (0x01075, 0x01081), (0x0108E, 0x0108E), (0x01090, 0x01099), (0x010A0, 0x010C5), (0x010C7, 0x010C7),
    (0x010CD, 0x010CD), (0x010D0, 0x010FA), (0x010FC, 0x01248), (0x0124A, 0x0124D), (0x01250, 0x01256),
    (0x01258, 0x01258), (0x0125A, 0x0125D), (0x01260, 0x01288), (0x0128A, 0x0128D), (0x01290, 0x012B0),
    (0x012B2, 0x012B5), (0x012B8, 0x012BE), (0x012C0, 0x012C0), (0x012C2, 0x012C5), (0x012C8, 0x012D6),
    (0x012D8, 0x01310), (0x01312, 0x01315), (0x01318, 0x0135A), (0x01369, 0x0137C), (0x01380, 0x0138F),
    (0x013A0, 0x013F5), (0x013F8, 0x013FD), (0x01401, 0x0166C), (0x0166F, 0x0167F), (0x01681, 0x0169A),
    (0x016A0, 0x016EA), (0x016EE, 0x016F8), (0x01700, 0x01711), (0x0171F, 0x01731), (0x01740, 0x01751),
    (0x01760, 0x0176C), (0x0176E, 0x01770), (0x01780, 0x017B3), (0x017D7, 0x017D7), (0x017DC, 0x017DC),
    (0x017E0, 0x017E9), (0x017F0, 0x017F9), (0x01810, 0x01819), (0x01820, 0x01878), (0x01880, 0x01884),
    (0x01887, 0x018A8), (0x018AA, 0x018AA), (0x018B0, 0x018F5), (0x01900, 0x0191E), (0x01946, 0x0196D),
    (0x01970, 0x01974), (0x01980, 0x019AB), (0x019B0, 0x019C9), (0x019D0, 0x019DA), (0x01A00, 0x01A16),
    (0x01A20, 0x01A54), (0x01A80, 0x01A89), (0x01A90, 0x01A99), (0x01AA7, 0x01AA7), (0x01B05, 0x01B33),
    (0x01B45, 0x01B4C), (0x01B50, 0x01B59), (0x01B83, 0x01BA0), (0x01BAE, 0x01BE5), (0x01C00, 0x01C23),
    (0x01C40, 0x01C49), (0x01C4D, 0x01C7D), (0x01C80, 0x01C88), (0x01C90, 0x01CBA), (0x01CBD, 0x01CBF),
    (0x01CE9, 0x01CEC), (0x01CEE, 0x01CF3), (0x01CF5, 0x01CF6), (0x01CFA, 0x01CFA), (0x01D00, 0x01DBF),
    (0x01E00, 0x01F15), (0x01F18, 0x01F1D), (0x01F20, 0x01F45), (0x01F48, 0x01F4D), (0x01F50, 0x01F57),
    (0x01F59, 0x01F59), (0x01F5B, 0x01F5B), (0x01F5D, 0x01F5D), (0x01F5F, 0x01F7D), (0x01F80, 0x01FB4),
    (0x01FB6, 0x01FBC), (0x01FBE, 0x01FBE), (0x01FC2, 0x01FC4), (0x01FC6, 0x01FCC), (0x01FD0, 0x01FD3),
    (0x01FD6, 0x01FDB), (0x01FE0, 0x01FEC), (0x01FF2, 0x01FF4), (0x01FF6, 0x01FFC), (0x02070, 0x02071),
    (0x02074, 0x02079), (0x0207F, 0x02089), (0x02090, 0x0209C), (0x02102, 0x02102), (0x02107, 0x02107),
    (0x0210A, 0x02113), (0x02115, 0x02115), (0x02119, 0x0211D), (0x02124, 0x02124), (0x02126, 0x02126),
    (0x02128, 0x02128), (0x0212A, 0x0212D), (0x0212F, 0x02139), (0x0213C, 0x0213F), (0x02145, 0x02149),
    (0x0214E, 0x0214E), (0x02150, 0x02189), (0x02460, 0x0249B), (0x024EA, 0x024FF), (0x02776, 0x02793),
    (0x02C00, 0x02CE4), (0x02CEB, 0x02CEE), (0x02CF2, 0x02CF3), (0x02CFD, 0x02CFD), (0x02D00, 0x02D25),
    (0x02D27, 0x02D27), (0x02D2D, 0x02D2D), (0x02D30, 0x02D67), (0x02D6F, 0x02D6F), (0x02D80, 0x02D96),
    (0x02DA0, 0x02DA6), (0x02DA8, 0x02DAE), (0x02DB0, 0x02DB6), (0x02DB8, 0x02DBE), (0x02DC0, 0x02DC6),
    (0x02DC8, 0x02DCE), (0x02DD0, 0x02DD6), (0x02DD8, 0x02DDE), (0x02E2F, 0x02E2F), (0x03005, 0x03007),
    (0x03021, 0x03029), (0x03031, 0x03035), (0x03038, 0x0303C), (0x03041, 0x03096), (0x0309D, 0x0309F),
    (0x030A1, 0x030FA), (0x030FC, 0x030FF), (0x03105, 0x0312F), (0x03131, 0x0318E), (0x03192, 0x03195),
    (0x031A0, 0x031BF), (0x031F0, 0x031FF), (0x03220, 0x03229), (0x03248, 0x0324F), (0x03251, 0x0325F),
    (0x03280, 0x03289), (0x032B1, 0x032BF), (0x03400, 0x04DBF), (0x04E00, 0x0A48C), (0x0A4D0, 0x0A4FD),
    (0x0A500, 0x0A60C), (0x0A610, 0x0A62B), (0x0A640, 0x0A66E), (0x0A67F, 0x0A69D), (0x0A6A0, 0x0A6EF),
    (0x0A717, 0x0A71F), (0x0A722, 0x0A788), (0x0A78B, 0x0A7CA), (0x0A7D0, 0x0A7D1), (0x0A7D3, 0x0A7D3),
    (0x0A7D5, 0x0A7D9), (0x0A7F2, 0x0A801), (0x0A803, 0x0A805), (0x0A807, 0x0A80A), (0x0A80C, 0x0A822),
    (0x0A830, 0x0A835), (0x0A840, 0x0A873), (0x0A882, 0x0A8B3), (0x0A8D0, 0x0A8D9), (0x0A8F2, 0x0A8F7),
    (0x0A8FB, 0x0A8FB), (0x0A8FD, 0x0A8FE), (0x0A900, 0x0A925), (0x0A930, 0x0A946), (0x0A960, 0x0A97C),
    (0x0A984, 0x0A9B2), (0x0A9CF, 0x0A9D9), (0x0A9E0, 0x0A9E4), (0x0A9E6, 0x0A9FE), (0x0AA00, 0x0AA28),
    (0x0AA40, 0x0AA42), (0x0AA44, 0x0AA4B), (0x0AA50, 0x0AA59), (0x0AA60, 0x0AA76), (0x0AA7A, 0x0AA7A),
    (0x0AA7E, 0x0AAAF), (0x0AAB1, 0x0AAB1), (0x0AAB5, 0x0AAB6), (0x0AAB9, 0x0AABD), (0x0AAC0, 0x0AAC0),
    (0x0AAC2, 0x0AAC2), (0x0AADB, 0x0AADD), (0x0AAE0, 0x0AAEA), (0x0AAF2, 0x0AAF4), (0x0AB01, 0x0AB06),
    (0x0AB09, 0x0AB0E), (0x0AB11, 0x0AB16), (0x0AB20, 0x0AB26), (0x0AB28, 0x0AB2E), (0x0AB30, 0x0AB5A),
    (0x0AB5C, 0x0AB69), (0x0AB70, 0x0ABE2), (0x0ABF0, 0x0ABF9), (0x0AC00, 0x0D7A3), (0x0D7B0, 0x0D7C6),
    (0x0D7CB, 0x0D7FB), (0x0F900, 0x0FA6D), (0x0FA70, 0x0FAD9), (0x0FB00, 0x0FB06), (0x0FB13, 0x0FB17),
    (0x0FB1D, 0x0FB1D), (0x0FB1F, 0x0FB28), (0x0FB2A, 0x0FB36), (0x0FB38, 0x0FB3C), (0x0FB3E, 0x0FB3E),
    (0x0FB40, 0x0FB41), (0x0FB43, 0x0FB44), (0x0FB46, 0x0FBB1), (0x0FBD3, 0x0FD3D), (0x0FD50, 0x0FD8F),
    (0x0FD92, 0x0FDC7), (0x0FDF0, 0x0FDFB), (0x0FE70, 0x0FE74), (0x0FE76, 0x0FEFC), (0x0FF10, 0x0FF19),
    (0x0FF21, 0x0FF3A), (0x0FF41, 0x0FF5A), (0x0FF66, 0x0FFBE), (0x0FFC2, 0x0FFC7), (0x0FFCA, 0x0FFCF),
    (0x0FFD2, 0x0FFD7), (0x0FFDA, 0x0FFDC), (0x10000, 0x1000B), (0x1000D, 0x10026), (0x10028, 0x1003A),
    (0x1003C, 0x1003D), (0x1003F, 0x1004D), (0x10050, 0x1005D), (0x10080, 0x100FA), (0x10107, 0x10133),
    (0x10140, 0x10178), (0x1018A, 0x1018B), (0x10280, 0x1029C), (0x102A0, 0x102D0), (0x102E1, 0x102FB),
    (0x10300, 0x10323), (0x1032D, 0x1034A), (0x10350, 0x10375), (0x10380, 0x1039D), (0x103A0, 0x103C3),
    (0x103C8, 0x103CF), (0x103D1, 0x103D5), (0x10400, 0x1049D), (0x104A0, 0x104A9), (0x104B0, 0x104D3),
    (0x104D8, 0x104FB), (0x10500, 0x10527), (0x10530, 0x10563), (0x10570, 0x1057A), (0x1057C, 0x1058A),
    (0x1058C, 0x10592), (0x10594, 0x10595), (0x10597, 0x105A1), (0x105A3, 0x105B1), (0x105B3, 0x105B9),
    (0x105BB, 0x105BC), (0x10600, 0x10736), (0x10740, 0x10755), (0x10760, 0x10767), (0x10780, 0x10785),
    (0x10787, 0x107B0), (0x107B2, 0x107BA), (0x10800, 0x10805), (0x10808, 0x10808), (0x1080A, 0x10835),
    (0x10837, 0x10838), (0x1083C, 0x1083C), (0x1083F, 0x10855), (0x10858, 0x10876), (0x10879, 0x1089E),
    (0x108A7, 0x108AF), (0x108E0, 0x108F2), (0x108F4, 0x108F5), (0x108FB, 0x1091B), (0x10920, 0x10939),
    (0x10980, 0x109B7), (0x109BC, 0x109CF), (0x109D2, 0x10A00), (0x10A10, 0x10A13), (0x10A15, 0x10A17),
    (0x10A19, 0x10A35), (0x10A40, 0x10A48), (0x10A60, 0x10A7E), (0x10A80, 0x10A9F), (0x10AC0, 0x10AC7),
    (0x10AC9, 0x10AE4), (0x10AEB, 0x10AEF), (0x10B00, 0x10B35), (0x10B40, 0x10B55), (0x10B58, 0x10B72),
    (0x10B78, 0x10B91), (0x10BA9, 0x10BAF), (0x10C00, 0x10C48), (0x10C80, 0x10CB2), (0x10CC0, 0x10CF2),
    (0x10CFA, 0x10D23), (0x10D30, 0x10D39), (0x10E60, 0x10E7E), (0x10E80, 0x10EA9), (0x10EB0, 0x10EB1),
    (0x10F00, 0x10F27), (0x10F30, 0x10F45), (0x10F51, 0x10F54), (0x10F70, 0x10F81), (0x10FB0, 0x10FCB),
    (0x10FE0, 0x10FF6), (0x11003, 0x11037), (0x11052, 0x1106F), (0x11071, 0x11072), (0x11075, 0x11075),
    (0x11083, 0x110AF), (0x110D0, 0x110E8), (0x110F0, 0x110F9), (0x11103, 0x11126), (0x11136, 0x1113F),
    (0x11144, 0x11144), (0x11147, 0x11147), (0x11150, 0x11172), (0x11176, 0x11176), (0x11183, 0x111B2),
    (0x111C1, 0x111C4), (0x111D0, 0x111DA), (0x111DC, 0x111DC), (0x111E1, 0x111F4), (0x11200, 0x11211),
    (0x11213, 0x1122B), (0x11280, 0x11286), (0x11288, 0x11288), (0x1128A, 0x1128D), (0x1128F, 0x1129D),
    (0x1129F, 0x112A8), (0x112B0, 0x112DE), (0x112F0, 0x112F9), (0x11305, 0x1130C), (0x1130F, 0x11310),
    (0x11313, 0x11328), (0x1132A, 0x11330), (0x11332, 0x11333), (0x11335, 0x11339), (0x1133D, 0x1133D),
    (0x11350, 0x11350), (0x1135D, 0x11361), (0x11400, 0x11434), (0x11447, 0x1144A), (0x11450, 0x11459),
    (0x1145F, 0x11461), (0x11480, 0x114AF), (0x114C4, 0x114C5), (0x114C7, 0x114C7), (0x114D0, 0x114D9),
    (0x11580, 0x115AE), (0x115D8, 0x115DB), (0x11600, 0x1162F), (0x11644, 0x11644), (0x11650, 0x11659),
    (0x11680, 0x116AA), (0x116B8, 0x116B8), (0x116C0, 0x116C9), (0x11700, 0x1171A), (0x11730, 0x1173B),
    (0x11740, 0x11746), (0x11800, 0x1182B), (0x118A0, 0x118F2), (0x118FF, 0x11906), (0x11909, 0x11909),
    (0x1190C, 0x11913), (0x11915, 0x11916), (0x11918, 0x1192F), (0x1193F, 0x1193F), (0x11941, 0x11941),
    (0x11950, 0x11959), (0x119A0, 0x119A7), (0x119AA, 0x119D0), (0x119E1, 0x119E1), (0x119E3, 0x119E3),
    (0x11A00, 0x11A00), (0x11A0B, 0x11A32), (0x11A3A, 0x11A3A), (0x11A50, 0x11A50), (0x11A5C, 0x11A89),
    (0x11A9D, 0x11A9D), (0x11AB0, 0x11AF8), (0x11C00, 0x11C08), (0x11C0A, 0x11C2E), (0x11C40, 0x11C40),
    (0x11C50, 0x11C6C), (0x11C72, 0x11C8F), (0x11D00, 0x11D06), (0x11D08, 0x11D09), (0x11D0B, 0x11D30),
    (0x11D46, 0x11D46), (0x11D50, 0x11D59), (0x11D60, 0x11D65), (0x11D67, 0x11D68), (0x11D6A, 0x11D89),
    (0x11D98, 0x11D98), (0x11DA0, 0x11DA9), (0x11EE0, 0x11EF2), (0x11FB0, 0x11FB0), (0x11FC0, 0x11FD4),
    (0x12000, 0x12399), (0x12400, 0x1246E), (0x12480, 0x12543), (0x12F90, 0x12FF0), (0x13000, 0x1342E),
    (0x14400, 0x14646), (0x16800, 0x16A38), (0x16A40, 0x16A5E), (0x16A60, 0x16A69), (0x16A70, 0x16ABE),
    (0x16AC0, 0x16AC9), (0x16AD0, 0x16AED), (0x16B00, 0x16B2F), (0x16B40, 0x16B43), (0x16B50, 0x16B59),
    (0x16B5B, 0x16B61), (0x16B63, 0x16B77), (0x16B7D, 0x16B8F), (0x16E40, 0x16E96), (0x16F00, 0x16F4A),
    (0x16F50, 0x16F50), (0x16F93, 0x16F9F), (0x16FE0, 0x16FE1), (0x16FE3, 0x16FE3), (0x17000, 0x187F7),
    (0x18800, 0x18CD5), (0x18D00, 0x18D08), (0x1AFF0, 0x1AFF3), (0x1AFF5, 0x1AFFB), (0x1AFFD, 0x1AFFE),
    (0x1B000, 0x1B122), (0x1B150, 0x1B152), (0x1B164, 0x1B167), (0x1B170, 0x1B2FB), (0x1BC00, 0x1BC6A),
    (0x1BC70, 0x1BC7C), (0x1BC80, 0x1BC88), (0x1BC90, 0x1BC99), (0x1D2E0, 0x1D2F3), (0x1D360, 0x1D378),
    (0x1D400, 0x1D454), (0x1D456, 0x1D49C), (0x1D49E, 0x1D49F), (0x1D4A2, 0x1D4A2), (0x1D4A5, 0x1D4A6),
    (0x1D4A9, 0x1D4AC), (0x1D4AE, 0x1D4B9), (0x1D4BB, 0x1D4BB), (0x1D4BD, 0x1D4C3), (0x1D4C5, 0x1D505),
    (0x1D507, 0x1D50A), (0x1D50D, 0x1D514), (0x1D516, 0x1D51C), (0x1D51E, 0x1D539), (0x1D53B, 0x1D53E),
    (0x1D540, 0x1D544), (0x1D546, 0x1D546), (0x1D54A, 0x1D550), (0x1D552, 0x1D6A5), (0x1D6A8, 0x1D6C0),
    (0x1D6C2, 0x1D6DA), (0x1D6DC, 0x1D6FA), (0x1D6FC, 0x1D714), (0x1D716, 0x1D734), (0x1D736, 0x1D74E),
    (0x1D750, 0x1D76E), (0x1D770, 0x1D788), (0x1D78A, 0x1D7A8), (0x1D7AA, 0x1D7C2), (0x1D7C4, 0x1D7CB),
    (0x1D7CE, 0x1D7FF), (0x1DF00, 0x1DF1E), (0x1E100, 0x1E12C), (0x1E137, 0x1E13D), (0x1E140, 0x1E149),
    (0x1E14E, 0x1E14E), (0x1E290, 0x1E2AD), (0x1E2C0, 0x1E2EB), (0x1E2F0, 0x1E2F9), (0x1E7E0, 0x1E7E6),
    (0x1E7E8, 0x1E7EB), (0x1E7ED, 0x1E7EE), (0x1E7F0, 0x1E7FE), (0x1E800, 0x1E8C4), (0x1E8C7, 0x1E8CF),
    (0x1E900, 0x1E943), (0x1E94B, 0x1E94B), (0x1E950, 0x1E959), (0x1EC71, 0x1ECAB), (0x1ECAD, 0x1ECAF),
    (0x1ECB1, 0x1ECB4), (0x1ED01, 0x1ED2D), (0x1ED2F, 0x1ED3D), (0x1EE00, 0x1EE03), (0x1EE05, 0x1EE1F),
    (0x1EE21, 0x1EE22), (0x1EE24, 0x1EE24), (0x1EE27, 0x1EE27), (0x1EE29, 0x1EE32), (0x1EE34, 0x1EE37),
    (0x1EE39, 0x1EE39), (0x1EE3B, 0x1EE3B), (0x1EE42, 0x1EE42), (0x1EE47, 0x1EE47), (0x1EE49, 0x1EE49),
    (0x1EE4B, 0x1EE4B), (0x1EE4D, 0x1EE4F), (0x1EE51, 0x1EE52), (0x1EE54, 0x1EE54), (0x1EE57, 0x1EE57),
    (0x1EE59, 0x1EE59), (0x1EE5B, 0x1EE5B), (0x1EE5D, 0x1EE5D), (0x1EE5F, 0x1EE5F), (0x1EE61, 0x1EE62),
    (0x1EE64, 0x1EE64), (0x1EE67, 0x1EE6A), (0x1EE6C, 0x1EE72), (0x1EE74, 0x1EE77), (0x1EE79, 0x1EE7C),
    (0x1EE7E, 0x1EE7E), (0x1EE80, 0x1EE89), (0x1EE8B, 0x1EE9B), (0x1EEA1, 0x1EEA3), (0x1EEA5, 0x1EEA9),
    (0x1EEAB, 0x1EEBB), (0x1F100, 0x1F10C), (0x1FBF0, 0x1FBF9), (0x20000, 0x2A6DF), (0x2A700, 0x2B738),
    (0x2B740, 0x2B81D), (0x2B820, 0x2CEA1), (0x2CEB0, 0x2EBE0), (0x2F800, 0x2FA1D), (0x30000, 0x3134A),
];

#[rustfmt::skip]
const WORD_NOT_IDENTIFIER_START_RANGES: &[(u32, u32)] = &[
    (0x000B2, 0x000B3), (0x000B9, 0x000B9), (0x000BC, 0x000BE), (0x0037A, 0x0037A), (0x00660, 0x00669),
    (0x006F0, 0x006F9), (0x007C0, 0x007C9), (0x00966, 0x0096F), (0x009E6, 0x009EF), (0x009F4, 0x009F9),
    (0x00A66, 0x00A6F), (0x00AE6, 0x00AEF), (0x00B66, 0x00B6F), (0x00B72, 0x00B77), (0x00BE6, 0x00BF2),
    (0x00C66, 0x00C6F), (0x00C78, 0x00C7E), (0x00CE6, 0x00CEF), (0x00D58, 0x00D5E), (0x00D66, 0x00D78),
    (0x00DE6, 0x00DEF), (0x00E33, 0x00E33), (0x00E50, 0x00E59), (0x00EB3, 0x00EB3), (0x00ED0, 0x00ED9),
    (0x00F20, 0x00F33), (0x01040, 0x01049), (0x01090, 0x01099), (0x01369, 0x0137C), (0x017E0, 0x017E9),
    (0x017F0, 0x017F9), (0x01810, 0x01819), (0x01946, 0x0194F), (0x019D0, 0x019DA), (0x01A80, 0x01A89),
    (0x01A90, 0x01A99), (0x01B50, 0x01B59), (0x01BB0, 0x01BB9), (0x01C40, 0x01C49), (0x01C50, 0x01C59),
    (0x02070, 0x02070), (0x02074, 0x02079), (0x02080, 0x02089), (0x02150, 0x0215F), (0x02189, 0x02189),
    (0x02460, 0x0249B), (0x024EA, 0x024FF), (0x02776, 0x02793), (0x02CFD, 0x02CFD), (0x02E2F, 0x02E2F),
    (0x03192, 0x03195), (0x03220, 0x03229), (0x03248, 0x0324F), (0x03251, 0x0325F), (0x03280, 0x03289),
    (0x032B1, 0x032BF), (0x0A620, 0x0A629), (0x0A830, 0x0A835), (0x0A8D0, 0x0A8D9), (0x0A900, 0x0A909),
    (0x0A9D0, 0x0A9D9), (0x0A9F0, 0x0A9F9), (0x0AA50, 0x0AA59), (0x0ABF0, 0x0ABF9), (0x0FC5E, 0x0FC63),
    (0x0FDFA, 0x0FDFB), (0x0FE70, 0x0FE70), (0x0FE72, 0x0FE72), (0x0FE74, 0x0FE74), (0x0FE76, 0x0FE76),
    (0x0FE78, 0x0FE78), (0x0FE7A, 0x0FE7A), (0x0FE7C, 0x0FE7C), (0x0FE7E, 0x0FE7E), (0x0FF10, 0x0FF19),
    (0x0FF9E, 0x0FF9F), (0x10107, 0x10133), (0x10175, 0x10178), (0x1018A, 0x1018B), (0x102E1, 0x102FB),
    (0x10320, 0x10323), (0x104A0, 0x104A9), (0x10858, 0x1085F), (0x10879, 0x1087F), (0x108A7, 0x108AF),
    (0x108FB, 0x108FF), (0x10916, 0x1091B), (0x109BC, 0x109BD), (0x109C0, 0x109CF), (0x109D2, 0x109FF),
    (0x10A40, 0x10A48), (0x10A7D, 0x10A7E), (0x10A9D, 0x10A9F), (0x10AEB, 0x10AEF), (0x10B58, 0x10B5F),
    (0x10B78, 0x10B7F), (0x10BA9, 0x10BAF), (0x10CFA, 0x10CFF), (0x10D30, 0x10D39), (0x10E60, 0x10E7E),
    (0x10F1D, 0x10F26), (0x10F51, 0x10F54), (0x10FC5, 0x10FCB), (0x11052, 0x1106F), (0x110F0, 0x110F9),
    (0x11136, 0x1113F), (0x111D0, 0x111D9), (0x111E1, 0x111F4), (0x112F0, 0x112F9), (0x11450, 0x11459),
    (0x114D0, 0x114D9), (0x11650, 0x11659), (0x116C0, 0x116C9), (0x11730, 0x1173B), (0x118E0, 0x118F2),
    (0x11950, 0x11959), (0x11C50, 0x11C6C), (0x11D50, 0x11D59), (0x11DA0, 0x11DA9), (0x11FC0, 0x11FD4),
    (0x16A60, 0x16A69), (0x16AC0, 0x16AC9), (0x16B50, 0x16B59), (0x16B5B, 0x16B61), (0x16E80, 0x16E96),
    (0x1D2E0, 0x1D2F3), (0x1D360, 0x1D378), (0x1D7CE, 0x1D7FF), (0x1E140, 0x1E149), (0x1E2F0, 0x1E2F9),
    (0x1E8C7, 0x1E8CF), (0x1E950, 0x1E959), (0x1EC71, 0x1ECAB), (0x1ECAD, 0x1ECAF), (0x1ECB1, 0x1ECB4),
    (0x1ED01, 0x1ED2D), (0x1ED2F, 0x1ED3D), (0x1F100, 0x1F10C), (0x1FBF0, 0x1FBF9),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits like `file.readlines()`: after each `"\n"` only.
    fn readlines(src: &str) -> Vec<&str> {
        src.split_inclusive('\n').collect()
    }

    fn escape(s: &str) -> String {
        s.chars()
            .map(|c| match c {
                '\\' => "\\\\".to_owned(),
                '\n' => "\\n".to_owned(),
                '\r' => "\\r".to_owned(),
                '\t' => "\\t".to_owned(),
                '\x0c' => "\\f".to_owned(),
                c => c.to_string(),
            })
            .collect()
    }

    /// Compares with the token stream CPython 3.11.7 produced for `src`
    /// (expectations generated with `tokenize.generate_tokens`).
    fn check(src: &str, expected: &[&str]) {
        let lines = readlines(src);
        let (tokens, error) = generate_tokens(&lines);
        let mut got: Vec<String> = tokens
            .iter()
            .map(|t| {
                format!("{} [{}] {},{}-{},{}", t.kind.name(), escape(&t.string), t.start.0, t.start.1, t.end.0, t.end.1)
            })
            .collect();
        if let Some(e) = error {
            got.push(format!("{}: {} {},{}", e.python_class(), e.message(), e.row, e.col));
        }
        assert_eq!(got, expected, "tokens of {src:?}");
    }

    #[test]
    fn empty_input_and_empty_line_are_eof() {
        let (tokens, error) = generate_tokens(&[]);
        assert!(error.is_none());
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].kind, TokenType::Endmarker);
        assert_eq!(tokens[0].start, (1, 0));
        // An empty string from readline ends the input even mid-list.
        let (tokens, error) = generate_tokens(&["x\n", "", "y\n"]);
        assert!(error.is_none());
        assert!(!tokens.iter().any(|t| t.string == "y"));
    }

    #[test]
    fn unindent_mismatch_is_indentation_error() {
        let (tokens, error) = generate_tokens(&readlines("if x:\n    a\n  b\n"));
        let error = error.expect("IndentationError");
        assert!(error.is_indentation_error());
        assert_eq!((error.row, error.col), (3, 2));
        assert_eq!(tokens.last().map(|t| t.kind), Some(TokenType::Newline));
    }

    /// The Unicode tables (and the `\s` set) are CPython 3.11's.
    #[test]
    fn unicode_tables_match_python() {
        let script = r#"
import re, sys
w = re.compile(r'\w'); s = re.compile(r'\s')
def ranges(pred):
    out = []; start = None
    for c in range(0x80, 0x110001):
        ok = c < 0x110000 and pred(chr(c))
        if ok and start is None: start = c
        if not ok and start is not None: out.append('%x-%x' % (start, c - 1)); start = None
    return ' '.join(out)
print(sys.version_info[:2] == (3, 11))
print(ranges(lambda c: w.match(c) is not None))
print(ranges(lambda c: w.match(c) is not None and not c.isidentifier()))
print(' '.join('%x' % c for c in range(0x110000) if s.match(chr(c))))
print(''.join(chr(c) for c in range(0x80) if w.match(chr(c))))
"#;
        let output = std::process::Command::new("python3")
            .args(["-c", script])
            .output()
            .expect("python3 (CPython 3.11) must be installed for this test");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let stdout = String::from_utf8(output.stdout).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], "True", "the tables are those of CPython 3.11");
        let ranges = |pred: &dyn Fn(char) -> bool| {
            let mut out = Vec::new();
            let mut start = None;
            for c in 0x80..=0x110000u32 {
                let ok = char::from_u32(c).is_some_and(pred);
                match (ok, start) {
                    (true, None) => start = Some(c),
                    (false, Some(s)) => {
                        out.push(format!("{s:x}-{:x}", c - 1));
                        start = None;
                    }
                    _ => {}
                }
            }
            out.join(" ")
        };
        assert_eq!(ranges(&is_py_word), lines[1]);
        assert_eq!(ranges(&|c| is_py_word(c) && !is_identifier_start(c)), lines[2]);
        let spaces: Vec<String> = (0..0x110000u32)
            .filter(|&c| char::from_u32(c).is_some_and(is_py_whitespace))
            .map(|c| format!("{c:x}"))
            .collect();
        assert_eq!(spaces.join(" "), lines[3]);
        let ascii_word: String = (0..0x80u8).map(char::from).filter(|&c| is_py_word(c)).collect();
        assert_eq!(ascii_word, lines[4]);
    }

    #[test]
    fn tokens_positions() {
        check(
            "if x:\n\t y = 1 # c\n  \u{c}\t z\n",
            &[
                "NAME [if] 1,0-1,2",
                "NAME [x] 1,3-1,4",
                "OP [:] 1,4-1,5",
                "NEWLINE [\\n] 1,5-1,6",
                "INDENT [\\t ] 2,0-2,2",
                "NAME [y] 2,2-2,3",
                "OP [=] 2,4-2,5",
                "NUMBER [1] 2,6-2,7",
                "COMMENT [# c] 2,8-2,11",
                "NEWLINE [\\n] 2,11-2,12",
                "NAME [z] 3,5-3,6",
                "NEWLINE [\\n] 3,6-3,7",
                "DEDENT [] 4,0-4,0",
                "ENDMARKER [] 4,0-4,0",
            ],
        );
    }

    #[test]
    fn tokens_unmatched_close() {
        check(
            "x = 1)\ny\n",
            &[
                "NAME [x] 1,0-1,1",
                "OP [=] 1,2-1,3",
                "NUMBER [1] 1,4-1,5",
                "OP [)] 1,5-1,6",
                "NEWLINE [\\n] 1,6-1,7",
                "NAME [y] 2,0-2,1",
                "NEWLINE [\\n] 2,1-2,2",
                "TokenError: EOF in multi-line statement 3,0",
            ],
        );
    }

    #[test]
    fn tokens_errortoken() {
        check(
            "a  $ b\n",
            &[
                "NAME [a] 1,0-1,1",
                "ERRORTOKEN [ ] 1,1-1,2",
                "ERRORTOKEN [ ] 1,2-1,3",
                "ERRORTOKEN [$] 1,3-1,4",
                "NAME [b] 1,5-1,6",
                "NEWLINE [\\n] 1,6-1,7",
                "ENDMARKER [] 2,0-2,0",
            ],
        );
    }

    #[test]
    fn tokens_numbers() {
        check(
            "0x_1f 1_000j .5e-3 1.e5J 0b102 00 012 1__2 1.ej\n",
            &[
                "NUMBER [0x_1f] 1,0-1,5",
                "NUMBER [1_000j] 1,6-1,12",
                "NUMBER [.5e-3] 1,13-1,18",
                "NUMBER [1.e5J] 1,19-1,24",
                "NUMBER [0b10] 1,25-1,29",
                "NUMBER [2] 1,29-1,30",
                "NUMBER [00] 1,31-1,33",
                "NUMBER [0] 1,34-1,35",
                "NUMBER [12] 1,35-1,37",
                "NUMBER [1] 1,38-1,39",
                "NAME [__2] 1,39-1,42",
                "NUMBER [1.] 1,43-1,45",
                "NAME [ej] 1,45-1,47",
                "NEWLINE [\\n] 1,47-1,48",
                "ENDMARKER [] 2,0-2,0",
            ],
        );
    }

    #[test]
    fn tokens_needcont() {
        check(
            "s = 'ab\\\ncd\nt = '''x\nmid\ny'''\n",
            &[
                "NAME [s] 1,0-1,1",
                "OP [=] 1,2-1,3",
                "ERRORTOKEN ['ab\\\\\\ncd\\n] 1,4-2,3",
                "NAME [t] 3,0-3,1",
                "OP [=] 3,2-3,3",
                "ERRORTOKEN ['''x\\nmid\\n] 3,4-4,4",
                "NAME [y] 5,0-5,1",
                "TokenError: EOF in multi-line string 5,1",
            ],
        );
    }

    #[test]
    fn tokens_no_newline() {
        check(
            "def f():\n  return 1",
            &[
                "NAME [def] 1,0-1,3",
                "NAME [f] 1,4-1,5",
                "OP [(] 1,5-1,6",
                "OP [)] 1,6-1,7",
                "OP [:] 1,7-1,8",
                "NEWLINE [\\n] 1,8-1,9",
                "INDENT [  ] 2,0-2,2",
                "NAME [return] 2,2-2,8",
                "NUMBER [1] 2,9-2,10",
                "NEWLINE [] 2,10-2,11",
                "DEDENT [] 3,0-3,0",
                "ENDMARKER [] 3,0-3,0",
            ],
        );
    }

    #[test]
    fn tokens_whitespace_end() {
        check("x\n   ", &["NAME [x] 1,0-1,1", "NEWLINE [\\n] 1,1-1,2", "ENDMARKER [] 2,0-2,0"]);
    }

    #[test]
    fn tokens_crlf_str() {
        check(
            "s = 'a\\\r\nb'\n",
            &[
                "NAME [s] 1,0-1,1",
                "OP [=] 1,2-1,3",
                "STRING ['a\\\\\\r\\nb'] 1,4-2,2",
                "NEWLINE [\\n] 2,2-2,3",
                "ENDMARKER [] 3,0-3,0",
            ],
        );
    }

    #[test]
    fn tokens_prefixes() {
        check(
            "rb'x' Rf\"y\" u'''z''' br'\\'' xr'w'\n",
            &[
                "STRING [rb'x'] 1,0-1,5",
                "STRING [Rf\"y\"] 1,6-1,11",
                "STRING [u'''z'''] 1,12-1,20",
                "STRING [br'\\\\''] 1,21-1,27",
                "NAME [xr] 1,28-1,30",
                "STRING ['w'] 1,30-1,33",
                "NEWLINE [\\n] 1,33-1,34",
                "ENDMARKER [] 2,0-2,0",
            ],
        );
    }

    #[test]
    fn tokens_brackets() {
        check(
            "f(a,\n  # c\n\n b)\n",
            &[
                "NAME [f] 1,0-1,1",
                "OP [(] 1,1-1,2",
                "NAME [a] 1,2-1,3",
                "OP [,] 1,3-1,4",
                "NL [\\n] 1,4-1,5",
                "COMMENT [# c] 2,2-2,5",
                "NL [\\n] 2,5-2,6",
                "NL [\\n] 3,0-3,1",
                "NAME [b] 4,1-4,2",
                "OP [)] 4,2-4,3",
                "NEWLINE [\\n] 4,3-4,4",
                "ENDMARKER [] 5,0-5,0",
            ],
        );
    }

    #[test]
    fn tokens_unicode() {
        check(
            "défini = ١٢\n",
            &[
                "NAME [défini] 1,0-1,6",
                "OP [=] 1,7-1,8",
                "OP [١٢] 1,9-1,11",
                "NEWLINE [\\n] 1,11-1,12",
                "ENDMARKER [] 2,0-2,0",
            ],
        );
    }
}
