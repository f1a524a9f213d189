//! `patchgen explain`, the library part: each hunk of a config's `.diff`
//! with the causes the source map (`crate::provenance`) gives it, and the
//! origin of one line of a generated file.
//!
//! A hunk's causes are the origins of the lines it changes: for each new
//! (`+`) line, where the map says it came from (a line copied unchanged
//! from upstream is no cause: it only moved); for each old (`-`) line,
//! why the upstream line is not in the output (the patch that replaced
//! it, `exclude_from_output`, `drop_import_names`, the ruff step that
//! removed or rewrote it, the generator's header for the module comment
//! above the first statement). Blank lines count only when nothing else
//! does. A hunk with no cause is `unexplained`.

pub mod buffer;
pub mod lines;
pub mod report;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::pipeline::{Context, Failure};
use crate::provenance::map::{Kind, MapLine, Origin, Resolver, SourceMap, Step};
use crate::provenance::raw::RawOrigin;
use patchgen_python::diff::{SequenceMatcher, Tag};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::pytext;

/// One hunk of a `.diff` (numbers as its `@@` line shows them) and its causes.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    pub causes: Vec<Origin>,
    /// The generated file's first changed line (1-based; the hunk's start
    /// when it only deletes).
    #[serde(skip)]
    pub first_changed: usize,
}

impl Hunk {
    /// `@@ -a,b +c,d @@`, as `difflib` writes it.
    pub fn header(&self) -> String {
        let range = |start: usize, n: usize| if n == 1 { format!("{start}") } else { format!("{start},{n}") };
        format!("@@ -{} +{} @@", range(self.old_start, self.old_lines), range(self.new_start, self.new_lines))
    }

    pub fn is_unexplained(&self) -> bool {
        self.causes.iter().any(|c| c.kind == Kind::Unexplained)
    }
}

/// One config's generated file, explained.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainedFile {
    pub config: String,
    /// The generated `.py`.
    pub path: PathBuf,
    pub hunks: Vec<Hunk>,
}

/// A config generated with its source map.
pub struct Mapped {
    pub module: String,
    pub plan: patchgen_config::PatchPlan,
    pub py_path: PathBuf,
    pub upstream_path: PathBuf,
    pub upstream: std::sync::Arc<ParsedFile>,
    /// The generated text (after ruff).
    pub text: String,
    pub map: SourceMap,
}

impl Mapped {
    pub fn resolver(&self) -> Resolver<'_> {
        Resolver::new(&self.plan, &self.upstream_path, &self.map)
    }

    /// Generate `module` (ruff step by step) and map it.
    pub fn generate(ctx: &Context, module: &str, config_name: &str) -> Result<Mapped, Failure> {
        let raw = ctx.generate_raw(module, config_name, None)?;
        let steps = ctx.ruff.steps(&raw.text, &raw.abs_target).map_err(|error| ctx.ruff_failure(&raw, error))?;
        let map = SourceMap::build(&raw.text, &raw.trace, &steps.fixed, &steps.formatted, &steps.fixes);
        Ok(Mapped {
            module: module.to_string(),
            py_path: raw.job.py_path.clone(),
            upstream_path: raw.job.upstream_origin.clone(),
            upstream: raw.upstream.clone(),
            plan: raw.job.plan,
            text: steps.formatted,
            map,
        })
    }

    /// The explained hunks of this config's `.diff`.
    pub fn explain(&self) -> ExplainedFile {
        ExplainedFile {
            config: self.module.clone(),
            path: self.py_path.clone(),
            hunks: hunks(&self.upstream, &self.text, &self.resolver(), &self.py_path),
        }
    }
}

/// The 1-based line of the upstream module's first statement (what lies
/// above it is the module's comment header, which codegen replaces).
pub fn first_statement(upstream: &ParsedFile) -> u32 {
    use ruff_text_size::Ranged;
    upstream.body().first().map_or(u32::MAX, |s| upstream.line_of(s.start()) as u32)
}

/// The causes a new (`+`) line gives its hunk: none for a line copied
/// unchanged from upstream (it only moved); for a line ruff rewrote or
/// moved, ruff and, when config code wrote the line ruff rewrote, that too.
fn new_line_causes(r: &Resolver, m: &MapLine) -> Vec<Origin> {
    match (m.step, m.raw) {
        (Step::Kept, Some(RawOrigin::Upstream { .. })) => Vec::new(),
        (Step::Kept, Some(RawOrigin::UpstreamImport { dropped: None, .. })) => vec![r.import_block()],
        (Step::Kept, _) => vec![r.map_line(m)],
        (_, Some(raw))
            if !matches!(raw, RawOrigin::Upstream { .. } | RawOrigin::UpstreamImport { .. } | RawOrigin::Header) =>
        {
            vec![r.map_line(m), r.raw(raw)]
        }
        _ => vec![r.map_line(m)],
    }
}

/// Whether two causes are the same for a hunk: ruff's by kind and rule,
/// the rest by what made them.
fn same_cause(a: &Origin, b: &Origin) -> bool {
    match a.kind {
        Kind::RuffFix | Kind::RuffFormat => a.kind == b.kind && a.rule == b.rule,
        _ => a.kind == b.kind && a.target == b.target && a.patch_type == b.patch_type && same_path(&a.path, &b.path),
    }
}

/// `a == b` for paths, byte-equal ones decided without comparing them
/// component by component (the usual case: both name the same config).
fn same_path(a: &Option<PathBuf>, b: &Option<PathBuf>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.as_os_str() == b.as_os_str() || a == b,
        (None, None) => true,
        _ => false,
    }
}

/// Add `o` unless the hunk has that cause; a patch cause keeps the first
/// of its lines that lies in the registration's code (below the comment
/// block its source starts with), if the hunk changes one.
/// Whether the cause `o` now stands for is at a line of code (then no
/// later cause equal to it changes it).
fn add(causes: &mut Vec<Origin>, o: Origin) -> bool {
    let in_code = |x: &Origin| matches!((x.line, x.anchor), (Some(l), Some(a)) if l >= a);
    match causes.iter_mut().find(|c| same_cause(c, &o)) {
        Some(c) => {
            if !in_code(c) && in_code(&o) {
                c.line = o.line;
                c.anchor = o.anchor;
            }
            in_code(c)
        }
        None => {
            let settled = in_code(&o);
            causes.push(o);
            settled
        }
    }
}

/// `raw` without its line: the lines of one patch, helper or upstream
/// import resolve to causes that [`same_cause`] finds equal, with one anchor.
fn without_line(raw: RawOrigin) -> RawOrigin {
    match raw {
        RawOrigin::Patch { patch, .. } => RawOrigin::Patch { patch, line: 0 },
        RawOrigin::Helper { helper, positioned, .. } => RawOrigin::Helper { helper, positioned, line: 0 },
        RawOrigin::UpstreamImport { dropped, .. } => RawOrigin::UpstreamImport { line: 0, dropped },
        RawOrigin::Upstream { .. } => RawOrigin::Upstream { line: 0 },
        other => other,
    }
}

/// A patch cause whose lines were all its source's leading comments
/// points at the registration's first line of code.
fn settle(o: &mut Origin) {
    if let (Some(l), Some(a)) = (o.line, o.anchor)
        && l < a
    {
        o.line = Some(a);
    }
}

/// `text.lines()` (split at `\n`, a `\r` before it dropped, no empty
/// last line), found with memchr: a `.diff` has thousands of short lines.
fn str_lines(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 32 + 1);
    let mut start = 0;
    for i in memchr::memchr_iter(b'\n', b) {
        let end = if i > start && b[i - 1] == b'\r' { i - 1 } else { i };
        out.push(&text[start..end]);
        start = i + 1;
    }
    if start < b.len() {
        out.push(&text[start..]);
    }
    out
}

/// One hunk's shape: its `@@` numbers, the old (upstream) and new
/// (generated) lines it changes (0-based), and the generated file's first
/// changed line (1-based).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    pub deleted: Vec<usize>,
    pub added: Vec<usize>,
    pub first_changed: usize,
}

/// The hunks `pipeline::build_diff` writes for `a` → `b` (lines with their ends).
pub fn shapes(a: &[&str], b: &[&str]) -> Vec<Shape> {
    let mut out = Vec::new();
    for group in SequenceMatcher::new(a, b).get_grouped_opcodes(3) {
        let (lo, hi) = (group[0], group[group.len() - 1]);
        let range = |start: usize, stop: usize| {
            let n = stop - start;
            (if n == 0 { start } else { start + 1 }, n)
        };
        let (old_start, old_lines) = range(lo.i1, hi.i2);
        let (new_start, new_lines) = range(lo.j1, hi.j2);
        let mut shape = Shape { old_start, old_lines, new_start, new_lines, ..Default::default() };
        let mut first = None;
        for op in group.iter().filter(|op| op.tag != Tag::Equal) {
            first.get_or_insert(if op.j2 > op.j1 { op.j1 + 1 } else { op.j1.max(1) });
            shape.deleted.extend(op.i1..op.i2);
            shape.added.extend(op.j1..op.j2);
        }
        shape.first_changed = first.unwrap_or(lo.j1 + 1);
        out.push(shape);
    }
    out
}

/// The hunks of a `.diff` as patchgen writes it (`None` when it is not
/// one, or does not fit texts of `old_len` and `new_len` lines).
pub fn parse_diff(diff: &str, old_len: usize, new_len: usize) -> Option<Vec<Shape>> {
    let lines = str_lines(diff);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() && !lines[i].starts_with("@@ ") {
        i += 1;
    }
    let number = |s: &str| -> Option<(usize, usize)> {
        match s.split_once(',') {
            Some((a, n)) => Some((a.parse().ok()?, n.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    while i < lines.len() {
        let header = lines[i].strip_prefix("@@ -")?.strip_suffix(" @@")?;
        let (old, new) = header.split_once(" +")?;
        let ((old_start, old_lines), (new_start, new_lines)) = (number(old)?, number(new)?);
        let mut shape = Shape { old_start, old_lines, new_start, new_lines, ..Default::default() };
        let (mut o, mut n) = (
            old_start.saturating_sub(usize::from(old_lines > 0)),
            new_start.saturating_sub(usize::from(new_lines > 0)),
        );
        let mut first = None;
        i += 1;
        while i < lines.len() && !lines[i].starts_with("@@ ") {
            let line = lines[i];
            match line.as_bytes().first() {
                Some(b'-') => {
                    if first.is_none() {
                        let rest = lines[i..].iter().find(|l| !l.starts_with('-'));
                        first = Some(if rest.is_some_and(|l| l.starts_with('+')) { n + 1 } else { n.max(1) });
                    }
                    shape.deleted.push(o);
                    o += 1;
                }
                Some(b'+') => {
                    first.get_or_insert(n + 1);
                    shape.added.push(n);
                    n += 1;
                }
                _ => {
                    o += 1;
                    n += 1;
                }
            }
            i += 1;
        }
        // A last line without a line break runs into the next diff line:
        // the counts then disagree with the header.
        let (o0, n0) = (
            old_start.saturating_sub(usize::from(old_lines > 0)),
            new_start.saturating_sub(usize::from(new_lines > 0)),
        );
        if o > old_len || n > new_len || o - o0 != old_lines || n - n0 != new_lines {
            return None;
        }
        shape.first_changed = first.unwrap_or(new_start.max(1));
        out.push(shape);
    }
    Some(out)
}

/// The hunks of the `.diff` of `generated` against `upstream` (as
/// `pipeline::build_diff` groups them), each with its causes.
pub fn hunks(upstream: &ParsedFile, generated: &str, r: &Resolver, py_path: &Path) -> Vec<Hunk> {
    let a = upstream.splitlines_keepends();
    let b = pytext::splitlines_keepends(generated);
    explain_shapes(&shapes(&a, &b), upstream, generated, r, py_path)
}

/// Each hunk of `shapes` (of `upstream` → `generated`) with its causes.
pub fn explain_shapes(
    shapes: &[Shape],
    upstream: &ParsedFile,
    generated: &str,
    r: &Resolver,
    py_path: &Path,
) -> Vec<Hunk> {
    explain_shapes_lines(shapes, upstream, &pytext::splitlines(generated), r, py_path)
}

/// [`explain_shapes`] given the generated text's lines (`str.splitlines()`).
pub fn explain_shapes_lines(
    shapes: &[Shape],
    upstream: &ParsedFile,
    b: &[&str],
    r: &Resolver,
    py_path: &Path,
) -> Vec<Hunk> {
    let a = upstream.splitlines();
    let first = first_statement(upstream);
    let mut out = Vec::new();
    for shape in shapes {
        let mut causes = Vec::new();
        let mut blank = Vec::new();
        for &i in &shape.deleted {
            if let Some(o) = r.upstream_fate(i as u32 + 1, first) {
                add(if a.get(i).is_none_or(|l| pytext::is_blank(l)) { &mut blank } else { &mut causes }, o);
            }
        }
        // Lines with the same origin but for the line number give the same
        // causes; once they can change nothing (see `add`), the rest of
        // them are skipped instead of resolved.
        let mut settled: Vec<(bool, Step, Option<RawOrigin>)> = Vec::new();
        for &j in &shape.added {
            let Some(m) = r.map.lines.get(j) else { continue };
            let is_blank = b.get(j).is_none_or(|l| pytext::is_blank(l));
            let key = (is_blank, m.step, m.raw.map(without_line));
            if settled.contains(&key) {
                continue;
            }
            let list = if is_blank { &mut blank } else { &mut causes };
            let mut done = true;
            for o in new_line_causes(r, m) {
                let anchored = o.anchor.is_some();
                let in_code = add(list, o);
                done &= !anchored || in_code;
            }
            if done {
                settled.push(key);
            }
        }
        if causes.is_empty() {
            causes = blank;
        }
        causes.iter_mut().for_each(settle);
        // Upstream lines nobody accounts for make the hunk unexplained,
        // whatever else it holds.
        let unexplained = causes.iter().any(|c| c.kind == Kind::Unexplained);
        if causes.is_empty() || unexplained {
            causes.retain(|c| c.kind != Kind::Unexplained);
            causes.insert(0, Origin::unexplained(py_path, shape.first_changed));
        }
        out.push(Hunk {
            old_start: shape.old_start,
            old_lines: shape.old_lines,
            new_start: shape.new_start,
            new_lines: shape.new_lines,
            causes,
            first_changed: shape.first_changed,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `str_lines` is `str::lines`.
        #[test]
        fn str_lines_is_lines(
            parts in prop::collection::vec(prop::sample::select(vec!["a", "\n", "\r", "\r\n", "é", " "]), 0..30),
        ) {
            let text = parts.concat();
            prop_assert_eq!(str_lines(&text), text.lines().collect::<Vec<_>>());
        }

        /// A `.diff` as patchgen writes it parses back into the hunks it was made of.
        #[test]
        fn a_written_diff_parses_into_its_hunks(
            a in prop::collection::vec(prop::sample::select(vec!["x\n", "y\n", "\n", "  z\n", "w"]), 0..40),
            b in prop::collection::vec(prop::sample::select(vec!["x\n", "y\n", "\n", "  z\n", "v\n"]), 0..40),
        ) {
            let (a, b) = (a.concat(), b.concat());
            let diff = crate::pipeline::build_diff(&a, &b, "m", "t.py");
            let (la, lb) = (pytext::splitlines_keepends(&a), pytext::splitlines_keepends(&b));
            let parsed = parse_diff(&diff, la.len(), lb.len());
            // Only a last line without a line break can make it unreadable.
            if a.is_empty() || a.ends_with('\n') {
                prop_assert!(parsed.is_some() || !b.is_empty() && !b.ends_with('\n'));
            }
            if let Some(p) = parsed {
                prop_assert_eq!(p, shapes(&la, &lb));
            }
        }
    }
}
