//! Differences a reader cannot see in a unified diff: newlines at the end
//! of a file, trailing whitespace, CRLF line endings. The drift gate uses
//! [`only_final_newlines`] to tolerate what pre-commit's `end-of-file-fixer`
//! does to a `.diff` whose last line is blank, and [`explain`] /
//! [`lines_marking_missing_newline`] so a drift that *is* reported says in words
//! what a bare `+` or `-` line stands for.
//!
//! Pure functions over texts as the drift gate compares them (checked-in
//! first, expected second).

/// `text` without the run of `\n` that ends it, and that run's length.
fn split_final_newlines(text: &str) -> (&str, usize) {
    let content = text.trim_end_matches('\n');
    (content, text.len() - content.len())
}

/// The two texts differ, and only in how many `\n` end them (an empty or
/// newline-only text is not taken for one that lost its newlines).
pub fn only_final_newlines(existing: &str, expected: &str) -> bool {
    let content = split_final_newlines(existing).0;
    existing != expected && !content.is_empty() && content == split_final_newlines(expected).0
}

/// `existing` with the final newlines of `expected`: a drift shown without
/// the part of it that is tolerated (an empty or newline-only `existing`
/// is kept as it is).
pub fn with_final_newlines_of(existing: &str, expected: &str) -> String {
    let (content, _) = split_final_newlines(existing);
    if content.is_empty() {
        return existing.to_string();
    }
    let (_, n) = split_final_newlines(expected);
    let mut out = String::with_capacity(content.len() + n);
    out.push_str(content);
    out.extend(std::iter::repeat_n('\n', n));
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

/// In words, what differs between `existing` (the checked-in file) and
/// `expected` when the difference is invisible in a diff; `None` when it
/// is not one of those kinds (the diff itself shows it).
pub fn explain(existing: &str, expected: &str) -> Option<String> {
    if existing == expected {
        return None;
    }
    let ((ce, ne), (cx, nx)) = (split_final_newlines(existing), split_final_newlines(expected));
    if ce == cx {
        return Some(final_newlines(ne, nx));
    }
    if existing.contains('\r') && existing.replace("\r\n", "\n") == expected {
        return Some("only the line endings differ: the checked-in file has CRLF (\\r\\n) line endings".into());
    }
    trailing_whitespace(existing, expected)
}

/// `ne` final newlines in the checked-in file, `nx` expected (`ne != nx`).
fn final_newlines(ne: usize, nx: usize) -> String {
    let blank = |n| plural(n, "blank line", "blank lines");
    match (ne, nx) {
        (0, 1) => "the checked-in file lacks the final newline".into(),
        (0, _) => format!("the checked-in file lacks the final newline and the {} after it", blank(nx - 1)),
        (_, 0) if ne == 1 => "the checked-in file ends with a newline the generated file does not have".into(),
        (_, 0) => {
            format!("the checked-in file ends with a newline and {} the generated file does not have", blank(ne - 1))
        }
        _ if ne < nx && nx - ne == 1 => "the checked-in file lacks the final blank line".into(),
        _ if ne < nx => format!("the checked-in file lacks the final {}", blank(nx - ne)),
        _ => format!("the checked-in file has {} more at the end", blank(ne - nx)),
    }
}

/// Same lines but for spaces and tabs at their ends.
fn trailing_whitespace(existing: &str, expected: &str) -> Option<String> {
    let (e, x): (Vec<&str>, Vec<&str>) = (existing.split('\n').collect(), expected.split('\n').collect());
    if e.len() != x.len() {
        return None;
    }
    let ws = |l: &str| l.trim_end_matches([' ', '\t']).len();
    let mut lines = Vec::new();
    let (mut lacks, mut extra) = (false, false);
    for (i, (a, b)) in e.iter().zip(&x).enumerate() {
        if a == b {
            continue;
        }
        if a[..ws(a)] != b[..ws(b)] {
            return None;
        }
        lines.push(i + 1);
        if a.len() < b.len() {
            lacks = true;
        } else {
            extra = true;
        }
    }
    const SHOWN: usize = 5;
    let mut at = lines.iter().take(SHOWN).map(usize::to_string).collect::<Vec<_>>().join(", ");
    if lines.len() > SHOWN {
        at.push_str(&format!(" and {} more", lines.len() - SHOWN));
    }
    let which = if lines.len() == 1 { "line" } else { "lines" };
    Some(match (lacks, extra) {
        (true, false) => format!("only trailing whitespace differs: the checked-in file lacks it on {which} {at}"),
        (false, true) => format!("only trailing whitespace differs: the checked-in file has extra on {which} {at}"),
        _ => format!("only trailing whitespace differs, on {which} {at} of the checked-in file"),
    })
}

/// `text`'s lines with their endings (`str.splitlines(True)`), the last
/// one, when it has no line ending, followed by `\ No newline at end of
/// file` as `diff` and git print it: diffed as lines, a missing final
/// newline then shows as a marked line instead of a line glued to the next
/// one (difflib writes the line as it is).
pub fn lines_marking_missing_newline(text: &str) -> Vec<std::borrow::Cow<'_, str>> {
    let mut lines: Vec<std::borrow::Cow<'_, str>> =
        patchgen_python::pytext::splitlines_keepends(text).into_iter().map(Into::into).collect();
    if let Some(last) = lines.last_mut().filter(|l| !l.ends_with(['\n', '\r'])) {
        *last = format!("{last}\n\\ No newline at end of file\n").into();
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_newlines_only() {
        assert!(only_final_newlines("a\n", "a\n\n"));
        assert!(only_final_newlines("a\n\n\n", "a\n"));
        assert!(only_final_newlines("a", "a\n"));
        assert!(!only_final_newlines("a\n", "a\n"));
        assert!(!only_final_newlines("a\n", "b\n\n"));
        assert!(!only_final_newlines("a \n", "a\n\n"));
        assert!(!only_final_newlines("", "\n"));
        assert!(!only_final_newlines("\n", "\n\n"));
        assert_eq!(with_final_newlines_of("", "y\n\n"), "");
        assert_eq!(with_final_newlines_of("x\n", "y\n\n"), "x\n\n");
        assert_eq!(with_final_newlines_of("x\n\n\n", "y"), "x");
    }

    #[test]
    fn explains_final_newlines() {
        let e = |a, b| explain(a, b).unwrap();
        assert_eq!(e("a\n", "a\n\n"), "the checked-in file lacks the final blank line");
        assert_eq!(e("a\n", "a\n\n\n"), "the checked-in file lacks the final 2 blank lines");
        assert_eq!(e("a", "a\n"), "the checked-in file lacks the final newline");
        assert_eq!(e("a", "a\n\n"), "the checked-in file lacks the final newline and the 1 blank line after it");
        assert_eq!(e("a\n\n", "a\n"), "the checked-in file has 1 blank line more at the end");
        assert_eq!(e("a\n", "a"), "the checked-in file ends with a newline the generated file does not have");
    }

    #[test]
    fn explains_crlf_and_trailing_whitespace() {
        assert_eq!(
            explain("a\r\nb\r\n", "a\nb\n").unwrap(),
            "only the line endings differ: the checked-in file has CRLF (\\r\\n) line endings"
        );
        assert_eq!(
            explain("a\n  \nb\n", "a\n\nb\n").unwrap(),
            "only trailing whitespace differs: the checked-in file has extra on line 2"
        );
        assert_eq!(
            explain("x\na\nb\n", "x\na \nb\t\n").unwrap(),
            "only trailing whitespace differs: the checked-in file lacks it on lines 2, 3"
        );
        assert_eq!(
            explain("a \nb\n", "a\nb \n").unwrap(),
            "only trailing whitespace differs, on lines 1, 2 of the checked-in file"
        );
        let many_e = "a\n".repeat(7);
        let many_x = "a \n".repeat(7);
        assert!(explain(&many_e, &many_x).unwrap().ends_with("lines 1, 2, 3, 4, 5 and 2 more"));
    }

    #[test]
    fn visible_differences_are_not_explained() {
        assert_eq!(explain("a\n", "b\n"), None);
        assert_eq!(explain("a\nb\n", "a\n"), None);
        assert_eq!(explain("a\n", "a\n"), None);
        assert_eq!(explain("ab \n", "a\n"), None);
    }

    #[test]
    fn missing_newline_is_marked() {
        assert_eq!(lines_marking_missing_newline("a\nb"), ["a\n", "b\n\\ No newline at end of file\n"]);
        assert_eq!(lines_marking_missing_newline("a\nb\n"), ["a\n", "b\n"]);
        assert!(lines_marking_missing_newline("").is_empty());
    }
}
