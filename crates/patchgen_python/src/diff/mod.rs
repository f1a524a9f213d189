//! Unified diffs exactly as CPython's `difflib.unified_diff` writes them.

mod sequence_matcher;

#[cfg(test)]
mod tests;

pub use sequence_matcher::{Match, Opcode, SequenceMatcher, Tag};

/// `"".join(difflib.unified_diff(a, b, fromfile, tofile, n=n))` where `a`/`b` are lists of
/// lines *with* their line endings (as `str.splitlines(keepends=True)` gives them),
/// fromfiledate/tofiledate empty, lineterm="\n".
///
/// Lines are written as they are, so a last line without a line ending is
/// written without one (there is no "\ No newline at end of file" marker).
/// Identical inputs give the empty string.
pub fn unified_diff(a: &[&str], b: &[&str], fromfile: &str, tofile: &str, n: usize) -> String {
    let groups = SequenceMatcher::new(a, b).get_grouped_opcodes(n);
    let mut out = String::new();
    if groups.is_empty() {
        return out;
    }
    out.push_str("--- ");
    out.push_str(fromfile);
    out.push_str("\n+++ ");
    out.push_str(tofile);
    out.push('\n');
    for group in &groups {
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push_str("@@ -");
        push_range_unified(&mut out, first.i1, last.i2);
        out.push_str(" +");
        push_range_unified(&mut out, first.j1, last.j2);
        out.push_str(" @@\n");
        for op in group {
            if op.tag == Tag::Equal {
                push_lines(&mut out, ' ', &a[op.i1..op.i2]);
                continue;
            }
            if matches!(op.tag, Tag::Replace | Tag::Delete) {
                push_lines(&mut out, '-', &a[op.i1..op.i2]);
            }
            if matches!(op.tag, Tag::Replace | Tag::Insert) {
                push_lines(&mut out, '+', &b[op.j1..op.j2]);
            }
        }
    }
    out
}

/// `_format_range_unified(start, stop)`: `"1"`, `"3,4"`, or `"2,0"` for an
/// empty range (which begins at the line just before it).
fn push_range_unified(out: &mut String, start: usize, stop: usize) {
    use std::fmt::Write;
    let mut beginning = start + 1;
    let length = stop - start;
    if length == 1 {
        write!(out, "{beginning}").unwrap();
        return;
    }
    if length == 0 {
        beginning -= 1;
    }
    write!(out, "{beginning},{length}").unwrap();
}

fn push_lines(out: &mut String, prefix: char, lines: &[&str]) {
    for line in lines {
        out.push(prefix);
        out.push_str(line);
    }
}
