//! Which parts of a generated module came from which config definition:
//! a replaced class, an overriding method, a replacing function, a helper,
//! a post-import block. A generated line inside one maps to the config line
//! that produced it (the replacement's text is copied line for line, so the
//! offset from the `def`/`class` keyword is kept).

use std::path::PathBuf;

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

impl Origin {
    /// The config line of generated line `line` (inside the region).
    pub fn config_line_of(&self, line: usize) -> usize {
        self.config_line + line.saturating_sub(self.gen_start).min(self.gen_end - self.gen_start)
    }
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

fn origin(
    qualname: String,
    kind: OriginKind,
    lines: (usize, usize),
    object: &SourceObject,
    patch: Option<usize>,
) -> Origin {
    Origin {
        qualname,
        kind,
        gen_start: lines.0,
        gen_end: lines.1.max(lines.0),
        config_path: object.defined_at.path.clone(),
        config_line: object.defined_at.line,
        patch,
    }
}

/// The regions of `generated` that came from `plan`'s config code.
pub fn origins(plan: &PatchPlan, generated: &ParsedFile, config_text: &str) -> Vec<Origin> {
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
                    if let Some(lines) = def_lines(generated, stmt) {
                        out.push(origin(name.to_string(), OriginKind::Replacement, lines, object, Some(i)));
                    }
                    continue;
                }
                if let Some(object) = helpers.iter().find(|h| h.name == name) {
                    if let Some(lines) = def_lines(generated, stmt) {
                        out.push(origin(name.to_string(), OriginKind::Helper, lines, object, None));
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
                    if let Some(lines) = def_lines(generated, member) {
                        out.push(origin(qual, OriginKind::Replacement, lines, object, Some(i)));
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
                if let (Some((object, patch, kind)), Some(lines)) = (found, def_lines(generated, stmt)) {
                    out.push(origin(name.to_string(), kind, lines, object, patch));
                }
            }
            _ => {}
        }
    }
    // Post-import blocks: found verbatim in the generated text, and their
    // first line in the config file.
    for block in &plan.post_import_blocks {
        let Some(first) = block.lines().find(|l| !l.trim().is_empty()) else {
            continue;
        };
        let Some(at) = generated.text.find(block.trim_start_matches('\n')) else {
            continue;
        };
        let gen_start = generated.line_of((at as u32).into());
        let gen_end = gen_start + block.trim_matches('\n').lines().count().saturating_sub(1);
        let Some(config_line) = line_containing(config_text, first.trim()) else {
            continue;
        };
        out.push(Origin {
            qualname: String::new(),
            kind: OriginKind::Block,
            gen_start,
            gen_end,
            config_path: plan.config_path.clone(),
            config_line,
            patch: None,
        });
    }
    out
}

/// The first 1-based line of `text` containing `needle`.
pub fn line_containing(text: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}
