//! The origin of every line of codegen's raw (pre-ruff) text, recorded by
//! the generator while it assembles the text, and what became of the
//! upstream lines it did not copy.
//!
//! Indexes, not paths: a [`RawOrigin`] names a patch, import or helper by
//! its index in the plan, and upstream or config lines by number; the
//! [`super::map`] resolves them against the plan.

use std::ops::Range;

/// Where one line of the raw text came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RawOrigin {
    /// The generated header, section comments and separators.
    Header,
    /// An upstream import statement as the generator re-renders it
    /// (`line`: the statement's first upstream line); `dropped`: the index
    /// in `plan.call_sites.drops` of a name `drop_import_names` removed
    /// from it.
    UpstreamImport { line: u32, dropped: Option<u32> },
    /// `plan.additional_imports[index]`.
    Import { index: u32 },
    /// A line of `plan.post_import_blocks[index]`.
    Block { index: u32 },
    /// Upstream line `line` (1-based), copied verbatim.
    Upstream { line: u32 },
    /// `plan.patches[patch]`: line `line` of its replacement's file (the
    /// file defining the replacement, usually the config).
    Patch { patch: u32, line: u32 },
    /// The banner comment the generator writes for `plan.patches[patch]`.
    Banner { patch: u32 },
    /// A helper's source: `plan.helpers[helper]`, or
    /// `plan.positioned_helpers[helper]` when `positioned`.
    Helper { helper: u32, positioned: bool, line: u32 },
    /// `__all__` re-rendered without names `exclude_from_output` removed
    /// (`site`: index in `plan.call_sites.excludes`, if known).
    Exclude { site: Option<u32> },
}

/// Why upstream lines the generator did not copy are missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemovedBy {
    /// Replaced by `plan.patches[patch]` (a class, function or method).
    Patch { patch: u32 },
    /// `exclude_from_output` (index in `plan.call_sites.excludes`).
    Exclude { site: Option<u32> },
    /// An import statement, re-rendered in the import block as the
    /// raw line with origin `UpstreamImport { line: first, .. }`.
    ImportRendered { first: u32 },
    /// An import statement whose every name `drop_import_names` dropped
    /// (index in `plan.call_sites.drops`).
    ImportDropped { site: Option<u32> },
}

/// Upstream lines (1-based, half-open) and why they are not in the raw text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    pub lines: Range<u32>,
    pub by: RemovedBy,
}

/// One raw text's trace: `lines[i]` is the origin of the raw text's line
/// `i` (0-based, lines split at `\n`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawTrace {
    pub lines: Vec<RawOrigin>,
    pub removed: Vec<Removed>,
}

/// The origins of one piece of raw text (lines split at `\n`).
#[derive(Clone, Debug)]
pub enum Origins {
    /// Every line the same.
    All(RawOrigin),
    /// Consecutive upstream lines starting at this 1-based line.
    Upstream(u32),
    /// One per line.
    Lines(Vec<RawOrigin>),
}

impl Origins {
    /// The origins of `n` lines (the last one repeated, or `Header`, if
    /// the list is short: a piece whose line count changed in a way the
    /// trace did not foresee keeps a trace of the right length).
    pub fn expand(self, n: usize, out: &mut Vec<RawOrigin>) {
        match self {
            Origins::All(o) => out.extend(std::iter::repeat_n(o, n)),
            Origins::Upstream(first) => out.extend((0..n).map(|i| RawOrigin::Upstream { line: first + i as u32 })),
            Origins::Lines(lines) => {
                debug_assert_eq!(lines.len(), n, "one origin per line");
                let last = lines.last().copied().unwrap_or(RawOrigin::Header);
                out.extend(lines.iter().copied().take(n));
                out.extend(std::iter::repeat_n(last, n.saturating_sub(lines.len())));
            }
        }
    }
}

/// Number of `\n`-separated lines of `text` (`"".split('\n')` has one).
pub fn piece_lines(text: &str) -> usize {
    memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1
}

/// Config lines of a replacement's prepared text: `kept[i]` is the
/// source line index of prepared line `i` in `object.source`. `origin`
/// makes the origin from a config line.
pub fn config_lines(
    kept: &[u32],
    object: &patchgen_config::plan::SourceObject,
    origin: impl Fn(u32) -> RawOrigin,
) -> Vec<RawOrigin> {
    kept.iter().map(|&k| origin(object.line_of(k as usize) as u32)).collect()
}

/// Carry origins across `collapse_blank_lines`: `after` is a subsequence
/// of `before` (lines split at `\n`) that dropped only blank lines; the
/// origins of the kept lines, in order.
pub fn collapse_origins(before: &str, after: &str, origins: &[RawOrigin]) -> Vec<RawOrigin> {
    // Nothing dropped (the common case when pieces are separated as codegen does).
    if piece_lines(after) == origins.len() && after.len() == before.len() {
        return origins.to_vec();
    }
    let mut out = Vec::with_capacity(origins.len());
    let mut old = newline_split(before).zip(origins.iter().copied());
    for line in newline_split(after) {
        let found = old.by_ref().find(|(l, _)| *l == line);
        out.push(found.map_or(RawOrigin::Header, |(_, o)| o));
    }
    out
}

/// `s.split('\n')`, a `memchr` scan.
fn newline_split(s: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', s.as_bytes()).chain(std::iter::once(s.len())).map(move |end| {
        let line = &s[start..end];
        start = end + 1;
        line
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_at_newlines_like_str_split() {
        for s in ["", "a", "a\n", "\n\nb\nc", "x\r\ny"] {
            assert_eq!(newline_split(s).collect::<Vec<_>>(), s.split('\n').collect::<Vec<_>>());
        }
    }

    #[test]
    fn collapsed_blank_lines_take_their_origins_along() {
        let o = |line| RawOrigin::Upstream { line };
        let before = "a\n\n\n\n\nb";
        let after = crate::codegen::text::collapse_blank_lines(before, 2);
        assert_eq!(after, "a\n\n\nb");
        assert_eq!(collapse_origins(before, &after, &[o(1), o(2), o(3), o(4), o(5), o(6)]), [o(1), o(2), o(3), o(6)]);
    }
}
