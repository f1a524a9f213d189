//! Rows put into a test file by adding lines only: each table's copies go
//! after the line that ends the sibling's last row (before its first row
//! when that last row has no trailing comma, so no existing line changes).
//! The result is checked: every original line is still there, in order,
//! unchanged ([`only_added_lines`], python3 `difflib` would show only `+`
//! lines), and Python's grammar accepts it (ruff's parser). When the
//! project's ruff reformats what was added (a renamed name made a line too
//! long), [`added_blocks`] gives back the text each insertion became.

/// Lines to add before the 0-based line `before` (`== line count`: at the end).
#[derive(Clone, Debug)]
pub struct Insertion {
    pub before: usize,
    pub text: String,
    /// Whose text it is: the index of the table in the file's plan and the
    /// rows (first, count) it holds.
    pub owner: (usize, usize, usize),
}

/// The blocks of lines `new` adds to `old` (python3 difflib's `insert`
/// opcodes, lines with their ends): before which line of `old`, and the text.
pub fn added_blocks(old: &str, new: &str) -> Vec<(usize, String)> {
    use patchgen_python::diff::{SequenceMatcher, Tag};
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    SequenceMatcher::with_autojunk(&a, &b, false)
        .get_opcodes()
        .into_iter()
        .filter(|o| o.tag == Tag::Insert)
        .map(|o| (o.i1, b[o.j1..o.j2].concat()))
        .collect()
}

/// `text` with the insertions (applied in line order; ties keep their order).
pub fn insert(text: &str, insertions: &[Insertion]) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut sorted: Vec<&Insertion> = insertions.iter().collect();
    sorted.sort_by_key(|i| i.before);
    let mut out = String::with_capacity(text.len() + insertions.iter().map(|i| i.text.len()).sum::<usize>());
    let mut next = sorted.into_iter().peekable();
    for (i, line) in lines.iter().enumerate() {
        while let Some(ins) = next.next_if(|ins| ins.before == i) {
            out.push_str(&ins.text);
        }
        out.push_str(line);
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for ins in next {
        out.push_str(&ins.text);
    }
    out
}

/// Whether `new` is `old` with lines added only (every line of `old`, in
/// order, unchanged).
pub fn only_added_lines(old: &str, new: &str) -> bool {
    let mut new_lines = new.lines();
    old.lines().all(|l| new_lines.any(|n| n == l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_whole_lines() {
        let text = "A = [\n    1,\n]\n";
        let out = insert(text, &[Insertion { before: 2, text: "    2,\n".into(), owner: (0, 0, 1) }]);
        assert_eq!(out, "A = [\n    1,\n    2,\n]\n");
        assert!(only_added_lines(text, &out));
        assert_eq!(added_blocks(text, &out), [(2, "    2,\n".to_string())]);
        assert!(!only_added_lines(text, "A = [\n    1, 2,\n]\n"));
    }
}
