//! A line-level three-way merge, as `git merge-file --diff3` does it.
//!
//! `merge3(base, ours, theirs)` diffs `base` against each side (Myers, the
//! algorithm `git merge-file` uses by default), finds the *sync regions*
//! where all three agree, and classifies what lies between two of them:
//! unchanged, changed on one side only (taken from that side), changed the
//! same way on both, or changed differently on both (a conflict). Two
//! changes are independent only when at least one base line that neither
//! side touched separates them, so a change that merely touches another
//! (adjacent hunks, or insertions at the same place) is a conflict, exactly
//! as in git's `xdl_merge` at its diff3 level (`XDL_MERGE_EAGER`).
//!
//! The result keeps every region as a `Chunk` with its line ranges in the
//! three texts, so a caller can say which upstream hunks were carried and
//! where each conflict is; `Merge::render` writes the merged lines with
//! git's diff3 conflict markers. Pure: lines in, ranges out.

#[cfg(test)]
mod tests;

use std::ops::Range;

use similar::{Algorithm, DiffOp, capture_diff_slices};

/// One region of a three-way merge, with its line ranges in each text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub kind: ChunkKind,
    pub base: Range<usize>,
    pub ours: Range<usize>,
    pub theirs: Range<usize>,
}

/// What happened to a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChunkKind {
    /// All three agree.
    Unchanged,
    /// Only `ours` changed it: ours is kept.
    Ours,
    /// Only `theirs` changed it: theirs is carried into the result.
    Theirs,
    /// Both changed it the same way.
    Same,
    /// Both changed it, differently.
    Conflict,
}

/// The chunks of a merge, in order, covering the three texts entirely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merge {
    pub chunks: Vec<Chunk>,
}

/// Labels of git's conflict markers: `<<<<<<< ours`, `||||||| base`, `>>>>>>> theirs`.
#[derive(Clone, Copy, Debug)]
pub struct Labels<'a> {
    pub ours: &'a str,
    pub base: &'a str,
    pub theirs: &'a str,
}

/// Merge `ours` and `theirs`, two descendants of `base` (lines, with or
/// without their line endings: they are compared as they are).
///
/// The diffs are Myers', changes slid as git slides them. Where repeated
/// lines make that alignment end in a conflict, others are tried for each
/// side independently (imara-diff's Myers, which follows git's xdiff
/// heuristics, from either end; Myers from the other end; patience; a
/// plain LCS) and the pair with the fewest lines in conflict wins.
pub fn merge3<T: AsRef<str>>(base: &[T], ours: &[T], theirs: &[T]) -> Merge {
    let base: Vec<&str> = base.iter().map(AsRef::as_ref).collect();
    let ours: Vec<&str> = ours.iter().map(AsRef::as_ref).collect();
    let theirs: Vec<&str> = theirs.iter().map(AsRef::as_ref).collect();
    let blocks = |side: &[&str], a: Alignment| matching_blocks(&base, side, a);
    let (first_ours, first_theirs) = (blocks(&ours, Alignment::Myers), blocks(&theirs, Alignment::Myers));
    let mut best = merge_blocks(&base, &ours, &theirs, &first_ours, &first_theirs);
    if best.is_clean() {
        return best;
    }
    // Each side's diff aligned independently: one alignment of one side and
    // another of the other can be the pair that merges cleanly (git's own
    // pick among equally short alignments is among them).
    let mut ours_alignments = vec![first_ours];
    let mut theirs_alignments = vec![first_theirs];
    for a in [
        Alignment::GitMyers,
        Alignment::GitMyersReversed,
        Alignment::MyersReversed,
        Alignment::Patience,
        Alignment::Lcs,
    ] {
        ours_alignments.push(blocks(&ours, a));
        theirs_alignments.push(blocks(&theirs, a));
    }
    let mut best_cost = best.conflict_cost();
    'search: for (i, o) in ours_alignments.iter().enumerate() {
        for (j, t) in theirs_alignments.iter().enumerate() {
            if i == 0 && j == 0 {
                continue;
            }
            let other = merge_blocks(&base, &ours, &theirs, o, t);
            let cost = other.conflict_cost();
            if cost < best_cost {
                (best, best_cost) = (other, cost);
                if best.is_clean() {
                    break 'search;
                }
            }
        }
    }
    best
}

/// How the two diffs of a merge line the texts up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Alignment {
    /// imara-diff's Myers, with git's preprocessing and heuristics (its
    /// pick among equally short alignments is closer to xdiff's).
    GitMyers,
    /// imara-diff's Myers over the reversed texts.
    GitMyersReversed,
    /// `similar`'s Myers: the first alignment tried.
    Myers,
    /// Myers over the reversed texts (where repeated lines make several
    /// alignments equally short, it prefers the other end).
    MyersReversed,
    /// Patience: unique lines first.
    Patience,
    /// A longest common subsequence (another tie-break among repeated lines).
    Lcs,
}

fn merge_blocks(base: &[&str], ours: &[&str], theirs: &[&str], to_ours: &[Block], to_theirs: &[Block]) -> Merge {
    let syncs = sync_regions(to_ours, to_theirs, base, ours, theirs);
    let mut chunks = Vec::new();
    let (mut iz, mut ia, mut ib) = (0, 0, 0);
    for s in syncs {
        if s.ours.start > ia || s.theirs.start > ib || s.base.start > iz {
            let (z, a, b) = (iz..s.base.start, ia..s.ours.start, ib..s.theirs.start);
            let ours_kept = ours[a.clone()] == base[z.clone()];
            let theirs_kept = theirs[b.clone()] == base[z.clone()];
            let kind = if ours_kept && theirs_kept {
                ChunkKind::Unchanged
            } else if ours[a.clone()] == theirs[b.clone()] {
                ChunkKind::Same
            } else if ours_kept {
                ChunkKind::Theirs
            } else if theirs_kept {
                ChunkKind::Ours
            } else {
                ChunkKind::Conflict
            };
            chunks.push(Chunk { kind, base: z, ours: a, theirs: b });
        }
        if !s.base.is_empty() {
            chunks.push(Chunk {
                kind: ChunkKind::Unchanged,
                base: s.base.clone(),
                ours: s.ours.clone(),
                theirs: s.theirs.clone(),
            });
        }
        (iz, ia, ib) = (s.base.end, s.ours.end, s.theirs.end);
    }
    Merge { chunks }
}

impl Merge {
    /// The chunks in conflict.
    pub fn conflicts(&self) -> impl Iterator<Item = &Chunk> {
        self.chunks.iter().filter(|c| c.kind == ChunkKind::Conflict)
    }

    /// Whether every region merged without a conflict.
    /// Lines in conflict (in the three texts), then conflicts: what the
    /// choice among alignments minimises (one large conflict is not better
    /// than two small ones beside a carried change).
    fn conflict_cost(&self) -> (usize, usize) {
        let lines = self.conflicts().map(|c| c.base.len() + c.ours.len() + c.theirs.len()).sum();
        (lines, self.conflicts().count())
    }

    pub fn is_clean(&self) -> bool {
        self.conflicts().next().is_none()
    }

    /// The merged lines: unchanged and one-sided regions resolved, each
    /// conflict written in git's diff3 form (`<<<<<<< ours`, ours,
    /// `||||||| base`, base, `=======`, theirs, `>>>>>>> theirs`), or, with
    /// no labels, left as ours. Lines are joined as given; every marker
    /// line ends in `newline`, and a side whose last line lacks a line
    /// ending gets one before the next marker.
    pub fn render<T: AsRef<str>>(
        &self,
        base: &[T],
        ours: &[T],
        theirs: &[T],
        labels: Option<Labels<'_>>,
        newline: &str,
    ) -> String {
        let mut out = String::new();
        let push = |out: &mut String, lines: &[T]| {
            for l in lines {
                out.push_str(l.as_ref());
            }
        };
        let marker = |out: &mut String, text: &str, label: &str| {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push_str(newline);
            }
            out.push_str(text);
            if !label.is_empty() {
                out.push(' ');
                out.push_str(label);
            }
            out.push_str(newline);
        };
        for c in &self.chunks {
            match c.kind {
                ChunkKind::Unchanged | ChunkKind::Ours | ChunkKind::Same => push(&mut out, &ours[c.ours.clone()]),
                ChunkKind::Theirs => push(&mut out, &theirs[c.theirs.clone()]),
                ChunkKind::Conflict => {
                    let Some(labels) = labels else {
                        push(&mut out, &ours[c.ours.clone()]);
                        continue;
                    };
                    marker(&mut out, "<<<<<<<", labels.ours);
                    push(&mut out, &ours[c.ours.clone()]);
                    marker(&mut out, "|||||||", labels.base);
                    push(&mut out, &base[c.base.clone()]);
                    marker(&mut out, "=======", "");
                    push(&mut out, &theirs[c.theirs.clone()]);
                    marker(&mut out, ">>>>>>>", labels.theirs);
                }
            }
        }
        out
    }

    /// Where each chunk is in `render`'s output, in lines (a conflict's
    /// range spans its markers when `markers`; else ours is taken).
    pub fn output_ranges(&self, markers: bool) -> Vec<Range<usize>> {
        let mut at = 0;
        self.chunks
            .iter()
            .map(|c| {
                let len = match c.kind {
                    ChunkKind::Theirs => c.theirs.len(),
                    ChunkKind::Conflict if markers => c.ours.len() + c.base.len() + c.theirs.len() + 4,
                    _ => c.ours.len(),
                };
                at += len;
                at - len..at
            })
            .collect()
    }
}

/// Whether `line` is one of git's conflict markers: `<<<<<<<`, `|||||||`,
/// `=======` or `>>>>>>>` at column 0, alone or (but `=======`) followed by
/// a space and a label.
pub fn is_marker(line: &str) -> bool {
    let line = line.trim_end_matches(['\n', '\r']);
    ["<<<<<<<", "|||||||", "=======", ">>>>>>>"]
        .iter()
        .any(|m| line.strip_prefix(m).is_some_and(|rest| rest.is_empty() || (rest.starts_with(' ') && *m != "=======")))
}

/// The 1-based line of the first conflict marker in a Python text, if any:
/// a `<<<<<<<`, `|||||||` or `>>>>>>>` line, never valid Python at column 0
/// (`=======` alone may be a heading's underline inside a string, and a
/// conflict's `=======` always follows its `<<<<<<<`).
pub fn first_marker(text: &str) -> Option<usize> {
    if !text.contains("<<<<<<<") && !text.contains("|||||||") && !text.contains(">>>>>>>") {
        return None;
    }
    text.lines().position(|l| is_marker(l) && !l.starts_with("=======")).map(|i| i + 1)
}

/// A run of equal lines: `a[a..a+len] == b[b..b+len]`.
#[derive(Clone, Copy, Debug)]
struct Block {
    a: usize,
    b: usize,
    len: usize,
}

/// The equal runs of a diff of `a` and `b`, in order, after each side's
/// changes are slid as git slides them (`compact`).
fn matching_blocks(a: &[&str], b: &[&str], alignment: Alignment) -> Vec<Block> {
    let mut ca = vec![false; a.len()];
    let mut cb = vec![false; b.len()];
    let ops = match alignment {
        Alignment::GitMyers => imara_ops(a, b),
        Alignment::Myers => capture_diff_slices(Algorithm::Myers, a, b),
        Alignment::Patience => capture_diff_slices(Algorithm::Patience, a, b),
        Alignment::Lcs => capture_diff_slices(Algorithm::Lcs, a, b),
        Alignment::MyersReversed | Alignment::GitMyersReversed => {
            let ra: Vec<&str> = a.iter().rev().copied().collect();
            let rb: Vec<&str> = b.iter().rev().copied().collect();
            let reversed = if alignment == Alignment::MyersReversed {
                capture_diff_slices(Algorithm::Myers, &ra, &rb)
            } else {
                imara_ops(&ra, &rb)
            };
            reversed
                .into_iter()
                .map(|op| {
                    let (_, old, new) = op.as_tag_tuple();
                    let (old, new) = (a.len() - old.end..a.len() - old.start, b.len() - new.end..b.len() - new.start);
                    match op {
                        DiffOp::Equal { len, .. } => DiffOp::Equal { old_index: old.start, new_index: new.start, len },
                        DiffOp::Delete { .. } => {
                            DiffOp::Delete { old_index: old.start, old_len: old.len(), new_index: new.start }
                        }
                        DiffOp::Insert { .. } => {
                            DiffOp::Insert { old_index: old.start, new_index: new.start, new_len: new.len() }
                        }
                        DiffOp::Replace { .. } => DiffOp::Replace {
                            old_index: old.start,
                            old_len: old.len(),
                            new_index: new.start,
                            new_len: new.len(),
                        },
                    }
                })
                .collect()
        }
    };
    for op in ops {
        match op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete { old_index, old_len, .. } => ca[old_index..old_index + old_len].fill(true),
            DiffOp::Insert { new_index, new_len, .. } => cb[new_index..new_index + new_len].fill(true),
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                ca[old_index..old_index + old_len].fill(true);
                cb[new_index..new_index + new_len].fill(true);
            }
        }
    }
    compact(a, &mut ca, &cb);
    compact(b, &mut cb, &ca);
    let mut out: Vec<Block> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match (ca[i], cb[j]) {
            (false, false) => {
                match out.last_mut() {
                    Some(last) if last.a + last.len == i && last.b + last.len == j => last.len += 1,
                    _ => out.push(Block { a: i, b: j, len: 1 }),
                }
                i += 1;
                j += 1;
            }
            (true, _) => i += 1,
            (false, true) => j += 1,
        }
    }
    out
}

/// The diff of `a` and `b` by imara-diff's Myers, as `similar`'s ops.
fn imara_ops(a: &[&str], b: &[&str]) -> Vec<DiffOp> {
    use imara_diff::intern::Token;
    fn tokens<'t>(lines: &[&'t str], ids: &mut std::collections::HashMap<&'t str, u32>) -> Vec<Token> {
        lines
            .iter()
            .map(|l| {
                let n = ids.len() as u32;
                Token(*ids.entry(*l).or_insert(n))
            })
            .collect()
    }
    let mut ids = std::collections::HashMap::new();
    let before = tokens(a, &mut ids);
    let after = tokens(b, &mut ids);
    let mut ops = Vec::new();
    imara_diff::diff_with_tokens(
        imara_diff::Algorithm::Myers,
        &before,
        &after,
        ids.len() as u32,
        |old: Range<u32>, new: Range<u32>| {
            let (old, new) = (old.start as usize..old.end as usize, new.start as usize..new.end as usize);
            ops.push(DiffOp::Replace {
                old_index: old.start,
                old_len: old.len(),
                new_index: new.start,
                new_len: new.len(),
            });
        },
    );
    ops
}

/// A run of changed lines of one side of a diff (`start == end`: a place
/// between two unchanged lines).
#[derive(Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
}

/// The changed-line flags of one side, with the walks over its groups.
struct Side<'a> {
    lines: &'a [&'a str],
    changed: &'a mut [bool],
}

impl Side<'_> {
    fn is_changed(&self, i: isize) -> bool {
        i >= 0 && (i as usize) < self.changed.len() && self.changed[i as usize]
    }

    fn first(&self) -> Group {
        let mut end = 0;
        while self.is_changed(end as isize) {
            end += 1;
        }
        Group { start: 0, end }
    }

    fn next(&self, g: &mut Group) -> bool {
        if g.end == self.changed.len() {
            return false;
        }
        g.start = g.end + 1;
        g.end = g.start;
        while self.is_changed(g.end as isize) {
            g.end += 1;
        }
        true
    }

    fn previous(&self, g: &mut Group) -> bool {
        if g.start == 0 {
            return false;
        }
        g.end = g.start - 1;
        g.start = g.end;
        while self.is_changed(g.start as isize - 1) {
            g.start -= 1;
        }
        true
    }

    fn slide_down(&mut self, g: &mut Group) -> bool {
        if g.end < self.changed.len() && self.lines[g.start] == self.lines[g.end] {
            self.changed[g.start] = false;
            self.changed[g.end] = true;
            g.start += 1;
            g.end += 1;
            while self.is_changed(g.end as isize) {
                g.end += 1;
            }
            return true;
        }
        false
    }

    fn slide_up(&mut self, g: &mut Group) -> bool {
        if g.start > 0 && self.lines[g.start - 1] == self.lines[g.end - 1] {
            g.start -= 1;
            g.end -= 1;
            self.changed[g.start] = true;
            self.changed[g.end] = false;
            while self.is_changed(g.start as isize - 1) {
                g.start -= 1;
            }
            return true;
        }
        false
    }
}

/// Slide every group of changed lines of one side as far down as the
/// lines allow, unless on its way it met a change of the other side, then
/// to the lowest place where it meets one (so a deletion and an insertion
/// pair up). git's `xdl_change_compact` does the same (without its indent
/// heuristic, which `git merge-file` does not use), which makes the diff of
/// ambiguous texts the one git merges with.
fn compact(lines: &[&str], changed: &mut [bool], other_changed: &[bool]) {
    let mut other_flags = other_changed.to_vec();
    let other = Side { lines: &[], changed: &mut other_flags };
    let mut side = Side { lines, changed };
    let (mut g, mut go) = (side.first(), other.first());
    loop {
        if g.end != g.start {
            let mut earliest_end;
            let mut end_matching_other;
            loop {
                let size = g.end - g.start;
                end_matching_other = None;
                while side.slide_up(&mut g) {
                    other.previous(&mut go);
                }
                earliest_end = g.end;
                if go.end > go.start {
                    end_matching_other = Some(g.end);
                }
                while side.slide_down(&mut g) {
                    other.next(&mut go);
                    if go.end > go.start {
                        end_matching_other = Some(g.end);
                    }
                }
                if size == g.end - g.start {
                    break;
                }
            }
            if g.end != earliest_end && end_matching_other.is_some() {
                while go.end == go.start {
                    if !side.slide_up(&mut g) {
                        break;
                    }
                    other.previous(&mut go);
                }
            }
        }
        if !side.next(&mut g) {
            break;
        }
        other.next(&mut go);
    }
}

struct Sync {
    base: Range<usize>,
    ours: Range<usize>,
    theirs: Range<usize>,
}

/// Base ranges both sides kept, with their places in each side (the
/// intersections of the two diffs' equal runs), ending with an empty
/// sentinel at the three ends.
fn sync_regions(a: &[Block], b: &[Block], base: &[&str], ours: &[&str], theirs: &[&str]) -> Vec<Sync> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let start = x.a.max(y.a);
        let end = (x.a + x.len).min(y.a + y.len);
        if start < end {
            let oa = x.b + (start - x.a);
            let ob = y.b + (start - y.a);
            out.push(Sync { base: start..end, ours: oa..oa + (end - start), theirs: ob..ob + (end - start) });
        }
        if x.a + x.len < y.a + y.len {
            i += 1;
        } else {
            j += 1;
        }
    }
    out.push(Sync { base: base.len()..base.len(), ours: ours.len()..ours.len(), theirs: theirs.len()..theirs.len() });
    out
}
