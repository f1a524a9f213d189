//! The source map of a generated file: the raw trace (`super::raw`)
//! carried through ruff's steps by line matching, and each line's origin
//! resolved against the plan.
//!
//! Carrying: `SequenceMatcher` (the project's difflib port) over the lines
//! before and after a step. Lines of an `equal` block keep their origin;
//! lines a step wrote (`replace`/`insert` blocks) are that step's
//! (`ruff-fix` with the rule whose offered fix covers them, or
//! `ruff-format`), remembering the raw line they replace (paired by
//! position within the block); raw lines a step consumed (`replace`/
//! `delete`) are remembered with the step, so an upstream line that ruff
//! removed is put down to ruff.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::raw::{RawOrigin, RawTrace, Removed, RemovedBy};
use crate::normalize::steps::OfferedFix;
use patchgen_config::plan::{Loc, PatchPlan};
use patchgen_python::diff::{SequenceMatcher, Tag};
use patchgen_python::pytext;

/// The last step that wrote a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Codegen wrote it and ruff left it alone.
    Kept,
    /// `ruff check --fix` wrote it (`rule`: index into [`SourceMap::rules`]).
    Fixed { rule: Option<u32> },
    /// `ruff format` wrote it.
    Formatted,
}

/// One line of the final file: the raw line it came from (for a line a
/// ruff step wrote, the raw line it replaced, if any) and the last step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapLine {
    pub raw: Option<RawOrigin>,
    pub step: Step,
}

/// A generated file's source map (kept in memory; serialised on request
/// through [`Resolver`]).
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    /// One per line of the final text (`str.splitlines`).
    pub lines: Vec<MapLine>,
    /// Rules named by [`Step::Fixed`].
    pub rules: Vec<String>,
    /// Raw lines a ruff step replaced or deleted, with the step.
    pub consumed: Vec<(RawOrigin, Step)>,
    /// Upstream lines codegen did not copy, and why.
    pub removed: Vec<Removed>,
}

/// `raw.split('\n')`, found with memchr (codegen's raw text is split on
/// `\n` only).
fn raw_lines(raw: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(raw.len() / 32 + 1);
    let mut start = 0;
    for i in memchr::memchr_iter(b'\n', raw.as_bytes()) {
        out.push(&raw[start..i]);
        start = i + 1;
    }
    out.push(&raw[start..]);
    out
}

/// The smallest offered fix covering any of `rows` (1-based).
fn rule_for(fixes: &[OfferedFix], rows: std::ops::RangeInclusive<usize>) -> Option<&str> {
    fixes
        .iter()
        .filter(|f| f.rows.start() <= rows.end() && rows.start() <= f.rows.end())
        .min_by_key(|f| f.rows.end() - f.rows.start())
        .map(|f| f.rule.as_str())
}

impl SourceMap {
    /// The map of `final_text`, from the raw text and its trace, through
    /// `fixed` (after `ruff check --fix`) with the fixes ruff offered on
    /// the raw text.
    pub fn build(raw: &str, trace: &RawTrace, fixed: &str, final_text: &str, fixes: &[OfferedFix]) -> SourceMap {
        let mut map = SourceMap { removed: trace.removed.clone(), ..Default::default() };
        let raw_lines = raw_lines(raw);
        let start: Vec<MapLine> = (0..raw_lines.len())
            .map(|i| MapLine { raw: Some(trace.lines.get(i).copied().unwrap_or(RawOrigin::Header)), step: Step::Kept })
            .collect();
        let fixed_lines = pytext::splitlines(fixed);
        let after_fix = map.carry(&raw_lines, &fixed_lines, &start, |map, rows| {
            let rule = rule_for(fixes, rows).map(|r| map.rule_index(r));
            Step::Fixed { rule }
        });
        let final_lines = pytext::splitlines(final_text);
        map.lines = map.carry(&fixed_lines, &final_lines, &after_fix, |_, _| Step::Formatted);
        map
    }

    /// A map without ruff's steps (`final_text` is what ruff made of
    /// `raw`, every change put down to `ruff format`): for callers that
    /// have the normalised text but did not run ruff (lint, against the
    /// checked-in file). Also, for each raw line, the final line (0-based)
    /// it became or that stands where it was.
    pub fn without_steps(raw: &str, trace: &RawTrace, final_text: &str) -> (SourceMap, Vec<usize>) {
        SourceMap::without_steps_lines(raw, trace, &pytext::splitlines(final_text))
    }

    /// [`SourceMap::without_steps`] given the final text's lines
    /// (`str.splitlines()`), for callers that split it once for several uses.
    pub fn without_steps_lines(raw: &str, trace: &RawTrace, final_lines: &[&str]) -> (SourceMap, Vec<usize>) {
        let mut map = SourceMap { removed: trace.removed.clone(), ..Default::default() };
        let raw_lines = raw_lines(raw);
        let start: Vec<MapLine> = (0..raw_lines.len())
            .map(|i| MapLine { raw: Some(trace.lines.get(i).copied().unwrap_or(RawOrigin::Header)), step: Step::Kept })
            .collect();
        let ops = SequenceMatcher::new(&raw_lines, final_lines).get_opcodes();
        let mut to_final = Vec::with_capacity(raw_lines.len());
        for op in &ops {
            let (na, nb) = (op.i2 - op.i1, op.j2 - op.j1);
            to_final.extend((0..na).map(|i| if nb == 0 { op.j1 } else { op.j1 + i * nb / na }));
        }
        map.lines = map.carry_ops(&raw_lines, final_lines, &ops, &start, |_, _| Step::Formatted);
        (map, to_final)
    }

    fn rule_index(&mut self, rule: &str) -> u32 {
        match self.rules.iter().position(|r| r == rule) {
            Some(i) => i as u32,
            None => {
                self.rules.push(rule.to_string());
                (self.rules.len() - 1) as u32
            }
        }
    }

    /// Carry `origins` (one per line of `a`) to the lines of `b`; `step`
    /// names what wrote lines replacing `a`'s rows (1-based, inclusive).
    fn carry(
        &mut self,
        a: &[&str],
        b: &[&str],
        origins: &[MapLine],
        step: impl FnMut(&mut SourceMap, std::ops::RangeInclusive<usize>) -> Step,
    ) -> Vec<MapLine> {
        let ops = SequenceMatcher::new(a, b).get_opcodes();
        self.carry_ops(a, b, &ops, origins, step)
    }

    /// [`SourceMap::carry`] along `ops` (`get_opcodes` of `a` and `b`). A
    /// line the step wrote that is the text of a line it removed elsewhere
    /// (a line moved, as import sorting does) keeps that line's origin.
    fn carry_ops(
        &mut self,
        a: &[&str],
        b: &[&str],
        ops: &[patchgen_python::diff::Opcode],
        origins: &[MapLine],
        mut step: impl FnMut(&mut SourceMap, std::ops::RangeInclusive<usize>) -> Step,
    ) -> Vec<MapLine> {
        let mut removed: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
        for op in ops.iter().filter(|op| op.tag != Tag::Equal) {
            for i in (op.i1..op.i2).rev() {
                if !pytext::is_blank(a[i]) {
                    removed.entry(a[i]).or_default().push(i);
                }
            }
        }
        let mut out = Vec::new();
        for &op in ops {
            if op.tag == Tag::Equal {
                out.extend_from_slice(&origins[op.i1..op.i2]);
                continue;
            }
            // Rows of `a` the change touches (an insertion: the rows around it).
            let rows = if op.i2 > op.i1 { op.i1 + 1..=op.i2 } else { op.i1.max(1)..=op.i1 + 1 };
            let s = step(self, rows);
            for o in &origins[op.i1..op.i2] {
                if let Some(raw) = o.raw {
                    self.consumed.push((raw, s));
                }
            }
            let (na, nb) = (op.i2 - op.i1, op.j2 - op.j1);
            for j in 0..nb {
                let moved = removed.get_mut(b[op.j1 + j]).and_then(Vec::pop);
                let raw = match moved {
                    Some(i) => origins[i].raw,
                    None => (na > 0).then(|| origins[op.i1 + j * na / nb].raw).flatten(),
                };
                out.push(MapLine { raw, step: s });
            }
        }
        out
    }

    /// The origin of final line `line` (1-based).
    pub fn line(&self, line: usize) -> Option<&MapLine> {
        self.lines.get(line.checked_sub(1)?)
    }
}

/// What kind of origin (and of hunk cause).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Upstream,
    Patch,
    Import,
    Header,
    RuffFix,
    RuffFormat,
    Unexplained,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Upstream => "upstream",
            Kind::Patch => "patch",
            Kind::Import => "import",
            Kind::Header => "header",
            Kind::RuffFix => "ruff-fix",
            Kind::RuffFormat => "ruff-format",
            Kind::Unexplained => "unexplained",
        }
    }
}

/// An origin resolved to a file and line to open.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Origin {
    pub kind: Kind,
    /// The file to open: the config (or the file defining a replacement)
    /// for `patch`, `import` and `header`; the upstream module for
    /// `upstream`; for `ruff-fix`/`ruff-format`, that of the line ruff
    /// rewrote (if any).
    pub path: Option<PathBuf>,
    /// 1-based line in `path`.
    pub line: Option<usize>,
    /// The patch target (`Class.method`, a helper's or excluded name, an
    /// import's module).
    pub target: Option<String>,
    /// The ruff rule, for `ruff-fix`.
    pub rule: Option<String>,
    /// What made it: `method_override`, `add_helper`, `add_import`, ….
    #[serde(rename = "type")]
    pub patch_type: Option<String>,
    /// For `patch`: the first line of the registration's code in `path`
    /// (below the comment block a replacement's source starts with).
    #[serde(skip)]
    pub anchor: Option<usize>,
}

impl Origin {
    fn new(kind: Kind, loc: Option<(&Path, usize)>) -> Origin {
        Origin {
            kind,
            path: loc.map(|(p, _)| p.to_path_buf()),
            line: loc.map(|(_, l)| l).filter(|l| *l > 0),
            target: None,
            rule: None,
            patch_type: None,
            anchor: None,
        }
    }

    /// An `unexplained` hunk cause at a generated line.
    pub fn unexplained(path: &Path, line: usize) -> Origin {
        Origin::new(Kind::Unexplained, Some((path, line)))
    }

    fn at(kind: Kind, loc: &Loc) -> Origin {
        Origin::new(kind, Some((&loc.path, loc.line)))
    }

    fn target(mut self, target: impl Into<String>, patch_type: &str) -> Origin {
        self.target = Some(target.into());
        self.patch_type = Some(patch_type.to_string());
        self
    }
}

/// Resolves a map's indexes against the plan.
pub struct Resolver<'a> {
    pub plan: &'a PatchPlan,
    pub upstream_path: &'a Path,
    pub map: &'a SourceMap,
    /// Per patch, then per helper, then per positioned helper: the config
    /// line where its source's code starts (after its leading comments).
    anchors: Vec<usize>,
    /// Upstream lines some final line is, as codegen copied them.
    kept: rustc_hash::FxHashSet<u32>,
    /// The first step that consumed each raw origin.
    consumed: rustc_hash::FxHashMap<RawOrigin, Step>,
    /// Per upstream import statement (its first line): the first final
    /// line rendered from it, and the first consumed raw line.
    imports: rustc_hash::FxHashMap<u32, ImportFate>,
    /// Why each upstream line codegen did not copy is missing (the first record).
    removed: rustc_hash::FxHashMap<u32, RemovedBy>,
}

/// What became of an upstream import statement: the first final line
/// rendered from it, and the first raw line of it a ruff step consumed.
type ImportFate = (Option<MapLine>, Option<(RawOrigin, Step)>);

/// The line where `object`'s code starts, below its leading comment block.
fn code_start(object: Option<&patchgen_config::plan::SourceObject>) -> usize {
    object.map_or(0, |o| o.code_line)
}

impl<'a> Resolver<'a> {
    pub fn new(plan: &'a PatchPlan, upstream_path: &'a Path, map: &'a SourceMap) -> Resolver<'a> {
        let anchors = plan
            .patches
            .iter()
            .map(|p| p.replacement.as_ref())
            .chain(plan.helpers.iter().map(|h| h.object.as_ref()))
            .chain(plan.positioned_helpers.iter().map(|h| h.helper.object.as_ref()))
            .map(code_start)
            .collect();
        // Fx hashing and sized up front: these tables are built for every
        // generated file `lint` and `explain` look at (the map's lines are
        // mostly upstream lines).
        let mut kept = rustc_hash::FxHashSet::with_capacity_and_hasher(map.lines.len(), Default::default());
        let mut imports: rustc_hash::FxHashMap<u32, ImportFate> = Default::default();
        for m in &map.lines {
            match m.raw {
                Some(RawOrigin::Upstream { line }) if m.step == Step::Kept => {
                    kept.insert(line);
                }
                Some(RawOrigin::UpstreamImport { line, .. }) => {
                    imports.entry(line).or_default().0.get_or_insert(*m);
                }
                _ => {}
            }
        }
        let mut consumed = rustc_hash::FxHashMap::with_capacity_and_hasher(map.consumed.len(), Default::default());
        for &(raw, step) in &map.consumed {
            consumed.entry(raw).or_insert(step);
            if let RawOrigin::UpstreamImport { line, .. } = raw {
                imports.entry(line).or_default().1.get_or_insert((raw, step));
            }
        }
        let mut removed = rustc_hash::FxHashMap::with_capacity_and_hasher(
            map.removed.iter().map(|r| r.lines.end.saturating_sub(r.lines.start) as usize).sum(),
            Default::default(),
        );
        for r in &map.removed {
            for line in r.lines.clone() {
                removed.entry(line).or_insert(r.by);
            }
        }
        Resolver { plan, upstream_path, map, anchors, kept, consumed, imports, removed }
    }

    fn anchor(&self, i: usize) -> Option<usize> {
        self.anchors.get(i).copied().filter(|a| *a > 0)
    }

    /// The origin codegen recorded for a raw line.
    pub fn raw(&self, raw: RawOrigin) -> Origin {
        let plan = self.plan;
        match raw {
            RawOrigin::Header => Origin::at(Kind::Header, &plan.created_at),
            RawOrigin::UpstreamImport { line, dropped: None } => {
                Origin::new(Kind::Upstream, Some((self.upstream_path, line as usize)))
            }
            RawOrigin::UpstreamImport { dropped: Some(site), line } => match plan.call_sites.drops.get(site as usize) {
                Some((name, loc)) => Origin::at(Kind::Import, loc).target(name.clone(), "drop_import_names"),
                None => Origin::new(Kind::Upstream, Some((self.upstream_path, line as usize))),
            },
            RawOrigin::Import { index } => {
                let loc = plan.call_sites.imports.get(index as usize).unwrap_or(&plan.created_at);
                let module = plan.additional_imports.get(index as usize).map(|i| i.module.clone()).unwrap_or_default();
                Origin::at(Kind::Import, loc).target(module, "add_import")
            }
            RawOrigin::Block { index } => {
                let loc = plan.call_sites.blocks.get(index as usize).unwrap_or(&plan.created_at);
                let mut o = Origin::at(Kind::Import, loc);
                o.patch_type = Some("add_post_import_block".into());
                o
            }
            RawOrigin::Upstream { line } => Origin::new(Kind::Upstream, Some((self.upstream_path, line as usize))),
            RawOrigin::Patch { patch, line } => match plan.patches.get(patch as usize) {
                Some(p) => {
                    let path = p.replacement.as_ref().map_or(&p.registered_at.path, |r| &r.defined_at.path);
                    let line = if line == 0 { p.registered_at.line } else { line as usize };
                    let mut o =
                        Origin::new(Kind::Patch, Some((path, line))).target(p.target.clone(), p.patch_type.value());
                    o.anchor = self.anchor(patch as usize);
                    o
                }
                None => Origin::at(Kind::Patch, &plan.created_at),
            },
            RawOrigin::Banner { patch } => self.registration(patch),
            RawOrigin::Helper { helper, positioned, line } => {
                let (object, what, slot) = if positioned {
                    let object = plan.positioned_helpers.get(helper as usize).and_then(|h| h.helper.object.as_ref());
                    (object, "add_helper_after", plan.patches.len() + plan.helpers.len() + helper as usize)
                } else {
                    let object = plan.helpers.get(helper as usize).and_then(|h| h.object.as_ref());
                    (object, "add_helper", plan.patches.len() + helper as usize)
                };
                match object {
                    Some(o) => {
                        let mut origin = Origin::new(Kind::Patch, Some((&o.defined_at.path, line as usize)))
                            .target(o.name.clone(), what);
                        origin.anchor = self.anchor(slot);
                        origin
                    }
                    None => Origin::at(Kind::Patch, &plan.created_at),
                }
            }
            RawOrigin::Exclude { site } => self.exclusion(site),
        }
    }

    /// A patch's registration (its decorator or call).
    fn registration(&self, patch: u32) -> Origin {
        match self.plan.patches.get(patch as usize) {
            Some(p) => Origin::at(Kind::Patch, &p.registered_at).target(p.target.clone(), p.patch_type.value()),
            None => Origin::at(Kind::Patch, &self.plan.created_at),
        }
    }

    fn exclusion(&self, site: Option<u32>) -> Origin {
        match site.and_then(|s| self.plan.call_sites.excludes.get(s as usize)) {
            Some((name, loc)) => Origin::at(Kind::Patch, loc).target(name.clone(), "exclude_from_output"),
            None => {
                let mut o = Origin::at(Kind::Patch, &self.plan.created_at);
                o.patch_type = Some("exclude_from_output".into());
                o
            }
        }
    }

    /// A ruff step's origin, naming the raw line it rewrote.
    fn step(&self, step: Step, raw: Option<RawOrigin>) -> Origin {
        let from = raw.map(|r| self.raw(r));
        let kind = if matches!(step, Step::Formatted) { Kind::RuffFormat } else { Kind::RuffFix };
        let mut o = match from {
            Some(f) => Origin { kind, ..f },
            None => Origin::new(kind, None),
        };
        if let Step::Fixed { rule } = step {
            o.rule = rule.and_then(|r| self.map.rules.get(r as usize).cloned());
        }
        o
    }

    /// The origin of final line `line` (1-based).
    pub fn line(&self, line: usize) -> Option<Origin> {
        let m = self.map.line(line)?;
        Some(self.map_line(m))
    }

    pub fn map_line(&self, m: &MapLine) -> Origin {
        match (m.step, m.raw) {
            (Step::Kept, Some(raw)) => self.raw(raw),
            (Step::Kept, None) => Origin::new(Kind::Header, None),
            (step, raw) => self.step(step, raw),
        }
    }

    /// Why upstream line `line` (1-based) is not in the final text
    /// unchanged: `None` when some final line is that line as codegen
    /// copied it.
    pub fn upstream_fate(&self, line: u32, first_statement: u32) -> Option<Origin> {
        let copied = RawOrigin::Upstream { line };
        if self.kept.contains(&line) {
            return None;
        }
        if let Some(s) = self.consumed.get(&copied) {
            return Some(self.step(*s, Some(copied)));
        }
        Some(match self.removed.get(&line).copied() {
            Some(RemovedBy::Patch { patch }) => self.registration(patch),
            Some(RemovedBy::Exclude { site }) => self.exclusion(site),
            Some(RemovedBy::ImportDropped { site }) => {
                match site.and_then(|s| self.plan.call_sites.drops.get(s as usize)) {
                    Some((name, loc)) => Origin::at(Kind::Import, loc).target(name.clone(), "drop_import_names"),
                    None => Origin::at(Kind::Header, &self.plan.created_at),
                }
            }
            Some(RemovedBy::ImportRendered { first }) => {
                let (rendered, consumed) = self.imports.get(&first).cloned().unwrap_or_default();
                match (rendered.as_ref(), consumed) {
                    (Some(m), _) if m.step != Step::Kept => self.map_line(m),
                    (None, Some((raw, s))) => self.step(s, Some(raw)),
                    (Some(MapLine { raw: Some(raw @ RawOrigin::UpstreamImport { dropped: Some(_), .. }), .. }), _) => {
                        self.raw(*raw)
                    }
                    _ => self.import_block(),
                }
            }
            None if line < first_statement => Origin::at(Kind::Header, &self.plan.created_at),
            None => Origin::new(Kind::Unexplained, Some((self.upstream_path, line as usize))),
        })
    }

    /// The generator's import block (upstream imports re-rendered).
    pub fn import_block(&self) -> Origin {
        let mut o = Origin::at(Kind::Header, &self.plan.created_at);
        o.target = Some("imports".into());
        o
    }
}

#[cfg(test)]
mod raw_lines_tests {
    use proptest::prelude::*;

    proptest! {
        /// `raw_lines` is `str::split('\n')`.
        #[test]
        fn raw_lines_is_split_on_newline(
            parts in prop::collection::vec(prop::sample::select(vec!["a", "\n", "\r", "é", " "]), 0..30),
        ) {
            let text = parts.concat();
            prop_assert_eq!(super::raw_lines(&text), text.split('\n').collect::<Vec<_>>());
        }
    }
}
