//! The config-written parts of a generated module, as the model-contract
//! rules (PG3xx) walk them: every method of a generated class whose text a
//! config wrote (an `override_method` replacement, or any method of a
//! `replace_class` replacement), with the patch that put it there; a class
//! name resolved to its definition (generated module, upstream, or a
//! first-party module it is imported from); and the config line a finding
//! about upstream code the config left alone should point at.

use std::sync::Arc;

use ruff_python_ast::{Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::Ranged;

use super::LintContext;
use super::pyfacts;
use patchgen_config::plan::Loc;
use patchgen_python::pysource::ParsedFile;

/// A generated method a config wrote.
pub struct PatchedMethod<'a> {
    pub class: &'a StmtClassDef,
    pub method: &'a StmtFunctionDef,
    /// Where the patch is registered (the fallback location).
    pub registered_at: Option<Loc>,
}

impl PatchedMethod<'_> {
    pub fn qualname(&self) -> String {
        format!("{}.{}", self.class.name.id, self.method.name.id)
    }
}

/// Every method of a generated top-level class that config code wrote.
pub fn methods<'a>(ctx: &'a LintContext) -> Vec<PatchedMethod<'a>> {
    let mut out = Vec::new();
    for stmt in ctx.generated.body() {
        let Stmt::ClassDef(class) = stmt else {
            continue;
        };
        for member in &class.body {
            let Stmt::FunctionDef(method) = member else {
                continue;
            };
            let line = ctx.generated.line_of(method.name.start());
            let Some(origin) = ctx.origin_of_line(line) else {
                continue;
            };
            if origin.kind != super::genmap::OriginKind::Replacement {
                continue;
            }
            let registered_at = origin.patch.map(|i| ctx.plan.patches[i].registered_at.clone());
            out.push(PatchedMethod { class, method, registered_at });
        }
    }
    out
}

/// Bases of model classes that define none of the model methods rules
/// compare with (`forward`, ...): not followed into their modules.
const FRAMEWORK_BASES: &[&str] =
    &["PreTrainedModel", "GenerationMixin", "Module", "GradientCheckpointingLayer", "object"];

/// Calls `f` with the upstream method `class.method`: found in the class
/// or a base defined in the patched module itself first (no other module
/// is read), else along the bases in other upstream modules.
pub fn with_upstream_method<R>(
    ctx: &LintContext,
    class: &str,
    method: &str,
    f: impl FnOnce(&StmtFunctionDef) -> R,
) -> Option<R> {
    if let Some(c) = ctx.upstream_class_def(class) {
        if let Some(m) = pyfacts::resolve_method(ctx.upstream.body(), c, method) {
            return Some(f(m));
        }
        // Bases outside the module that are only framework plumbing hold
        // no model method worth the parse of their (large) modules.
        let body = ctx.upstream.body();
        let foreign = pyfacts::local_lineage(body, c).into_iter().flat_map(pyfacts::base_names).filter(|b| {
            let last = b.rsplit('.').next().unwrap_or(b);
            pyfacts::class(body, b).is_none() && !FRAMEWORK_BASES.contains(&last)
        });
        if foreign.count() == 0 {
            return None;
        }
    }
    let c = ctx.upstream_class(class)?;
    let lineage = ctx.shared.lineage(&c);
    lineage.method(method).map(|(_, m)| f(m))
}

/// Where a finding about upstream code the config did not touch points:
/// the `PatchConfig(` call (or, for a config that reuses another config
/// object, its first `config.` statement), else the file's first line.
pub fn config_anchor(ctx: &LintContext) -> Loc {
    let path = ctx.config_path().to_path_buf();
    let text = &ctx.config.text;
    let line = genmap_line(text, "PatchConfig(")
        .or_else(|| genmap_line(text, "config.target_file"))
        .or_else(|| genmap_line(text, "config."))
        .unwrap_or(1);
    Loc::line(path, line)
}

fn genmap_line(text: &str, needle: &str) -> Option<usize> {
    text.lines().position(|l| l.contains(needle) && !l.trim_start().starts_with('#')).map(|i| i + 1)
}

/// A class definition found for a name used in a module.
pub struct FoundClass {
    /// `None`: the generated module itself.
    pub file: Option<Arc<ParsedFile>>,
    /// Dotted module of `file` (`""` for the generated module).
    pub module: String,
    /// Index of the class statement in the file's body.
    index: usize,
}

impl FoundClass {
    pub fn file<'a>(&'a self, ctx: &'a LintContext) -> &'a ParsedFile {
        self.file.as_deref().unwrap_or(&ctx.generated)
    }

    pub fn def<'a>(&'a self, ctx: &'a LintContext) -> &'a StmtClassDef {
        match &self.file(ctx).body()[self.index] {
            Stmt::ClassDef(c) => c,
            _ => unreachable!("FoundClass points at a class"),
        }
    }

    fn same(&self, other: &FoundClass) -> bool {
        self.index == other.index
            && match (&self.file, &other.file) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}

/// `from M import name [as alias]` in `body`: the module (made absolute
/// against `module` for relative imports) and the imported name.
pub fn imported(body: &[Stmt], module: &str, is_package: bool, name: &str) -> Option<(String, String)> {
    for stmt in body {
        let Stmt::ImportFrom(i) = stmt else { continue };
        for alias in &i.names {
            let bound = alias.asname.as_ref().unwrap_or(&alias.name);
            if bound.id.as_str() != name {
                continue;
            }
            let from = i.module.as_ref().map(|m| m.id.to_string()).unwrap_or_default();
            let absolute = if i.level == 0 {
                from
            } else {
                let mut parts: Vec<&str> = module.split('.').collect();
                let drop = if is_package { i.level as usize - 1 } else { i.level as usize };
                for _ in 0..drop {
                    parts.pop();
                }
                let base = parts.join(".");
                match (base.is_empty(), from.is_empty()) {
                    (_, true) => base,
                    (true, false) => from,
                    (false, false) => format!("{base}.{from}"),
                }
            };
            return Some((absolute, alias.name.id.to_string()));
        }
    }
    None
}

/// The class `name` as the generated module sees it: defined there, or
/// imported from an upstream or first-party module (re-exports followed).
pub fn resolve_class(ctx: &LintContext, name: &str) -> Option<FoundClass> {
    resolve_in(ctx, None, "", false, name, 0)
}

fn class_index(file: &ParsedFile, name: &str) -> Option<usize> {
    file.body().iter().rposition(|s| matches!(s, Stmt::ClassDef(c) if c.name.id.as_str() == name))
}

/// The class `name` as `file` (`None`: the generated module) sees it.
fn resolve_in(
    ctx: &LintContext,
    file: Option<Arc<ParsedFile>>,
    module: &str,
    is_package: bool,
    name: &str,
    depth: usize,
) -> Option<FoundClass> {
    if depth > 8 {
        return None;
    }
    let parsed: &ParsedFile = file.as_deref().unwrap_or(&ctx.generated);
    if let Some(index) = class_index(parsed, name) {
        return Some(FoundClass { file, module: module.to_string(), index });
    }
    let (from, original) = imported(parsed.body(), module, is_package, name)?;
    let (next, next_is_package) = if from.split('.').next() == Some("transformers") {
        match ctx.shared.upstream_module(&from) {
            Some(f) => (f, false),
            None => (ctx.shared.upstream_package_init(&from)?, true),
        }
    } else {
        ctx.shared.project_module(&from)?
    };
    resolve_in(ctx, Some(next), &from, next_is_package, &original, depth + 1)
}

/// The class and its bases as far as they resolve (each once, depth first).
pub fn lineage(ctx: &LintContext, start: FoundClass) -> Vec<FoundClass> {
    let mut out: Vec<FoundClass> = Vec::new();
    let mut todo = vec![start];
    while let Some(c) = todo.pop() {
        if out.iter().any(|o| o.same(&c)) || out.len() > 24 {
            continue;
        }
        let file = c.file(ctx);
        let is_package = file.path.file_name().is_some_and(|n| n == "__init__.py");
        let mut next: Vec<FoundClass> = pyfacts::base_names(c.def(ctx))
            .iter()
            .filter(|b| !b.contains('.'))
            .filter_map(|b| resolve_in(ctx, c.file.clone(), &c.module, is_package, b, 1))
            .collect();
        out.push(c);
        next.reverse();
        todo.extend(next);
    }
    out
}
