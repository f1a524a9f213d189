//! What `patchgen new` does when the project's ruff rejects the generated
//! file for a finding that is neither an undefined name (F821, handled by
//! importing or pruning) nor in the template's reused code, but lies in
//! *unpatched upstream code* that the project's rules reject and ruff's
//! safe fix cannot repair (B006 mutable defaults, B904, E722, …): the
//! upstream transformers repository lints with other rules than the project.
//!
//! The scaffold then overrides the enclosing method (or replaces the
//! enclosing top-level function) with the upstream text *verbatim* (after
//! the safe fixes ruff applies anyway), the flagged lines carrying
//! `# noqa: <CODE>`, under a `# TODO(patchgen new): …` line. Verbatim
//! keeps upstream behaviour exactly (ruff's unsafe fixes change it: B006's
//! turns an explicit `None` argument into the default and leaves the
//! annotation `list[int] = None`); the TODO leaves the real decision —
//! rewrite, disable (VeOmni's qwen2_5_omni config disables `generate`), or
//! keep — to the maintainer. A finding inside a reused replacement drops
//! that reuse instead; one outside any function cannot be overridden and
//! makes generation fail with ruff's message.

use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use serde::Serialize;

use super::facts::ModelFacts;
use patchgen_python::pysource::names::LoadedNames;

/// One finding of `ruff check --output-format json` (rows 1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub code: String,
    pub message: String,
    pub row: usize,
    /// The row a `# noqa` for it must be on (the end of a multi-line string).
    pub noqa_row: usize,
}

/// The findings of ruff's JSON output (nothing for anything else).
pub fn parse(json: &str) -> Vec<Finding> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(json.trim()) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|d| {
            let code = d.get("code")?.as_str()?.to_string();
            let row = d.get("location")?.get("row")?.as_u64()? as usize;
            let noqa_row = d.get("noqa_row").and_then(|r| r.as_u64()).map_or(row, |r| r as usize);
            let message = d.get("message").and_then(|m| m.as_str()).unwrap_or_default().to_string();
            Some(Finding { code, message, row, noqa_row })
        })
        .collect()
}

/// Where a finding lies in the generated text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Site {
    /// `class.method`; `def_row` is the row of its `def` line.
    Method { class: String, method: String, def_row: usize, end_row: usize },
    /// A top-level function.
    Function { name: String, def_row: usize, end_row: usize },
    /// Module level, or a class body outside any method.
    Other,
}

impl Site {
    /// The patch target the site is (`Class.method` or the function).
    pub fn target(&self) -> Option<String> {
        match self {
            Site::Method { class, method, .. } => Some(format!("{class}.{method}")),
            Site::Function { name, .. } => Some(name.clone()),
            Site::Other => None,
        }
    }

    fn rows(&self) -> Option<(usize, usize)> {
        match self {
            Site::Method { def_row, end_row, .. } | Site::Function { def_row, end_row, .. } => {
                Some((*def_row, *end_row))
            }
            Site::Other => None,
        }
    }
}

/// 1-based row of byte offset `at`.
fn row_of(text: &str, at: usize) -> usize {
    patchgen_diagnostics::LineIndex::new(text).line_of(at)
}

/// The function or method (outermost within its class) holding `row`.
pub fn site_of(text: &str, parsed: &[Stmt], row: usize) -> Site {
    let span = |f: &ruff_python_ast::StmtFunctionDef| {
        (row_of(text, f.name.start().to_usize()), row_of(text, f.end().to_usize()))
    };
    for stmt in parsed {
        let (start, end) = (row_of(text, stmt.start().to_usize()), row_of(text, stmt.end().to_usize()));
        if !(start..=end).contains(&row) {
            continue;
        }
        return match stmt {
            Stmt::FunctionDef(f) => {
                let (def_row, end_row) = span(f);
                Site::Function { name: f.name.id.to_string(), def_row, end_row }
            }
            Stmt::ClassDef(c) => c
                .body
                .iter()
                .find_map(|s| match s {
                    Stmt::FunctionDef(f) => {
                        let (def_row, end_row) = span(f);
                        (row_of(text, f.start().to_usize()) <= row && row <= end_row).then(|| Site::Method {
                            class: c.name.id.to_string(),
                            method: f.name.id.to_string(),
                            def_row,
                            end_row,
                        })
                    }
                    _ => None,
                })
                .unwrap_or(Site::Other),
            _ => Site::Other,
        };
    }
    Site::Other
}

/// An upstream method or function the scaffold overrides with its own
/// text, because the project's ruff rejects it as it is.
#[derive(Clone, Debug, Serialize)]
pub struct UpstreamOverride {
    /// `override_method` or `replace_function`.
    pub patch_type: &'static str,
    pub target: String,
    /// The name of the function in the config.
    pub function: String,
    /// The ruff codes silenced, in order.
    pub codes: Vec<String>,
    /// The comment line above it (`TODO(patchgen new): …`, or what the
    /// scaffold did and why).
    pub todo: String,
    pub description: String,
    /// The definition (from its `def` line, no decorators: codegen keeps
    /// upstream's), dedented, with the `# noqa` comments.
    #[serde(skip)]
    pub source: String,
    /// Import statements the config needs for the names the signature
    /// reads at definition time (annotations, defaults).
    #[serde(skip)]
    pub imports: Vec<String>,
}

/// `snake_case` of a class name (`Qwen2_5OmniForX` → `qwen2_5_omni_for_x`).
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1);
            let boundary = prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
                || (prev.is_some_and(char::is_uppercase) && next.is_some_and(|n| n.is_lowercase()));
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

/// `lines[def_row..=end_row]` of `text`, dedented, each line whose row is
/// a key of `noqa` ending in `  # noqa: <codes>`.
pub fn with_noqa(text: &str, def_row: usize, end_row: usize, noqa: &[(usize, String)]) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate().skip(def_row - 1).take(end_row + 1 - def_row) {
        out.push_str(line);
        let codes: Vec<&str> = noqa.iter().filter(|(r, _)| *r == i + 1).map(|(_, c)| c.as_str()).collect();
        if !codes.is_empty() {
            let mut codes = codes;
            codes.dedup();
            out.push_str(&format!("  # noqa: {}", codes.join(", ")));
        }
        out.push('\n');
    }
    patchgen_python::pytext::dedent(&out)
}

/// Names a definition reads when it is defined: parameter annotations and
/// defaults, the return annotation.
pub(super) fn signature_names(def: &ruff_python_ast::StmtFunctionDef) -> Vec<String> {
    let mut v = LoadedNames::default();
    let p = &def.parameters;
    for param in p.posonlyargs.iter().chain(&p.args).chain(&p.kwonlyargs) {
        if let Some(a) = &param.parameter.annotation {
            v.visit_expr(a);
        }
        if let Some(d) = &param.default {
            v.visit_expr(d);
        }
    }
    for param in p.vararg.iter().chain(&p.kwarg) {
        if let Some(a) = &param.annotation {
            v.visit_expr(a);
        }
    }
    if let Some(r) = &def.returns {
        v.visit_expr(r);
    }
    v.0
}

/// The statement that binds `name` as the upstream module `facts` binds it
/// at top level: its own import, or an import from the module itself for
/// what it defines. `None` for a builtin (or anything else it does not bind).
pub(super) fn binding_import(facts: &ModelFacts, name: &str) -> Option<String> {
    for stmt in facts.file.body() {
        match stmt {
            Stmt::ImportFrom(i) => {
                let Some(a) = i.names.iter().find(|a| a.asname.as_ref().unwrap_or(&a.name).id.as_str() == name) else {
                    continue;
                };
                let from = i.module.as_ref().map(|m| m.id.to_string());
                let module = if i.level > 0 {
                    patchgen_core::codegen::imports::absolute_module(&facts.module, from.as_deref(), i.level)?
                } else {
                    from?
                };
                return Some(match &a.asname {
                    Some(alias) => format!("from {module} import {} as {alias}", a.name.id),
                    None => format!("from {module} import {name}"),
                });
            }
            Stmt::Import(i) => {
                for a in &i.names {
                    let bound = a.asname.as_ref().map_or_else(
                        || a.name.id.split('.').next().unwrap_or_default().to_string(),
                        |x| x.id.to_string(),
                    );
                    if bound == name {
                        return Some(match &a.asname {
                            Some(alias) => format!("import {} as {alias}", a.name.id),
                            None => format!("import {}", a.name.id),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    let defined = facts.has_class(name) || facts.has_function(name) || facts.file.body().iter().any(|s| {
        matches!(s, Stmt::Assign(a) if a.targets.iter().any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name)))
            || matches!(s, Stmt::AnnAssign(a) if matches!(&*a.target, Expr::Name(n) if n.id.as_str() == name))
    });
    defined.then(|| format!("from {} import {name}", facts.module))
}

/// The override of the upstream definition at `site` of the generated
/// (ruff-fixed) `text`, with `findings` (all inside it) silenced.
pub fn override_upstream(text: &str, site: &Site, findings: &[&Finding], new: &ModelFacts) -> Option<UpstreamOverride> {
    let (def_row, end_row) = site.rows()?;
    let noqa: Vec<(usize, String)> = findings.iter().map(|f| (f.noqa_row, f.code.clone())).collect();
    let mut source = with_noqa(text, def_row, end_row, &noqa);
    let (patch_type, target, stem) = match site {
        Site::Method { class, method, .. } => {
            ("override_method", format!("{class}.{method}"), format!("{}_{method}", snake(class)))
        }
        Site::Function { name, .. } => ("replace_function", name.clone(), name.clone()),
        Site::Other => return None,
    };
    let original = match site {
        Site::Method { method, .. } => method.clone(),
        Site::Function { name, .. } => name.clone(),
        Site::Other => unreachable!(),
    };
    let function = format!("{stem}_upstream");
    source = patchgen_core::codegen::text::py_replace(
        &source,
        &format!("def {original}("),
        &format!("def {function}("),
        Some(1),
    );
    let parsed = ruff_python_parser::parse_module(&source).ok()?;
    let Some(Stmt::FunctionDef(def)) = parsed.syntax().body.first() else {
        return None;
    };
    let imports: Vec<String> = signature_names(def).iter().filter_map(|n| binding_import(new, n)).collect();
    let mut codes: Vec<String> = Vec::new();
    for f in findings {
        if !codes.contains(&f.code) {
            codes.push(f.code.clone());
        }
    }
    let what: Vec<String> = findings.iter().map(|f| format!("{} {}", f.code, f.message)).collect();
    let todo = format!(
        "TODO(patchgen new): upstream `{target}` is copied verbatim because the project's ruff rejects it ({}), its flagged lines marked `noqa: {}`: rewrite it, disable it, or keep it",
        what.join("; "),
        codes.join(", ")
    );
    let description = format!("upstream verbatim, ruff {} silenced (patchgen new)", codes.join(", "));
    Some(UpstreamOverride { patch_type, target, function, codes, todo, description, source, imports })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_of_class_names() {
        assert_eq!(snake("Qwen2_5OmniForConditionalGeneration"), "qwen2_5_omni_for_conditional_generation");
        assert_eq!(snake("LlamaMLP"), "llama_mlp");
        assert_eq!(snake("GPT2Model"), "gpt2_model");
    }

    #[test]
    fn sites_and_noqa() {
        let text = "import os\n\n\nclass A:\n    x = [1]\n\n    @dec\n    def g(self, y=[1]):\n        return y\n\n\ndef f(\n    a={},\n):\n    pass\n";
        let parsed = ruff_python_parser::parse_module(text).unwrap();
        let body = &parsed.syntax().body;
        assert_eq!(site_of(text, body, 5), Site::Other);
        let g = site_of(text, body, 7);
        assert_eq!(g, Site::Method { class: "A".into(), method: "g".into(), def_row: 8, end_row: 9 });
        assert_eq!(site_of(text, body, 13), Site::Function { name: "f".into(), def_row: 12, end_row: 15 });
        assert_eq!(site_of(text, body, 1), Site::Other);
        assert_eq!(
            with_noqa(text, 8, 9, &[(8, "B006".into()), (8, "B008".into())]),
            "def g(self, y=[1]):  # noqa: B006, B008\n    return y\n"
        );
    }
}
