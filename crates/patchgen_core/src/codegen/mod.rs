//! Code generation: `(PatchPlan, upstream module) → raw patched source`,
//! a pure function that reproduces the reference's
//! `ModelingCodeGenerator.generate` byte for byte (before ruff).

mod cache;
pub mod imports;
mod methods;
pub mod text;

use std::collections::BTreeSet;

use ruff_python_ast::{Expr, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::Ranged;

use crate::provenance::raw::{Origins, RawOrigin, RawTrace, Removed, RemovedBy, config_lines, piece_lines};
pub use cache::Cache;
use patchgen_config::plan::{Helper, Patch, PatchPlan, PatchType};
use patchgen_python::pysource::{ParsedFile, keyword_line};
use patchgen_python::pytext;
use text::{
    apply_name_map, collapse_blank_lines, extract_source_segment, py_replace, rule, segment_range,
    strip_patch_decorators_traced,
};

/// Why generation failed (the reference's `CodegenError` and the errors it
/// lets escape).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}{}", help_line(help))]
pub struct CodegenError {
    pub message: String,
    pub help: Option<String>,
    /// The config line behind the failure, where one is known.
    pub location: Option<Box<patchgen_config::plan::Loc>>,
}

/// `\n  help: …`, or nothing.
pub(crate) fn help_line(help: &Option<String>) -> String {
    help.as_ref().map(|h| format!("\n  help: {h}")).unwrap_or_default()
}

/// Patches of one type keyed by target, as the reference's dict
/// comprehension builds them: the first registration fixes the position,
/// the last one the content.
fn by_target(plan: &PatchPlan, patch_type: PatchType) -> Vec<(&str, &Patch)> {
    let mut out: Vec<(&str, &Patch)> = Vec::new();
    for p in plan.patches.iter().filter(|p| p.patch_type == patch_type) {
        match out.iter_mut().find(|(t, _)| *t == p.target) {
            Some(slot) => slot.1 = p,
            None => out.push((&p.target, p)),
        }
    }
    out
}

fn lookup<'a>(map: &[(&str, &'a Patch)], key: &str) -> Option<&'a Patch> {
    map.iter().find(|(t, _)| *t == key).map(|(_, p)| *p)
}

/// The raw text's pieces (joined with `\n`) and their origins.
#[derive(Default)]
struct Pieces {
    parts: Vec<String>,
    origins: Vec<RawOrigin>,
    removed: Vec<Removed>,
}

impl Pieces {
    fn push(&mut self, text: String, origins: Origins) {
        origins.expand(piece_lines(&text), &mut self.origins);
        self.parts.push(text);
    }

    /// An empty separator piece.
    fn blank(&mut self) {
        self.push(String::new(), Origins::All(RawOrigin::Header));
    }

    fn extend(&mut self, piece: Piece) {
        self.origins.extend(piece.origins);
        self.parts.push(piece.text);
    }
}

/// A piece of raw text with one origin per `\n`-separated line.
#[derive(Clone, Debug, Default)]
pub(crate) struct Piece {
    text: String,
    origins: Vec<RawOrigin>,
}

impl Piece {
    fn new(text: String, origins: Origins) -> Piece {
        let mut lines = Vec::new();
        origins.expand(piece_lines(&text), &mut lines);
        Piece { text, origins: lines }
    }

    /// Lines, each with one origin.
    fn of_lines(lines: Vec<String>, origin: RawOrigin) -> Piece {
        Piece { origins: vec![origin; lines.len()], text: lines.join("\n") }
    }

    /// Append a line.
    fn line(&mut self, line: &str, origin: RawOrigin) {
        if !self.origins.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.origins.push(origin);
    }

    /// Append another piece's lines.
    fn append(&mut self, other: Piece) {
        if !self.origins.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(&other.text);
        self.origins.extend(other.origins);
    }
}

fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

struct Generator<'a> {
    plan: &'a PatchPlan,
    upstream: &'a ParsedFile,
    cache: &'a Cache,
    source_lines: Vec<&'a str>,
    /// `\n` is the upstream's only line break (its parse's line numbers
    /// index `source_lines`).
    newline_only: bool,
    class_replacements: Vec<(&'a str, &'a Patch)>,
    method_overrides: Vec<(&'a str, &'a Patch)>,
    function_replacements: Vec<(&'a str, &'a Patch)>,
}

/// Generate the raw (pre-ruff) patched module.
pub fn generate(plan: &PatchPlan, upstream: &ParsedFile, transformers_version: &str) -> Result<String, CodegenError> {
    generate_with(plan, upstream, transformers_version, &Cache::default())
}

/// [`generate_with`], and the origin of every line of the text.
pub fn generate_traced(
    plan: &PatchPlan,
    upstream: &ParsedFile,
    transformers_version: &str,
    cache: &Cache,
) -> Result<(String, RawTrace), CodegenError> {
    Generator::new(plan, upstream, cache).generate(transformers_version)
}

/// [`generate`], reusing (and adding to) what `cache` holds from other
/// configs of the same run.
pub fn generate_with(
    plan: &PatchPlan,
    upstream: &ParsedFile,
    transformers_version: &str,
    cache: &Cache,
) -> Result<String, CodegenError> {
    Generator::new(plan, upstream, cache).generate(transformers_version).map(|(text, _)| text)
}

impl<'a> Generator<'a> {
    fn new(plan: &'a PatchPlan, upstream: &'a ParsedFile, cache: &'a Cache) -> Generator<'a> {
        Generator {
            plan,
            upstream,
            cache,
            source_lines: upstream.splitlines(),
            newline_only: upstream.only_newline_breaks(),
            class_replacements: by_target(plan, PatchType::ClassReplacement),
            method_overrides: by_target(plan, PatchType::MethodOverride),
            function_replacements: by_target(plan, PatchType::FunctionReplacement),
        }
    }

    /// The upstream lines (1-based, half-open) `extract_source_segment`
    /// takes for lines `start..=end`.
    fn segment_lines(&self, start: usize, end: usize) -> std::ops::Range<u32> {
        let r = segment_range(&self.source_lines, start, end);
        index(r.start + 1)..index(r.end + 1)
    }

    /// `extract_source_segment(start, end)` with its upstream origins.
    fn upstream_piece(&self, start: usize, end: usize) -> Piece {
        let lines = self.segment_lines(start, end);
        Piece::new(extract_source_segment(&self.source_lines, start, end), Origins::Upstream(lines.start))
    }

    fn exclude_site(&self, name: &str) -> Option<u32> {
        self.plan.call_sites.excludes.iter().position(|(n, _)| n == name).map(index)
    }

    fn generate(&self, transformers_version: &str) -> Result<(String, RawTrace), CodegenError> {
        let plan = self.plan;
        let mut parts = Pieces::default();
        let mut emitted_positioned: BTreeSet<&str> = BTreeSet::new();

        parts.push(self.header(transformers_version), Origins::All(RawOrigin::Header));
        let import_stmts = imports::import_statements(self.upstream.body());
        let imports: Vec<imports::ImportStmt> = import_stmts.iter().map(|s| imports::ImportStmt::of(s)).collect();
        let import_lines: Vec<u32> = import_stmts.iter().map(|s| index(self.upstream.line_of(s.start()))).collect();
        let (block, origins) = imports::transform_imports_traced(plan, &imports, &import_lines);
        parts.push(block, Origins::Lines(origins));
        parts.blank();

        let helpers = self.helpers_block();
        if !helpers.text.is_empty() {
            parts.extend(helpers);
            parts.blank();
        }

        let mut previous_end = 0;
        for stmt in self.upstream.body() {
            let after = previous_end;
            previous_end = self.end_line(stmt);
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => {
                    let first = index(self.upstream.line_of(stmt.start()));
                    let imp = imports::ImportStmt::of(stmt);
                    let by = if imports::renders_any(plan, &imp) {
                        RemovedBy::ImportRendered { first }
                    } else {
                        RemovedBy::ImportDropped { site: imports::drop_site(plan, &imp) }
                    };
                    parts.removed.push(Removed { lines: first..index(previous_end + 1), by });
                }
                Stmt::ClassDef(class) if !self.excluded(class.name.id.as_str()) => {
                    let piece = self.class_source(class, after, &mut parts.removed)?;
                    parts.extend(piece);
                    self.push_after(&mut parts, &mut emitted_positioned, class.name.id.as_str());
                }
                Stmt::FunctionDef(func) if !self.excluded(func.name.id.as_str()) => {
                    let piece = self.function_source(func, &mut parts.removed);
                    parts.extend(piece);
                    self.push_after(&mut parts, &mut emitted_positioned, func.name.id.as_str());
                }
                Stmt::ClassDef(ruff_python_ast::StmtClassDef { name, decorator_list, .. })
                | Stmt::FunctionDef(ruff_python_ast::StmtFunctionDef { name, decorator_list, .. }) => {
                    let start = self.def_start_line(decorator_list, name);
                    let lines = self.segment_lines(start, previous_end);
                    parts
                        .removed
                        .push(Removed { lines, by: RemovedBy::Exclude { site: self.exclude_site(name.id.as_str()) } });
                }
                Stmt::Assign(assign) => {
                    if let Some(rendered) = self.filtered_all(assign) {
                        let site = plan.exclude.first().and_then(|n| self.exclude_site(n));
                        let start = self.upstream.line_of(assign.start());
                        parts.removed.push(Removed {
                            lines: self.segment_lines(start, previous_end),
                            by: RemovedBy::Exclude { site },
                        });
                        parts.push(rendered, Origins::All(RawOrigin::Exclude { site }));
                    } else {
                        let start = self.upstream.line_of(assign.start());
                        let end = self.end_line(stmt);
                        parts.extend(self.upstream_piece(start, end));
                    }
                    parts.blank();
                }
                Stmt::Expr(expr) if matches!(&*expr.value, Expr::StringLiteral(_)) => {
                    let start = self.upstream.line_of(expr.start());
                    let end = self.end_line(stmt);
                    parts.extend(self.upstream_piece(start, end));
                    parts.blank();
                }
                _ => {
                    // Not copied; an import guard's imports are in the import block.
                    if let Some(first) = imports::import_statements(std::slice::from_ref(stmt)).first() {
                        let first = index(self.upstream.line_of(first.start()));
                        let start = index(self.upstream.line_of(stmt.start()));
                        parts.removed.push(Removed {
                            lines: start..index(previous_end + 1),
                            by: RemovedBy::ImportRendered { first },
                        });
                    }
                }
            }
        }

        let missing: BTreeSet<&str> = plan
            .positioned_helpers
            .iter()
            .filter(|h| h.placement == "after")
            .map(|h| h.target.as_str())
            .filter(|t| !emitted_positioned.contains(t))
            .collect();
        if !missing.is_empty() {
            return Err(CodegenError {
                message: format!(
                    "Positioned helper target(s) not found in generated output: {}",
                    missing.into_iter().collect::<Vec<_>>().join(", ")
                ),
                help: Some(format!(
                    "`add_helper_after` needs a top-level class or function of `{}` that is not excluded",
                    plan.source_module
                )),
                location: None,
            });
        }

        let joined = parts.parts.join("\n");
        let text = collapse_blank_lines(&joined, 2);
        let lines = crate::provenance::raw::collapse_origins(&joined, &text, &parts.origins);
        Ok((text, RawTrace { lines, removed: parts.removed }))
    }

    fn excluded(&self, name: &str) -> bool {
        self.plan.exclude.iter().any(|e| e == name)
    }

    /// The blank separator after a class or function, then its
    /// `add_helper_after` section if it has one.
    fn push_after(&self, parts: &mut Pieces, emitted: &mut BTreeSet<&'a str>, name: &'a str) {
        parts.blank();
        let after = self.positioned_helpers_after(name);
        if !after.text.is_empty() {
            parts.extend(after);
            parts.blank();
            emitted.insert(name);
        }
    }

    fn end_line(&self, stmt: &Stmt) -> usize {
        self.end_line_of(stmt.end())
    }

    fn end_line_of(&self, offset: ruff_text_size::TextSize) -> usize {
        self.upstream.line_of(offset)
    }

    /// `get_node_start_line`: the first decorator's line, else the keyword's.
    fn def_start_line(&self, decorators: &[ruff_python_ast::Decorator], name: &ruff_python_ast::Identifier) -> usize {
        decorators
            .iter()
            .map(|d| self.upstream.line_of(d.expression.start()))
            .min()
            .unwrap_or_else(|| keyword_line(self.upstream, name.start()))
    }

    fn class_segment(&self, class: &StmtClassDef) -> Piece {
        let start = self.def_start_line(&class.decorator_list, &class.name);
        let end = self.upstream.line_of(class.end());
        self.upstream_piece(start, end)
    }

    fn function_segment(&self, func: &StmtFunctionDef) -> Piece {
        let start = self.def_start_line(&func.decorator_list, &func.name);
        let end = self.upstream.line_of(func.end());
        self.upstream_piece(start, end)
    }

    /// The upstream lines of a class or function segment, replaced by patch `patch`.
    fn replaced(&self, piece: &Piece, patch: u32, removed: &mut Vec<Removed>) {
        if let Some(RawOrigin::Upstream { line }) = piece.origins.first() {
            removed.push(Removed { lines: *line..*line + piece.origins.len() as u32, by: RemovedBy::Patch { patch } });
        }
    }

    fn patch_index(&self, patch: &Patch) -> u32 {
        index(self.plan.patches.iter().position(|p| std::ptr::eq(p, patch)).unwrap_or(0))
    }

    /// The banner origin of a patch: its registration line.
    fn banner_origin(&self, patch: &Patch) -> RawOrigin {
        RawOrigin::Banner { patch: self.patch_index(patch) }
    }

    fn header(&self, transformers_version: &str) -> String {
        let plan = self.plan;
        let version = plan.transformers_version.as_deref().unwrap_or(transformers_version);
        let mut lines = vec![
            rule(78),
            "#  AUTO-GENERATED FILE - DO NOT EDIT DIRECTLY".to_string(),
            rule(78),
            "#".to_string(),
            format!("#  Source: {}", plan.source_module),
            format!("#  Based on: transformers=={version}"),
            "#".to_string(),
            "#  This file was generated by the modeling code generator.".to_string(),
            "#  It contains a patched version of the original HuggingFace modeling code.".to_string(),
            "#".to_string(),
            "#  Patches applied:".to_string(),
        ];
        for p in &plan.patches {
            lines.push(format!("#    - {}: {}", p.patch_type.value(), p.target));
            if let Some(d) = p.description.as_ref().filter(|d| !d.is_empty()) {
                lines.push(format!("#      {d}"));
            }
        }
        lines.push("#".to_string());
        lines.push(rule(78));
        lines.push(String::new());
        lines.join("\n")
    }

    /// `_render_helper_source`, with the config line of each line.
    fn render_helper(helper: &Helper, origin: impl Fn(u32) -> RawOrigin) -> Piece {
        let Some(obj) = &helper.object else { return Piece::default() };
        if obj.source.is_empty() {
            return Piece::default();
        }
        let src = pytext::dedent(&obj.source);
        let (src, kept) = strip_patch_decorators_traced(&src);
        let text = pytext::rstrip(&src).to_string();
        let origins = config_lines(&kept, obj, origin);
        Piece::new(text, Origins::Lines(origins.into_iter().take(piece_lines(pytext::rstrip(&src))).collect()))
    }

    /// `helpers`: (index, positioned, helper).
    fn helper_section<'h>(title: String, helpers: impl Iterator<Item = (usize, bool, &'h Helper)>) -> Piece {
        let mut lines = vec![String::new(), rule(70), title, rule(70)];
        let mut origins = vec![RawOrigin::Header; lines.len()];
        for (i, positioned, h) in helpers {
            let src = Self::render_helper(h, |line| RawOrigin::Helper { helper: index(i), positioned, line });
            if src.text.is_empty() {
                continue;
            }
            lines.push(String::new());
            origins.push(RawOrigin::Header);
            lines.push(src.text);
            origins.extend(src.origins);
        }
        Piece { text: lines.join("\n"), origins }
    }

    fn helpers_block(&self) -> Piece {
        if self.plan.helpers.is_empty() {
            return Piece::default();
        }
        Self::helper_section(
            "# [HELPERS] Module-level helpers injected via config.add_helper".to_string(),
            self.plan.helpers.iter().enumerate().map(|(i, h)| (i, false, h)),
        )
    }

    fn positioned_helpers_after(&self, target: &str) -> Piece {
        let helpers: Vec<(usize, bool, &Helper)> = self
            .plan
            .positioned_helpers
            .iter()
            .enumerate()
            .filter(|(_, h)| h.target == target && h.placement == "after")
            .map(|(i, h)| (i, true, &h.helper))
            .collect();
        if helpers.is_empty() {
            return Piece::default();
        }
        Self::helper_section(format!("# [HELPERS AFTER] {target}"), helpers.into_iter())
    }

    /// `__all__ = [...]` re-rendered without excluded names (only when
    /// `exclude_from_output` is used and `__all__` is a literal list of strings).
    fn filtered_all(&self, assign: &ruff_python_ast::StmtAssign) -> Option<String> {
        if self.plan.exclude.is_empty() || assign.targets.len() != 1 {
            return None;
        }
        let Expr::Name(name) = &assign.targets[0] else { return None };
        if name.id.as_str() != "__all__" {
            return None;
        }
        let elts = match &*assign.value {
            Expr::List(l) => &l.elts,
            Expr::Tuple(t) => &t.elts,
            _ => return None,
        };
        let mut names = Vec::new();
        for e in elts {
            match e {
                Expr::StringLiteral(s) => names.push(s.value.to_str().to_string()),
                _ => return None,
            }
        }
        let mut out = String::from("__all__ = [\n");
        for n in names.iter().filter(|n| !self.plan.exclude.contains(n)) {
            out.push_str(&format!("    \"{n}\",\n"));
        }
        out.push(']');
        Some(out)
    }

    /// The replacement's source after dedent, `name_map` and decorator
    /// stripping, and the source line index of each of its lines.
    fn prepared_replacement(patch: &Patch, source: &str) -> (String, Vec<u32>) {
        let src = pytext::dedent(source);
        let src = apply_name_map(&src, patch.name_map.as_deref());
        strip_patch_decorators_traced(&src)
    }

    /// A patch's prepared replacement text with its config origins.
    fn replacement_lines(
        &self,
        patch: &Patch,
        object: &patchgen_config::plan::SourceObject,
        text: String,
        kept: &[u32],
    ) -> Piece {
        let p = self.patch_index(patch);
        let origins = config_lines(kept, object, |line| RawOrigin::Patch { patch: p, line });
        Piece::new(text, Origins::Lines(origins))
    }

    fn patched_banner(&self, kind: &str, name: &str, patch: &Patch, replaced_with: Option<String>) -> Vec<String> {
        let mut lines = vec![String::new(), rule(70), format!("# [{kind}] {name}")];
        if let Some(r) = replaced_with {
            lines.push(format!("# Original class replaced with: {r}"));
        }
        if let Some(d) = patch.description.as_ref().filter(|d| !d.is_empty()) {
            lines.push(format!("# Reason: {d}"));
        }
        if let Some(s) = patch.source_module.as_ref().filter(|s| !s.is_empty()) {
            lines.push(format!("# Source: {s}"));
        }
        lines.push(rule(70));
        lines
    }

    fn class_replacement(
        &self,
        class: &StmtClassDef,
        patch: &Patch,
        removed: &mut Vec<Removed>,
    ) -> Result<Piece, CodegenError> {
        let class_name = class.name.id.as_str();
        let replaced_with = patch.replacement.as_ref().map(|r| r.name.clone()).unwrap_or_else(|| "external".into());
        let banner = self.banner_origin(patch);
        let mut lines =
            Piece::of_lines(self.patched_banner("PATCHED CLASS", class_name, patch, Some(replaced_with)), banner);
        let segment = self.class_segment(class);
        let p = self.patch_index(patch);
        if let Some(replacement) = &patch.replacement {
            if !replacement.source.is_empty() {
                let (mut src, kept) = Self::prepared_replacement(patch, &replacement.source);
                if replacement.name != class_name {
                    src = py_replace(
                        &src,
                        &format!("class {}", replacement.name),
                        &format!("class {class_name}"),
                        Some(1),
                    );
                }
                lines.append(self.replacement_lines(patch, replacement, src, &kept));
                self.replaced(&segment, p, removed);
            } else {
                lines.line(&format!("# Could not get source for {}", replacement.name), banner);
                lines.line("# Using original class as fallback", banner);
                lines.append(segment);
            }
        } else if let Some(rs) = patch.replacement_source.as_ref().filter(|s| !s.is_empty()) {
            self.replaced(&segment, p, removed);
            lines.line(&format!("# Import from: {rs}"), banner);
            let Some((module, name)) = rs.rsplit_once('.') else {
                return Err(CodegenError {
                    message: format!("replacement_source `{rs}` of the patch for `{class_name}` has no module part"),
                    help: Some("use `module.Name`".into()),
                    location: Some(Box::new(patch.registered_at.clone())),
                });
            };
            lines.line(&format!("from {module} import {name} as {class_name}"), banner);
        } else {
            lines.append(segment);
        }
        Ok(lines)
    }

    /// The class segment, ready for its overrides.
    fn class_edit(&self, class: &StmtClassDef, after: usize) -> methods::ClassEdit {
        let start = self.def_start_line(&class.decorator_list, &class.name);
        let range = segment_range(&self.source_lines, start, self.end_line_of(class.end()));
        methods::ClassEdit::upstream_segment(self.upstream, &self.source_lines, self.newline_only, class, range, after)
    }

    fn class_source(
        &self,
        class: &StmtClassDef,
        after: usize,
        removed: &mut Vec<Removed>,
    ) -> Result<Piece, CodegenError> {
        let class_name = class.name.id.as_str();
        if let Some(patch) = lookup(&self.class_replacements, class_name) {
            return self.class_replacement(class, patch, removed);
        }
        let prefix = format!("{class_name}.");
        let mut methods_patched: Vec<&str> = Vec::new();
        let mut sources: Vec<(&str, String)> = Vec::new();
        let mut source_patches: Vec<(&Patch, std::sync::Arc<Vec<u32>>)> = Vec::new();
        let mut first_patch: Option<&Patch> = None;
        for (target, patch) in &self.method_overrides {
            let Some(method_name) = target.strip_prefix(&prefix) else { continue };
            let prepared = match &patch.replacement {
                None => None,
                Some(r) => {
                    let key = (r.name.clone(), r.source.clone(), patch.name_map.clone(), method_name.to_string());
                    cache::memo(&self.cache.overrides, key, || methods::prepare_override(patch, method_name))
                }
            };
            if let Some((cleaned, kept)) = prepared {
                methods_patched.push(method_name);
                first_patch.get_or_insert(patch);
                if !cleaned.is_empty() {
                    match sources.iter().position(|(m, _)| *m == method_name) {
                        Some(k) => {
                            sources[k].1 = cleaned;
                            source_patches[k] = (patch, kept);
                        }
                        None => {
                            sources.push((method_name, cleaned));
                            source_patches.push((patch, kept));
                        }
                    }
                }
            }
        }
        let Some(first_patch) = first_patch else {
            return Ok(self.class_segment(class));
        };
        let banner = self.banner_origin(first_patch);
        let mut lines = Piece::of_lines(
            vec![
                String::new(),
                rule(70),
                format!("# [MODIFIED CLASS] {class_name}"),
                format!("# Methods patched: {}", methods_patched.join(", ")),
                rule(70),
            ],
            banner,
        );
        let key = (
            self.upstream.path.clone(),
            u32::from(class.name.start()),
            sources.iter().map(|(m, s)| (m.to_string(), s.clone())).collect(),
        );
        let (class_source, class_lines, dropped) = cache::memo(&self.cache.classes, key, || {
            let mut edit = self.class_edit(class, after);
            for (method_name, preserved) in &sources {
                edit.replace_method(method_name, preserved)?;
            }
            Ok(edit.finish_traced())
        })?;
        // Each override's prepared text, line by line, against its config lines.
        let override_lines: Vec<(u32, &[u32], Option<&patchgen_config::plan::SourceObject>)> = source_patches
            .iter()
            .map(|(patch, kept)| (self.patch_index(patch), kept.as_slice(), patch.replacement.as_ref()))
            .collect();
        let resolve = |line: methods::ClassLine| match line {
            methods::ClassLine::Upstream(l) => RawOrigin::Upstream { line: l },
            methods::ClassLine::Override { k, line } => {
                let (patch, kept, object) = &override_lines[k as usize];
                let config_line = match (kept.get(line as usize), object) {
                    (Some(i), Some(o)) => o.line_of(*i as usize) as u32,
                    _ => 0,
                };
                RawOrigin::Patch { patch: *patch, line: config_line }
            }
        };
        for (line, k) in dropped.iter() {
            removed.push(Removed {
                lines: *line..*line + 1,
                by: RemovedBy::Patch { patch: override_lines[*k as usize].0 },
            });
        }
        let origins: Vec<RawOrigin> = class_lines.iter().map(|l| resolve(*l)).collect();
        lines.append(Piece { text: class_source, origins });
        Ok(lines)
    }

    fn function_source(&self, func: &StmtFunctionDef, removed: &mut Vec<Removed>) -> Piece {
        let name = func.name.id.as_str();
        let Some(patch) = lookup(&self.function_replacements, name) else {
            return self.function_segment(func);
        };
        let banner = self.banner_origin(patch);
        let mut lines = Piece::of_lines(self.patched_banner("PATCHED FUNCTION", name, patch, None), banner);
        let segment = self.function_segment(func);
        match &patch.replacement {
            Some(replacement) if !replacement.source.is_empty() => {
                let (mut src, kept) = Self::prepared_replacement(patch, &replacement.source);
                if replacement.name != name {
                    src = py_replace(&src, &format!("def {}", replacement.name), &format!("def {name}"), Some(1));
                }
                self.replaced(&segment, self.patch_index(patch), removed);
                lines.append(self.replacement_lines(patch, replacement, src, &kept));
            }
            Some(_) => {
                lines.line("# Could not get source for replacement", banner);
                lines.append(segment);
            }
            None => lines.append(segment),
        }
        lines
    }
}
