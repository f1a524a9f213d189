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

pub mod lines;
pub mod report;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::source::ParsedFile;
use crate::diff::{SequenceMatcher, Tag};
use crate::pipeline::{Context, Failure};
use crate::provenance::map::{Kind, MapLine, Origin, Resolver, SourceMap, Step};
use crate::provenance::raw::RawOrigin;
use crate::pytext;

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
    pub plan: crate::config::PatchPlan,
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
        _ => a.kind == b.kind && a.path == b.path && a.target == b.target && a.patch_type == b.patch_type,
    }
}

/// Add `o` unless the hunk has that cause; a patch cause keeps the first
/// of its lines that lies in the registration's code (below the comment
/// block its source starts with), if the hunk changes one.
fn add(causes: &mut Vec<Origin>, o: Origin) {
    match causes.iter_mut().find(|c| same_cause(c, &o)) {
        Some(c) => {
            let in_code = |x: &Origin| matches!((x.line, x.anchor), (Some(l), Some(a)) if l >= a);
            if !in_code(c) && in_code(&o) {
                c.line = o.line;
                c.anchor = o.anchor;
            }
        }
        None => causes.push(o),
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

/// The hunks of the `.diff` of `generated` against `upstream` (as
/// `pipeline::build_diff` groups them), each with its causes.
pub fn hunks(upstream: &ParsedFile, generated: &str, r: &Resolver, py_path: &Path) -> Vec<Hunk> {
    let a = upstream.splitlines_keepends();
    let b = pytext::splitlines_keepends(generated);
    let first = first_statement(upstream);
    let mut out = Vec::new();
    for group in SequenceMatcher::new(&a, &b).get_grouped_opcodes(3) {
        let (lo, hi) = (group[0], group[group.len() - 1]);
        let mut causes = Vec::new();
        let mut blank = Vec::new();
        let mut first_changed = None;
        for op in group.iter().filter(|op| op.tag != Tag::Equal) {
            first_changed.get_or_insert(if op.j2 > op.j1 { op.j1 + 1 } else { op.j1.max(1) });
            for i in op.i1..op.i2 {
                if let Some(o) = r.upstream_fate(i as u32 + 1, first) {
                    add(
                        if pytext::is_blank(a[i].trim_end_matches(['\n', '\r'])) { &mut blank } else { &mut causes },
                        o,
                    );
                }
            }
            for j in op.j1..op.j2 {
                let Some(m) = r.map.lines.get(j) else { continue };
                for o in new_line_causes(r, m) {
                    add(
                        if pytext::is_blank(b[j].trim_end_matches(['\n', '\r'])) { &mut blank } else { &mut causes },
                        o,
                    );
                }
            }
        }
        if causes.is_empty() {
            causes = blank;
        }
        causes.iter_mut().for_each(settle);
        let first_changed = first_changed.unwrap_or(lo.j1 + 1);
        // Upstream lines nobody accounts for make the hunk unexplained,
        // whatever else it holds.
        let unexplained = causes.iter().any(|c| c.kind == Kind::Unexplained);
        if causes.is_empty() || unexplained {
            causes.retain(|c| c.kind != Kind::Unexplained);
            let mut o = Origin::unexplained(py_path, first_changed);
            o.target = None;
            causes.insert(0, o);
        }
        let range = |start: usize, stop: usize| {
            let n = stop - start;
            (if n == 0 { start } else { start + 1 }, n)
        };
        let (old_start, old_lines) = range(lo.i1, hi.i2);
        let (new_start, new_lines) = range(lo.j1, hi.j2);
        out.push(Hunk { old_start, old_lines, new_start, new_lines, causes, first_changed });
    }
    out
}
