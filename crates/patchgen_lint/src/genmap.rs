//! The regions of a generated module that config code wrote — a replaced
//! class, an overriding method, a replacing function, a helper, a
//! post-import block — by their generated names, for the rules that ask
//! "is this def patched, and by which registration".
//!
//! Where a region comes from is not computed here: codegen's trace
//! (`provenance::raw`) says it for every generated line, and
//! `provenance::map::Resolver` turns that into a config location — the one
//! provenance mechanism `explain`, the server and lint's locations share.
//! A region's `config_line` is the resolved origin of its `def`/`class`
//! line (a block's: the `add_post_import_block` call); a def the trace
//! does not attribute to config code falls back to where the replacement
//! is defined.

use std::path::{Path, PathBuf};

use patchgen_core::provenance::map::{Resolver, SourceMap};
use patchgen_core::provenance::raw::{RawOrigin, RawTrace};

use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use patchgen_config::plan::{PatchPlan, PatchType, SourceObject};
use patchgen_python::pysource::{ParsedFile, keyword_line};

/// What kind of config code a generated region is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginKind {
    /// A patch's replacement (`replace_class`, `override_method`, `replace_function`).
    Replacement,
    /// `add_helper` / `add_helper_after` / `helpers`.
    Helper,
    /// `add_post_import_block` text.
    Block,
}

/// A generated region and the config definition it came from.
#[derive(Clone, Debug)]
pub struct Origin {
    /// `C`, `C.m`, `f` (the generated names).
    pub qualname: String,
    pub kind: OriginKind,
    /// Generated lines (1-based, inclusive) of the region; `gen_start` is
    /// the `def`/`class` keyword's line.
    pub gen_start: usize,
    pub gen_end: usize,
    pub config_path: PathBuf,
    /// The config line `gen_start` corresponds to.
    pub config_line: usize,
    /// Index into `plan.patches` of the registration, for replacements.
    pub patch: Option<usize>,
}

/// The last registration of `target` for `patch_type` (the one codegen uses).
fn last_patch(plan: &PatchPlan, patch_type: PatchType, target: &str) -> Option<usize> {
    plan.patches.iter().rposition(|p| p.patch_type == patch_type && p.target == target && p.replacement.is_some())
}

fn def_lines(file: &ParsedFile, stmt: &Stmt) -> Option<(usize, usize)> {
    let name = match stmt {
        Stmt::ClassDef(c) => &c.name,
        Stmt::FunctionDef(f) => &f.name,
        _ => return None,
    };
    Some((keyword_line(file, name.start()), file.line_of(stmt.end())))
}

/// Resolves generated lines to config locations through codegen's trace.
struct Lines<'a> {
    trace: &'a RawTrace,
    resolver: Resolver<'a>,
}

impl Lines<'_> {
    /// The config location generated line `line` (1-based) came from, when
    /// config code wrote it.
    fn config_of(&self, line: usize) -> Option<(PathBuf, usize)> {
        let raw = *self.trace.lines.get(line.checked_sub(1)?)?;
        if !matches!(raw, RawOrigin::Patch { .. } | RawOrigin::Helper { .. } | RawOrigin::Block { .. }) {
            return None;
        }
        let o = self.resolver.raw(raw);
        Some((o.path?, o.line?))
    }

    fn origin(
        &self,
        qualname: String,
        kind: OriginKind,
        lines: (usize, usize),
        object: &SourceObject,
        patch: Option<usize>,
    ) -> Origin {
        let (config_path, config_line) =
            self.config_of(lines.0).unwrap_or_else(|| (object.defined_at.path.clone(), object.defined_at.line));
        Origin { qualname, kind, gen_start: lines.0, gen_end: lines.1.max(lines.0), config_path, config_line, patch }
    }
}

/// The regions of `generated` that came from `plan`'s config code.
/// `trace` is codegen's, line for line with `generated`.
pub fn origins(plan: &PatchPlan, generated: &ParsedFile, trace: &RawTrace, upstream_path: &Path) -> Vec<Origin> {
    let map = SourceMap::default();
    let lines = Lines { trace, resolver: Resolver::new(plan, upstream_path, &map) };
    let mut out = Vec::new();
    let helpers: Vec<&SourceObject> = plan
        .helpers
        .iter()
        .filter_map(|h| h.object.as_ref())
        .chain(plan.positioned_helpers.iter().filter_map(|h| h.helper.object.as_ref()))
        .collect();
    for stmt in generated.body() {
        match stmt {
            Stmt::ClassDef(c) => {
                let name = c.name.id.as_str();
                if let Some(i) = last_patch(plan, PatchType::ClassReplacement, name) {
                    let object = plan.patches[i].replacement.as_ref().expect("has a replacement");
                    if let Some(at) = def_lines(generated, stmt) {
                        out.push(lines.origin(name.to_string(), OriginKind::Replacement, at, object, Some(i)));
                    }
                    continue;
                }
                if let Some(object) = helpers.iter().find(|h| h.name == name) {
                    if let Some(at) = def_lines(generated, stmt) {
                        out.push(lines.origin(name.to_string(), OriginKind::Helper, at, object, None));
                    }
                    continue;
                }
                for member in &c.body {
                    let Stmt::FunctionDef(f) = member else {
                        continue;
                    };
                    let qual = format!("{name}.{}", f.name.id);
                    let Some(i) = last_patch(plan, PatchType::MethodOverride, &qual) else {
                        continue;
                    };
                    let object = plan.patches[i].replacement.as_ref().expect("has a replacement");
                    if let Some(at) = def_lines(generated, member) {
                        out.push(lines.origin(qual, OriginKind::Replacement, at, object, Some(i)));
                    }
                }
            }
            Stmt::FunctionDef(f) => {
                let name = f.name.id.as_str();
                let found = match last_patch(plan, PatchType::FunctionReplacement, name) {
                    Some(i) => Some((
                        plan.patches[i].replacement.as_ref().expect("has a replacement"),
                        Some(i),
                        OriginKind::Replacement,
                    )),
                    None => helpers.iter().find(|h| h.name == name).map(|h| (*h, None, OriginKind::Helper)),
                };
                if let (Some((object, patch, kind)), Some(at)) = (found, def_lines(generated, stmt)) {
                    out.push(lines.origin(name.to_string(), kind, at, object, patch));
                }
            }
            _ => {}
        }
    }
    // Post-import blocks: the runs of lines the trace gives to one.
    let mut i = 0;
    while i < trace.lines.len() {
        let RawOrigin::Block { index } = trace.lines[i] else {
            i += 1;
            continue;
        };
        let start = i;
        while i < trace.lines.len() && trace.lines[i] == (RawOrigin::Block { index }) {
            i += 1;
        }
        // Blank lines around a block are the generator's.
        let text_lines: Vec<usize> = (start..i).filter(|&l| !generated_line_is_blank(generated, l + 1)).collect();
        let (Some(&first), Some(&last)) = (text_lines.first(), text_lines.last()) else { continue };
        let Some((config_path, config_line)) = lines.config_of(first + 1) else { continue };
        out.push(Origin {
            qualname: String::new(),
            kind: OriginKind::Block,
            gen_start: first + 1,
            gen_end: last + 1,
            config_path,
            config_line,
            patch: None,
        });
    }
    out
}

fn generated_line_is_blank(generated: &ParsedFile, line: usize) -> bool {
    let start = generated.line_start(line);
    let end = if line < generated.line_count() { generated.line_start(line + 1) } else { generated.text.len() };
    generated.text.get(start..end).is_none_or(|t| t.trim().is_empty())
}

/// The first 1-based line of `text` containing `needle`.
pub fn line_containing(text: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}
