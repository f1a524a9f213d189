//! A finding's fix, as every output carries it (ruff's `Fix`): how safe it
//! is to apply ([`Applicability`]), one line saying what it does, and the
//! text edits, each a range of one file replaced by new text.
//!
//! Positions are 1-based lines and 1-based columns counted in characters,
//! as a [`crate::Location`]'s; an edit's `end` is exclusive (`start == end`
//! inserts). This module holds the data and the pure text maths (a
//! position's byte offset, edits applied to a text); building fixes,
//! choosing which to apply and writing files is `patchgen_lint::fix`'s.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// When a fix may be applied without asking (ruff's three levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Shown, never applied: the edit needs a human's judgement.
    DisplayOnly,
    /// Applied with `--unsafe-fixes`: it may change what the code means.
    Unsafe,
    /// Applied by `--fix`: it keeps the meaning the finding asks for.
    Safe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::DisplayOnly => "display-only",
            Applicability::Unsafe => "unsafe",
            Applicability::Safe => "safe",
        }
    }
}

/// A place between two characters of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Position {
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
}

/// One text edit: `path`'s text from `start` to `end` replaced by `content`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Edit {
    pub path: PathBuf,
    pub start: Position,
    pub end: Position,
    pub content: String,
}

/// A fix: what it does, how safe it is, its edits (non-overlapping).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fix {
    pub applicability: Applicability,
    /// What applying it does, one line (`Retarget to \`Olmo2MLP.forward\``).
    pub message: String,
    pub edits: Vec<Edit>,
}

/// Why edits could not be applied to a text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("{path}:{line}:{column}: the edit's position is outside the file", path = .0.display(), line = .1.line, column = .1.column)]
    OutOfRange(PathBuf, Position),
    #[error("{path}:{line}:{column}: two edits overlap", path = .0.display(), line = .1.line, column = .1.column)]
    Overlap(PathBuf, Position),
}

/// The byte offset of `at` in `text` (`None` past the end of its line or file).
/// Lines end at `\n` (a `\r` before it is part of the line's text).
pub fn offset(text: &str, at: Position) -> Option<usize> {
    let mut line_start = 0usize;
    for _ in 1..at.line.max(1) {
        line_start += text[line_start..].find('\n')? + 1;
    }
    let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
    let line = &text[line_start..line_end];
    let column = at.column.max(1) - 1;
    if column == line.chars().count() {
        return Some(line_end);
    }
    line.char_indices().nth(column).map(|(i, _)| line_start + i)
}

/// The position of byte `offset` of `text` (the inverse of [`offset`]).
pub fn position(text: &str, offset: usize) -> Position {
    let (line, column) = crate::line_column(text, offset);
    Position { line, column }
}

/// `text` with `edits` applied (each edit's `path` is not looked at).
pub fn apply(text: &str, edits: &[&Edit]) -> Result<String, EditError> {
    let mut spans = Vec::with_capacity(edits.len());
    for e in edits {
        let start = offset(text, e.start).ok_or_else(|| EditError::OutOfRange(e.path.clone(), e.start))?;
        let end = offset(text, e.end).ok_or_else(|| EditError::OutOfRange(e.path.clone(), e.end))?;
        if end < start {
            return Err(EditError::OutOfRange(e.path.clone(), e.end));
        }
        spans.push((start, end, *e));
    }
    spans.sort_by_key(|&(s, e, _)| (s, e));
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0usize;
    for (start, end, e) in spans {
        if start < at {
            return Err(EditError::Overlap(e.path.clone(), e.start));
        }
        out.push_str(&text[at..start]);
        out.push_str(&e.content);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(start: (usize, usize), end: (usize, usize), content: &str) -> Edit {
        Edit {
            path: "f.py".into(),
            start: Position { line: start.0, column: start.1 },
            end: Position { line: end.0, column: end.1 },
            content: content.into(),
        }
    }

    #[test]
    fn positions_and_offsets_agree() {
        let text = "ab\ncé d\n\nx";
        for i in 0..=text.len() {
            if text.is_char_boundary(i) {
                assert_eq!(offset(text, position(text, i)), Some(i), "offset {i}");
            }
        }
        assert_eq!(offset(text, Position { line: 2, column: 9 }), None);
        assert_eq!(offset(text, Position { line: 9, column: 1 }), None);
    }

    #[test]
    fn edits_apply_in_source_order_and_refuse_overlaps() {
        let text = "a = 1\nb = 2\n";
        let (e1, e2) = (edit((2, 5), (2, 6), "3"), edit((1, 1), (1, 1), "# x\n"));
        assert_eq!(apply(text, &[&e1, &e2]).unwrap(), "# x\na = 1\nb = 3\n");
        let e3 = edit((2, 1), (2, 6), "");
        assert!(matches!(apply(text, &[&e1, &e3]), Err(EditError::Overlap(..))));
    }

    #[test]
    fn applicability_serialises_as_ruff_names() {
        let json = serde_json::to_string(&[Applicability::Safe, Applicability::Unsafe, Applicability::DisplayOnly]);
        assert_eq!(json.unwrap(), r#"["safe","unsafe","display-only"]"#);
    }
}
