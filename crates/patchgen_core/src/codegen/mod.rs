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

pub use cache::Cache;
use patchgen_config::plan::{Helper, Patch, PatchPlan, PatchType};
use patchgen_config::source::{ParsedFile, keyword_line};
use patchgen_python::pytext;
use text::{
    apply_name_map, collapse_blank_lines, extract_source_segment, py_replace, rule, segment_range,
    strip_patch_decorators,
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

/// [`generate`], reusing (and adding to) what `cache` holds from other
/// configs of the same run.
pub fn generate_with(
    plan: &PatchPlan,
    upstream: &ParsedFile,
    transformers_version: &str,
    cache: &Cache,
) -> Result<String, CodegenError> {
    let g = Generator {
        plan,
        upstream,
        cache,
        source_lines: upstream.splitlines(),
        newline_only: upstream.only_newline_breaks(),
        class_replacements: by_target(plan, PatchType::ClassReplacement),
        method_overrides: by_target(plan, PatchType::MethodOverride),
        function_replacements: by_target(plan, PatchType::FunctionReplacement),
    };
    g.generate(transformers_version)
}

impl<'a> Generator<'a> {
    fn generate(&self, transformers_version: &str) -> Result<String, CodegenError> {
        let plan = self.plan;
        let mut parts: Vec<String> = Vec::new();
        let mut emitted_positioned: BTreeSet<&str> = BTreeSet::new();

        parts.push(self.header(transformers_version));
        let imports = imports::collect_imports(self.upstream.body());
        parts.push(imports::transform_imports(plan, &imports));
        parts.push(String::new());

        let helpers = self.helpers_block();
        if !helpers.is_empty() {
            parts.push(helpers);
            parts.push(String::new());
        }

        let mut previous_end = 0;
        for stmt in self.upstream.body() {
            let after = previous_end;
            previous_end = self.end_line(stmt);
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => {}
                Stmt::ClassDef(class) if !self.excluded(class.name.id.as_str()) => {
                    parts.push(self.class_source(class, after)?);
                    self.push_after(&mut parts, &mut emitted_positioned, class.name.id.as_str());
                }
                Stmt::FunctionDef(func) if !self.excluded(func.name.id.as_str()) => {
                    parts.push(self.function_source(func));
                    self.push_after(&mut parts, &mut emitted_positioned, func.name.id.as_str());
                }
                Stmt::Assign(assign) => {
                    if let Some(rendered) = self.filtered_all(assign) {
                        parts.push(rendered);
                    } else {
                        let start = self.upstream.line_of(assign.start());
                        let end = self.end_line(stmt);
                        parts.push(extract_source_segment(&self.source_lines, start, end));
                    }
                    parts.push(String::new());
                }
                Stmt::Expr(expr) if matches!(&*expr.value, Expr::StringLiteral(_)) => {
                    let start = self.upstream.line_of(expr.start());
                    let end = self.end_line(stmt);
                    parts.push(extract_source_segment(&self.source_lines, start, end));
                    parts.push(String::new());
                }
                _ => {}
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

        Ok(collapse_blank_lines(&parts.join("\n"), 2))
    }

    fn excluded(&self, name: &str) -> bool {
        self.plan.exclude.iter().any(|e| e == name)
    }

    /// The blank separator after a class or function, then its
    /// `add_helper_after` section if it has one.
    fn push_after(&self, parts: &mut Vec<String>, emitted: &mut BTreeSet<&'a str>, name: &'a str) {
        parts.push(String::new());
        let after = self.positioned_helpers_after(name);
        if !after.is_empty() {
            parts.push(after);
            parts.push(String::new());
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

    fn class_segment(&self, class: &StmtClassDef) -> String {
        let start = self.def_start_line(&class.decorator_list, &class.name);
        let end = self.upstream.line_of(class.end());
        extract_source_segment(&self.source_lines, start, end)
    }

    fn function_segment(&self, func: &StmtFunctionDef) -> String {
        let start = self.def_start_line(&func.decorator_list, &func.name);
        let end = self.upstream.line_of(func.end());
        extract_source_segment(&self.source_lines, start, end)
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

    /// `_render_helper_source`.
    fn render_helper(helper: &Helper) -> String {
        let Some(obj) = &helper.object else { return String::new() };
        if obj.source.is_empty() {
            return String::new();
        }
        let src = pytext::dedent(&obj.source);
        let src = strip_patch_decorators(&src);
        pytext::rstrip(&src).to_string()
    }

    fn helper_section<'h>(title: String, helpers: impl Iterator<Item = &'h Helper>) -> String {
        let mut lines = vec![String::new(), rule(70), title, rule(70)];
        for h in helpers {
            let src = Self::render_helper(h);
            if src.is_empty() {
                continue;
            }
            lines.push(String::new());
            lines.push(src);
        }
        lines.join("\n")
    }

    fn helpers_block(&self) -> String {
        if self.plan.helpers.is_empty() {
            return String::new();
        }
        Self::helper_section(
            "# [HELPERS] Module-level helpers injected via config.add_helper".to_string(),
            self.plan.helpers.iter(),
        )
    }

    fn positioned_helpers_after(&self, target: &str) -> String {
        let helpers: Vec<&Helper> = self
            .plan
            .positioned_helpers
            .iter()
            .filter(|h| h.target == target && h.placement == "after")
            .map(|h| &h.helper)
            .collect();
        if helpers.is_empty() {
            return String::new();
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

    /// The replacement's source after dedent, `name_map` and decorator stripping.
    fn prepared_replacement(patch: &Patch, source: &str) -> String {
        let src = pytext::dedent(source);
        let src = apply_name_map(&src, patch.name_map.as_deref());
        strip_patch_decorators(&src)
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

    fn class_replacement(&self, class: &StmtClassDef, patch: &Patch) -> Result<String, CodegenError> {
        let class_name = class.name.id.as_str();
        let replaced_with = patch.replacement.as_ref().map(|r| r.name.clone()).unwrap_or_else(|| "external".into());
        let mut lines = self.patched_banner("PATCHED CLASS", class_name, patch, Some(replaced_with));
        if let Some(replacement) = &patch.replacement {
            if !replacement.source.is_empty() {
                let mut src = Self::prepared_replacement(patch, &replacement.source);
                if replacement.name != class_name {
                    src = py_replace(
                        &src,
                        &format!("class {}", replacement.name),
                        &format!("class {class_name}"),
                        Some(1),
                    );
                }
                lines.push(src);
            } else {
                lines.push(format!("# Could not get source for {}", replacement.name));
                lines.push("# Using original class as fallback".into());
                lines.push(self.class_segment(class));
            }
        } else if let Some(rs) = patch.replacement_source.as_ref().filter(|s| !s.is_empty()) {
            lines.push(format!("# Import from: {rs}"));
            let Some((module, name)) = rs.rsplit_once('.') else {
                return Err(CodegenError {
                    message: format!("replacement_source `{rs}` of the patch for `{class_name}` has no module part"),
                    help: Some("use `module.Name`".into()),
                    location: Some(Box::new(patch.registered_at.clone())),
                });
            };
            lines.push(format!("from {module} import {name} as {class_name}"));
        } else {
            lines.push(self.class_segment(class));
        }
        Ok(lines.join("\n"))
    }

    /// The class segment, ready for its overrides.
    fn class_edit(&self, class: &StmtClassDef, after: usize) -> methods::ClassEdit {
        let start = self.def_start_line(&class.decorator_list, &class.name);
        let range = segment_range(&self.source_lines, start, self.end_line_of(class.end()));
        methods::ClassEdit::upstream_segment(self.upstream, &self.source_lines, self.newline_only, class, range, after)
    }

    fn class_source(&self, class: &StmtClassDef, after: usize) -> Result<String, CodegenError> {
        let class_name = class.name.id.as_str();
        if let Some(patch) = lookup(&self.class_replacements, class_name) {
            return self.class_replacement(class, patch);
        }
        let prefix = format!("{class_name}.");
        let mut methods_patched: Vec<&str> = Vec::new();
        let mut sources: Vec<(&str, String)> = Vec::new();
        for (target, patch) in &self.method_overrides {
            let Some(method_name) = target.strip_prefix(&prefix) else { continue };
            let prepared = match &patch.replacement {
                None => None,
                Some(r) => {
                    let key = (r.name.clone(), r.source.clone(), patch.name_map.clone(), method_name.to_string());
                    cache::memo(&self.cache.overrides, key, || methods::prepare_override(patch, method_name))
                }
            };
            if let Some(cleaned) = prepared {
                methods_patched.push(method_name);
                if !cleaned.is_empty() {
                    match sources.iter_mut().find(|(m, _)| *m == method_name) {
                        Some(slot) => slot.1 = cleaned,
                        None => sources.push((method_name, cleaned)),
                    }
                }
            }
        }
        if methods_patched.is_empty() {
            return Ok(self.class_segment(class));
        }
        let mut lines = vec![
            String::new(),
            rule(70),
            format!("# [MODIFIED CLASS] {class_name}"),
            format!("# Methods patched: {}", methods_patched.join(", ")),
            rule(70),
        ];
        let key = (
            self.upstream.path.clone(),
            u32::from(class.name.start()),
            sources.iter().map(|(m, s)| (m.to_string(), s.clone())).collect(),
        );
        let class_source = cache::memo(&self.cache.classes, key, || {
            let mut edit = self.class_edit(class, after);
            for (method_name, preserved) in &sources {
                edit.replace_method(method_name, preserved)?;
            }
            Ok(edit.finish())
        })?;
        lines.push(class_source);
        Ok(lines.join("\n"))
    }

    fn function_source(&self, func: &StmtFunctionDef) -> String {
        let name = func.name.id.as_str();
        let Some(patch) = lookup(&self.function_replacements, name) else {
            return self.function_segment(func);
        };
        let mut lines = self.patched_banner("PATCHED FUNCTION", name, patch, None);
        match &patch.replacement {
            Some(replacement) if !replacement.source.is_empty() => {
                let mut src = Self::prepared_replacement(patch, &replacement.source);
                if replacement.name != name {
                    src = py_replace(&src, &format!("def {}", replacement.name), &format!("def {name}"), Some(1));
                }
                lines.push(src);
            }
            Some(_) => {
                lines.push("# Could not get source for replacement".into());
                lines.push(self.function_segment(func));
            }
            None => lines.push(self.function_segment(func)),
        }
        lines.join("\n")
    }
}
