//! Python's text semantics, reproduced exactly: what `str.splitlines`,
//! `str.strip`, `textwrap.dedent` and `inspect.getblock` do to a string.

pub mod getblock;
pub mod tokenize;

/// Python's `str.isspace` for one character (Unicode White_Space plus the
/// ASCII information separators `\x1c`–`\x1f`, which Python counts and Rust
/// does not).
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// `str.strip()`.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `not s.strip()`: `s` is empty or whitespace only. ASCII is decided
/// byte by byte; from the first non-ASCII byte on, as `strip` does.
pub fn is_blank(s: &str) -> bool {
    for (k, &b) in s.as_bytes().iter().enumerate() {
        match b {
            b'\t'..=b'\r' | b' ' | 0x1c..=0x1f => {}
            // Every byte before is ASCII: `k` starts a character.
            0x80.. => return strip(&s[k..]).is_empty(),
            _ => return false,
        }
    }
    true
}

/// `str.lstrip()`.
pub fn lstrip(s: &str) -> &str {
    s.trim_start_matches(is_space)
}

/// `str.rstrip()`.
pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

/// The bytes of `word` (8 bytes, little-endian) that can start a line
/// boundary, as the top bit of each: below 0x20, or a lead byte 0xC2 /
/// 0xE2. Bytes above the lowest flagged one may be flagged wrongly (a
/// borrow carries up), so only the lowest flag is to be trusted; zero when
/// no byte can.
#[inline]
fn break_candidates(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_0x20 = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    below_0x20 | has_zero(word ^ (ONES * 0xc2)) | has_zero(word ^ (ONES * 0xe2))
}

/// The first index from `i` on whose byte may start a line boundary
/// (every byte before it certainly does not), or `bytes.len()`.
#[inline]
fn next_break_candidate(bytes: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = bytes.get(i..i + 8) {
        let flags = break_candidates(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        if flags != 0 {
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i.min(bytes.len())
}

/// The first line boundary at or after `i`: where it starts and how many
/// bytes it takes. The breaks are ASCII, or U+0085 (C2 85), U+2028/U+2029
/// (E2 80 A8/A9), whose lead bytes never occur inside another character.
#[inline(always)]
fn next_break(bytes: &[u8], mut i: usize) -> Option<(usize, usize)> {
    loop {
        i = next_break_candidate(bytes, i);
        let width = match *bytes.get(i)? {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => 2,
            b'\n' | b'\r' | 0x0b | 0x0c | 0x1c | 0x1d | 0x1e => 1,
            0xc2 if bytes.get(i + 1) == Some(&0x85) => 2,
            0xe2 if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) => 3,
            _ => {
                i += 1;
                continue;
            }
        };
        return Some((i, width));
    }
}

/// The lines of `str.splitlines(keepends)`, one at a time.
pub struct Lines<'a> {
    s: &'a str,
    start: usize,
    keepends: bool,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let start = self.start;
        if start >= self.s.len() {
            return None;
        }
        let (end, next) = match next_break(self.s.as_bytes(), start) {
            Some((i, width)) => (if self.keepends { i + width } else { i }, i + width),
            None => (self.s.len(), self.s.len()),
        };
        self.start = next;
        Some(&self.s[start..end])
    }
}

/// `str.splitlines(keepends)` without collecting the lines.
pub fn lines(s: &str, keepends: bool) -> Lines<'_> {
    Lines { s, start: 0, keepends }
}

/// `len(s.splitlines())` without building the lines: with `\n` the only
/// break (the usual case, found with memchr), the breaks plus an unterminated
/// last line; otherwise the lines counted one by one.
pub fn count_lines(s: &str) -> usize {
    if only_newline_breaks(s) {
        memchr::memchr_iter(b'\n', s.as_bytes()).count() + usize::from(!s.is_empty() && !s.ends_with('\n'))
    } else {
        lines(s, false).count()
    }
}

/// `str.splitlines(keepends)`: every line, split at any of Python's line
/// boundaries (`\r\n` counts once).
pub fn splitlines_impl(s: &str, keepends: bool) -> Vec<&str> {
    let mut out = Vec::with_capacity(s.len() / 32 + 1);
    out.extend(lines(s, keepends));
    out
}

/// Whether `\n` is the only line boundary in `s` (then `str.splitlines`
/// and counting `\n` agree on line numbers). The other boundaries are
/// `\r`, `\x0b`, `\x0c`, `\x1c`–`\x1e`, and U+0085, U+2028, U+2029, whose
/// UTF-8 forms start with 0xC2 / 0xE2: searched for with memchr, byte
/// values at a time.
pub fn only_newline_breaks(s: &str) -> bool {
    let bytes = s.as_bytes();
    memchr::memchr3(b'\r', 0x0b, 0x0c, bytes).is_none()
        && memchr::memchr3(0x1c, 0x1d, 0x1e, bytes).is_none()
        && memchr::memchr2_iter(0xc2, 0xe2, bytes).all(|i| {
            !matches!(
                (bytes[i], bytes.get(i + 1), bytes.get(i + 2)),
                (0xc2, Some(0x85), _) | (0xe2, Some(0x80), Some(0xa8 | 0xa9))
            )
        })
}

/// A line of `str.splitlines(True)` without its line break.
pub fn without_line_break(line: &str) -> &str {
    if let Some(l) = line.strip_suffix("\r\n") {
        return l;
    }
    match line.chars().next_back() {
        Some(c @ ('\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')) => {
            &line[..line.len() - c.len_utf8()]
        }
        _ => line,
    }
}

/// `str.splitlines()`.
pub fn splitlines(s: &str) -> Vec<&str> {
    splitlines_impl(s, false)
}

/// `str.splitlines(keepends=True)`.
pub fn splitlines_keepends(s: &str) -> Vec<&str> {
    splitlines_impl(s, true)
}

/// Text as Python's universal-newline reading gives it (`\r\n` and `\r` → `\n`).
/// Every parsed file passes through here: the search for `\r` is memchr's
/// vectorised one (std's `contains` scans a word at a time).
pub fn universal_newlines(s: &str) -> std::borrow::Cow<'_, str> {
    if memchr::memchr(b'\r', s.as_bytes()).is_some() {
        std::borrow::Cow::Owned(s.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// [`universal_newlines`] of an owned text: the same string back, not a
/// copy, when it has no `\r`.
pub fn universal_newlines_owned(s: String) -> String {
    match universal_newlines(&s) {
        std::borrow::Cow::Owned(t) => t,
        std::borrow::Cow::Borrowed(_) => s,
    }
}

/// `textwrap.dedent`: blank-only lines (spaces and tabs) become empty, then
/// the longest common leading run of spaces/tabs of the other lines is removed.
pub fn dedent(text: &str) -> String {
    // Lines split on "\n" only, as the regexes of textwrap do (`^`/`$` in
    // MULTILINE mode only know "\n").
    let lines: Vec<&str> = text.split('\n').collect();
    let is_blank = |l: &str| !l.is_empty() && l.bytes().all(|b| b == b' ' || b == b'\t');
    let mut margin: Option<&str> = None;
    for line in &lines {
        if line.is_empty() || is_blank(line) {
            continue;
        }
        let indent_len = line.len() - line.trim_start_matches([' ', '\t']).len();
        // A line whose first non-[ \t] character is "\n" cannot occur here.
        let indent = &line[..indent_len];
        margin = Some(match margin {
            None => indent,
            Some(m) if indent.starts_with(m) => m,
            Some(m) if m.starts_with(indent) => indent,
            Some(m) => {
                let common = m.bytes().zip(indent.bytes()).take_while(|(a, b)| a == b).count();
                &m[..common]
            }
        });
    }
    let margin = margin.unwrap_or("");
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if is_blank(line) {
            continue;
        }
        out.push_str(line.strip_prefix(margin).unwrap_or(line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(splitlines("a\nb\r\nc\rd\x0ce"), vec!["a", "b", "c", "d", "e"]);
        assert_eq!(splitlines("a\n"), vec!["a"]);
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines_keepends("a\n\nb"), vec!["a\n", "\n", "b"]);
    }

    #[test]
    fn dedent_matches_textwrap() {
        assert_eq!(dedent("    a\n      b\n"), "a\n  b\n");
        assert_eq!(dedent("  a\n\t b\n"), "a\n\t b\n".replace("a\n\t b", "  a\n\t b"));
        assert_eq!(dedent("    a\n   \n    b"), "a\n\nb");
        assert_eq!(dedent("a\n  b"), "a\n  b");
    }
}
