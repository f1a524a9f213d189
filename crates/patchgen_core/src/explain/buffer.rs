//! A generated file as someone holds it — checked in on disk, or in an
//! editor's buffer — against what its config generates: which of its lines
//! are the generator's (and where each came from), which regions are hand
//! edits, and the origin responsible for each such region (the config line
//! of the patch that writes it, or the upstream line it copies).
//!
//! Lines are compared as `str.splitlines()` gives them, aligned by
//! `difflib.SequenceMatcher` without autojunk (so a hand edit far from
//! anything else is one small region, as `--check`'s drift diff shows it).

use serde::Serialize;

use super::Mapped;
use crate::provenance::map::Origin;
use patchgen_python::diff::{SequenceMatcher, Tag};
use patchgen_python::pytext;

/// Lines of the held file that differ from what the config generates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Region {
    /// 1-based first line of the region in the held file.
    pub start: usize,
    /// How many lines of the held file the region covers (0: the config
    /// generates lines that the held file lacks, before line `start`).
    pub lines: usize,
    /// 1-based first line of what the config generates instead.
    pub generated_start: usize,
    /// What the config generates there (empty: the held lines are extra).
    pub expected: Vec<String>,
    /// The origin of the generated lines the region replaces (for extra
    /// lines: of the generated line just above them).
    pub responsible: Option<Origin>,
}

impl Region {
    /// 1-based last line of the region in the held file (its start when it covers none).
    pub fn end(&self) -> usize {
        self.start + self.lines.saturating_sub(1)
    }

    /// Whether the held file's 1-based `line` lies in the region.
    pub fn contains(&self, line: usize) -> bool {
        line >= self.start && line < self.start + self.lines
    }
}

/// One line of the held file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineVerdict {
    /// The line is what the config generates, at generated line `line`.
    Generated { line: usize, origin: Option<Origin> },
    /// The line is part of a hand edit.
    HandEdit(Region),
}

/// The held file compared with the generated one.
pub struct Compared {
    /// Per held line (0-based), the generated line it equals (1-based), if any.
    same: Vec<Option<usize>>,
    regions: Vec<Region>,
}

impl Compared {
    /// Compare `held` (the file's text) with `mapped`'s generated text.
    pub fn new(mapped: &Mapped, held: &str) -> Compared {
        let held = pytext::universal_newlines(held);
        let a = pytext::splitlines(&held);
        let b = pytext::splitlines(&mapped.text);
        let resolver = mapped.resolver();
        let mut same = vec![None; a.len()];
        let mut regions = Vec::new();
        for op in SequenceMatcher::with_autojunk(&a, &b, false).get_opcodes() {
            match op.tag {
                Tag::Equal => {
                    for (k, slot) in same[op.i1..op.i2].iter_mut().enumerate() {
                        *slot = Some(op.j1 + k + 1);
                    }
                }
                Tag::Replace | Tag::Delete | Tag::Insert => {
                    // The generated line behind the region: its first, or for
                    // extra held lines the one above them (the first when none is).
                    let behind = if op.j2 > op.j1 { op.j1 + 1 } else { op.j1.max(1) };
                    regions.push(Region {
                        start: op.i1 + 1,
                        lines: op.i2 - op.i1,
                        generated_start: op.j1 + 1,
                        expected: b[op.j1..op.j2].iter().map(|s| s.to_string()).collect(),
                        responsible: resolver.line(behind),
                    });
                }
            }
        }
        Compared { same, regions }
    }

    /// The regions where the held file differs, in file order.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Whether the held file is exactly what the config generates (line for line).
    pub fn is_clean(&self) -> bool {
        self.regions.is_empty()
    }

    /// What the held file's 1-based `line` is; `None` past its end.
    pub fn line(&self, mapped: &Mapped, line: usize) -> Option<LineVerdict> {
        let slot = self.same.get(line.checked_sub(1)?)?;
        Some(match slot {
            Some(g) => LineVerdict::Generated { line: *g, origin: mapped.resolver().line(*g) },
            None => {
                LineVerdict::HandEdit(self.regions.iter().find(|r| r.contains(line)).cloned().unwrap_or_else(|| {
                    Region { start: line, lines: 1, generated_start: line, expected: Vec::new(), responsible: None }
                }))
            }
        })
    }
}

/// The hunk of a `.diff` that line `line` (1-based) of its text belongs
/// to: its index among the file's `@@` hunks, `None` on the `---`/`+++`
/// header or past the end.
pub fn diff_hunk_at(diff: &str, line: usize) -> Option<usize> {
    let lines = pytext::splitlines(diff);
    let upto = lines.get(..line)?;
    upto.iter().filter(|l| l.starts_with("@@ ")).count().checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_index_counts_headers_up_to_the_line() {
        let diff = "--- a/x.py\n+++ b/y.py\n@@ -1 +1 @@\n-a\n+b\n@@ -9 +9 @@\n-c\n+d\n";
        assert_eq!(diff_hunk_at(diff, 1), None);
        assert_eq!(diff_hunk_at(diff, 2), None);
        assert_eq!(diff_hunk_at(diff, 3), Some(0));
        assert_eq!(diff_hunk_at(diff, 5), Some(0));
        assert_eq!(diff_hunk_at(diff, 6), Some(1));
        assert_eq!(diff_hunk_at(diff, 8), Some(1));
        assert_eq!(diff_hunk_at(diff, 9), None);
        assert_eq!(diff_hunk_at(diff, 0), None);
    }
}
