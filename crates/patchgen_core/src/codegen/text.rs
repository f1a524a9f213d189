//! The reference's text surgery helpers, reproduced exactly: segment
//! extraction, decorator stripping, `name_map`, re-indentation, blank-line
//! collapsing. All pure functions over strings.

use patchgen_python::pytext;

/// Characters of `s` (Python indexes strings by code point).
fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// `len(line) - len(line.lstrip())`.
pub fn indent_width(line: &str) -> usize {
    char_len(line) - char_len(pytext::lstrip(line))
}

/// `extract_source_segment`: lines `start_line..=end_line` (1-based) plus
/// every line above that is blank or starts (after stripping) with `#` or `@`.
pub fn extract_source_segment(source_lines: &[&str], start_line: usize, end_line: usize) -> String {
    source_lines[segment_range(source_lines, start_line, end_line)].join("\n")
}

/// The 0-based range of lines `extract_source_segment` joins.
pub fn segment_range(source_lines: &[&str], start_line: usize, end_line: usize) -> std::ops::Range<usize> {
    let mut actual_start = start_line.saturating_sub(1);
    while actual_start > 0 {
        let prev = pytext::strip(source_lines.get(actual_start - 1).copied().unwrap_or(""));
        if prev.starts_with('#') || prev.starts_with('@') || prev.is_empty() {
            actual_start -= 1;
        } else {
            break;
        }
    }
    let end = end_line.min(source_lines.len());
    if actual_start >= end {
        return 0..0;
    }
    actual_start..end
}

const PATCH_DECORATOR_NAMES: [&str; 6] =
    ["replace_class", "replace_function", "override_method", "modify_init", "add_helper", "add_helper_after"];

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `re.match(r"@(?:config\.)?(?:replace_class|…|add_helper_after)\b", stripped)`.
fn is_patch_decorator(stripped: &str) -> bool {
    let Some(rest) = stripped.strip_prefix('@') else { return false };
    let candidates: [&str; 2] = [rest.strip_prefix("config.").unwrap_or("\u{0}"), rest];
    candidates.iter().any(|rest| {
        PATCH_DECORATOR_NAMES
            .iter()
            .any(|name| rest.strip_prefix(name).is_some_and(|after| !after.chars().next().is_some_and(is_word_char)))
    })
}

pub(crate) fn paren_balance(s: &str) -> i64 {
    s.matches('(').count() as i64 - s.matches(')').count() as i64
}

/// `strip_patch_decorators`: drop DSL decorator lines (following a
/// multi-line decorator by naive parenthesis counting).
pub fn strip_patch_decorators(source: &str) -> String {
    strip_patch_decorators_traced(source).0
}

/// [`strip_patch_decorators`], and the 0-based indexes (in
/// `pytext::splitlines(source)`) of the lines it keeps.
pub fn strip_patch_decorators_traced(source: &str) -> (String, Vec<u32>) {
    let mut out: Vec<&str> = Vec::new();
    let mut kept: Vec<u32> = Vec::new();
    let mut in_decorator = false;
    let mut depth = 0i64;
    for (i, line) in pytext::splitlines(source).into_iter().enumerate() {
        let stripped = pytext::strip(line);
        if !in_decorator && is_patch_decorator(stripped) {
            depth = paren_balance(stripped);
            in_decorator = depth > 0;
            continue;
        }
        if in_decorator {
            depth += paren_balance(stripped);
            if depth <= 0 {
                in_decorator = false;
            }
            continue;
        }
        out.push(line);
        kept.push(i as u32);
    }
    (out.join("\n"), kept)
}

/// `_apply_name_map`: plain replacement, longest key first (stable for
/// equal lengths, in the dict's order).
pub fn apply_name_map(source: &str, name_map: Option<&[(String, String)]>) -> String {
    let Some(map) = name_map else { return source.to_string() };
    let mut entries: Vec<&(String, String)> = map.iter().collect();
    entries.sort_by_key(|e| std::cmp::Reverse(char_len(&e.0)));
    let mut s = source.to_string();
    for (old, new) in entries {
        s = py_replace(&s, old, new, None);
    }
    s
}

/// `str.replace(old, new[, count])`, including Python's behaviour for an
/// empty `old` (insert between every character).
pub fn py_replace(s: &str, old: &str, new: &str, count: Option<usize>) -> String {
    if old.is_empty() {
        let mut out = String::new();
        let mut n = 0;
        let limit = count.unwrap_or(usize::MAX);
        for c in s.chars() {
            if n < limit {
                out.push_str(new);
                n += 1;
            }
            out.push(c);
        }
        if n < limit {
            out.push_str(new);
        }
        return out;
    }
    match count {
        None => s.replace(old, new),
        Some(n) => s.replacen(old, new, n),
    }
}

/// `_split_leading_comments`: the lines before the first `def `, `async def `,
/// `@` or `class ` line (trailing blanks dropped), and the rest.
pub fn split_leading_comments(source: &str) -> (Vec<&str>, String) {
    let lines = pytext::splitlines(source);
    let i = leading_lines(&lines);
    let mut leading = lines[..i].to_vec();
    while leading.last().is_some_and(|l| pytext::is_blank(l)) {
        leading.pop();
    }
    (leading, lines[i..].join("\n"))
}

/// How many of `lines` come before the first `def `, `async def `, `@` or
/// `class ` line.
pub fn leading_lines(lines: &[&str]) -> usize {
    lines
        .iter()
        .position(|l| {
            let stripped = pytext::lstrip(l);
            ["def ", "async def ", "@", "class "].iter().any(|p| stripped.starts_with(p))
        })
        .unwrap_or(lines.len())
}

/// `_indent_preserved_source`: re-indent so the first non-blank line sits
/// at `target_indent` spaces.
pub fn indent_preserved_source(preserved: &str, target_indent: usize) -> Vec<String> {
    let lines = pytext::splitlines(preserved);
    let first = lines.iter().find(|l| !pytext::is_blank(l)).copied().unwrap_or("");
    let preserved_indent = indent_width(first);
    let pad = " ".repeat(target_indent);
    lines
        .iter()
        .map(|line| {
            if pytext::is_blank(line) {
                String::new()
            } else {
                // `line[n:] if len(line) >= n else line.lstrip()`, looking
                // at no more than n + 1 code points.
                let stripped = match line.char_indices().nth(preserved_indent) {
                    Some((i, _)) => &line[i..],
                    None if char_len(line) == preserved_indent => "",
                    None => pytext::lstrip(line),
                };
                let mut out = String::with_capacity(pad.len() + stripped.len());
                out.push_str(&pad);
                out.push_str(stripped);
                out
            }
        })
        .collect()
}

/// `_collapse_blank_lines`: no run of more than `max` blank lines.
pub fn collapse_blank_lines(source: &str, max: usize) -> String {
    // `"\n".join` of the kept lines of `splitlines()`. Kept lines that end
    // in "\n" are copied from `source` a stretch at a time (`pending`: where
    // the current stretch starts); other breaks become "\n".
    if pytext::only_newline_breaks(source) {
        return collapse_blank_newline_lines(source, max);
    }
    let mut out = String::with_capacity(source.len());
    let offset = |line: &str| line.as_ptr() as usize - source.as_ptr() as usize;
    let mut pending: Option<usize> = None;
    let flush = |out: &mut String, pending: &mut Option<usize>, upto: usize| {
        if let Some(from) = pending.take() {
            out.push_str(&source[from..upto]);
        }
    };
    let mut run = 0;
    let mut ends_in_break = false;
    for line in pytext::lines(source, true) {
        let content = pytext::without_line_break(line);
        if pytext::is_blank(content) {
            run += 1;
            if run > max {
                flush(&mut out, &mut pending, offset(line));
                continue;
            }
        } else {
            run = 0;
        }
        let line_break = &line[content.len()..];
        if line_break.is_empty() || line_break == "\n" {
            pending.get_or_insert(offset(line));
        } else {
            flush(&mut out, &mut pending, offset(line));
            out.push_str(content);
            out.push('\n');
        }
        ends_in_break = !line_break.is_empty();
    }
    flush(&mut out, &mut pending, source.len());
    // No "\n" after the last line.
    if ends_in_break {
        out.pop();
    }
    out
}

/// [`collapse_blank_lines`] for a text whose only line break is `\n`.
fn collapse_blank_newline_lines(source: &str, max: usize) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let (mut run, mut start, mut pending) = (0, 0, 0);
    let mut ends_in_break = false;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let line = &source[start..end];
        // Most lines are code: their first non-space byte is ASCII.
        let blank = match line.bytes().position(|b| b != b' ') {
            None => true,
            Some(i)
                if line.as_bytes()[i] < 0x80 && !matches!(line.as_bytes()[i], b'\t' | 0x0b | 0x0c | 0x1c..=0x1f) =>
            {
                false
            }
            Some(_) => pytext::is_blank(line),
        };
        run = if blank { run + 1 } else { 0 };
        if run > max {
            out.push_str(&source[pending..start]);
            pending = (end + 1).min(bytes.len());
        } else {
            ends_in_break = end < bytes.len();
        }
        start = end + 1;
    }
    out.push_str(&source[pending..]);
    // No "\n" after the last kept line.
    if ends_in_break {
        out.pop();
    }
    out
}

/// `"# " + "=" * n`.
pub fn rule(n: usize) -> String {
    format!("# {}", "=".repeat(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_takes_comments_decorators_and_blanks_above() {
        let lines = ["x = 1", "", "# c", "@d", "class A:", "    pass", "# trailing"];
        assert_eq!(extract_source_segment(&lines, 4, 6), "\n# c\n@d\nclass A:\n    pass");
    }

    #[test]
    fn strips_only_patch_decorators() {
        let src = "@config.replace_class(\n    \"X\",\n    description=\"d\",\n)\n@torch.no_grad()\nclass Y:\n    pass";
        assert_eq!(strip_patch_decorators(src), "@torch.no_grad()\nclass Y:\n    pass");
        assert_eq!(
            strip_patch_decorators("@cfg.replace_class(\"X\")\nclass Y: ..."),
            "@cfg.replace_class(\"X\")\nclass Y: ..."
        );
        assert_eq!(
            strip_patch_decorators("@config.add_helper_after(\"X\")\n@dataclass\nclass Y: ..."),
            "@dataclass\nclass Y: ..."
        );
        assert_eq!(strip_patch_decorators("@add_helpers\ndef f(): ..."), "@add_helpers\ndef f(): ...");
    }

    #[test]
    fn name_map_longest_first() {
        let map = vec![("Qwen3_5".to_string(), "A".to_string()), ("Qwen3_5Moe".to_string(), "B".to_string())];
        assert_eq!(apply_name_map("Qwen3_5Moe Qwen3_5", Some(&map)), "B A");
    }

    #[test]
    fn reindent_like_reference() {
        assert_eq!(indent_preserved_source("def f():\n    x\n\n  \n", 4), vec!["    def f():", "        x", "", ""]);
        // Lines shorter than the first line's indent are lstripped.
        assert_eq!(indent_preserved_source("    a\n  b\n", 0), vec!["a", "b"]);
        // Longer ones lose that many characters, whatever they are.
        assert_eq!(indent_preserved_source("    a\nbcdef\n", 0), vec!["a", "f"]);
    }

    #[test]
    fn collapse_keeps_two_blank_lines() {
        assert_eq!(collapse_blank_lines("a\n\n\n\n\nb\n", 2), "a\n\n\nb");
    }
}
