//! Text edits shared by the rules that offer a fix (PG301's slice-first
//! fix today): an [`Edit`] replaces a range of the source, [`apply`] applies
//! non-overlapping edits in source order.

use ruff_text_size::TextRange;

/// A text edit: `range` of the source replaced by `content` (an empty
/// range inserts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub range: TextRange,
    pub content: String,
}

/// `text` with `edits` applied (ranges into `text`, not overlapping).
pub fn apply(text: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start(), e.range.end()));
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0usize;
    for e in sorted {
        let (start, end) = (usize::from(e.range.start()), usize::from(e.range.end()));
        out.push_str(&text[at..start]);
        out.push_str(&e.content);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}
