//! PG303 auto-docstring-contract: a patched `@auto_docstring` method returns an output class without documented fields, or adds undocumented parameters.
//!
//! ## What it does
//! `override_method` keeps the upstream decorators, so a replacement of an
//! `@auto_docstring` method is run through transformers' docstring builder
//! when the generated module is imported. For each such method a config
//! writes, this rule checks:
//! - the return annotation: when the method's own docstring has no
//!   `Returns:` section, every `ModelOutput` class the annotation names must
//!   have a docstring with documented fields (`name (type): ...`). A
//!   `@dataclass` without a docstring gets an automatic one without them, and
//!   a class without a docstring falls back to its bases' only when it is
//!   not a dataclass;
//! - the parameters: every parameter the replacement adds to the upstream
//!   signature must be documented in the method's docstring or be one of
//!   the arguments transformers documents itself (`ModelArgs` in
//!   `transformers/utils/auto_docstring.py`).
//!
//! ## Why is this bad?
//! The first is a `ValueError` ("No `Args` or `Parameters` section is found
//! in the docstring of ...") at *import* of the generated module: the model
//! does not load at all. GPU CI never imports the NPU-only generated files,
//! so an NPU file can ship broken (it happened to
//! `patched_modeling_qwen3_5_npu.py`). The second prints an `[ERROR] ... is
//! part of ...'s signature, but not documented` line at every import.
//!
//! ## Example
//! ```python
//! @dataclass
//! class MyCausalLMOutput(CausalLMOutputWithPast):
//!     log_probs: torch.Tensor | None = None
//!
//! @config.override_method("Qwen3ForCausalLM.forward")  # upstream: @auto_docstring
//! def forward(self, input_ids=None, labels=None, return_log_probs=False, **kwargs) -> MyCausalLMOutput:
//!     ...
//! ```
//!
//! ## Use instead
//! ```python
//! @dataclass
//! class MyCausalLMOutput(CausalLMOutputWithPast):
//!     """
//!     Args:
//!         log_probs (`torch.Tensor`, *optional*):
//!             Per-token log-probabilities.
//!     """
//!     log_probs: torch.Tensor | None = None
//!
//! @config.override_method("Qwen3ForCausalLM.forward")
//! def forward(self, input_ids=None, labels=None, return_log_probs=False, **kwargs) -> MyCausalLMOutput:
//!     r"""
//!     return_log_probs (`bool`, *optional*):
//!         Also return per-token log-probabilities.
//!     """
//!     ...
//! ```

use ruff_python_ast::{Expr, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::Ranged;

use super::super::{LintContext, Rule, patched, pyfacts};
use crate::docstring::{documented_names, documents_fields, has_returns_section};
use crate::fix::{Applicability, Fix, TextEdit};
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::facts;

pub const RULE: Rule = Rule {
    code: "PG303",
    name: "auto-docstring-contract",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg303_auto_docstring_contract.rs"),
    check,
    check_project: None,
};

/// What a class's `__doc__` is, statically.
#[derive(Debug, PartialEq, Eq)]
pub enum ClassDoc {
    /// A docstring or a `__doc__ = ...` made of known strings.
    Text(String),
    /// `__doc__ = <something not known statically>`: assume it is fine.
    Unknown,
    /// No docstring: `None`, or the dataclass auto-doc.
    Missing,
}

/// The class's own doc: its docstring, or a class-level `__doc__ = ...`
/// of string literals and module-level string constants joined with `+`.
pub fn class_doc(file: &ParsedFile, class: &StmtClassDef) -> ClassDoc {
    if let Some(doc) = facts::docstring(&class.body) {
        return ClassDoc::Text(doc.to_string());
    }
    for stmt in &class.body {
        if let Stmt::Assign(a) = stmt
            && a.targets.iter().any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == "__doc__"))
        {
            return match const_str(file, &a.value, 0) {
                Some(s) => ClassDoc::Text(s),
                None => ClassDoc::Unknown,
            };
        }
    }
    ClassDoc::Missing
}

/// A string expression's value: literals, `+`, parentheses, and names of
/// module-level string assignments.
fn const_str(file: &ParsedFile, expr: &Expr, depth: usize) -> Option<String> {
    if depth > 8 {
        return None;
    }
    match expr {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        Expr::BinOp(b) if matches!(b.op, ruff_python_ast::Operator::Add) => {
            Some(const_str(file, &b.left, depth + 1)? + &const_str(file, &b.right, depth + 1)?)
        }
        Expr::Name(n) => file.body().iter().rev().find_map(|s| match s {
            Stmt::Assign(a) if a.targets.iter().any(|t| matches!(t, Expr::Name(t) if t.id == n.id)) => {
                const_str(file, &a.value, depth + 1)
            }
            _ => None,
        }),
        _ => None,
    }
}

fn is_dataclass(class: &StmtClassDef) -> bool {
    class.decorator_list.iter().any(|d| facts::decorator_ident(d) == Some("dataclass"))
}

/// The names an annotation mentions (`A | None`, `tuple | A`, `"A"`).
fn annotation_names(expr: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    collect_names(expr, &mut out);
    out
}

fn collect_names(expr: &Expr, out: &mut Vec<String>) {
    match expr {
        Expr::Name(n) => out.push(n.id.to_string()),
        Expr::BinOp(b) => {
            collect_names(&b.left, out);
            collect_names(&b.right, out);
        }
        Expr::Subscript(s) => {
            collect_names(&s.value, out);
            collect_names(&s.slice, out);
        }
        Expr::Tuple(t) => t.elts.iter().for_each(|e| collect_names(e, out)),
        Expr::StringLiteral(s) => {
            if let Ok(parsed) = ruff_python_parser::parse_expression(s.value.to_str()) {
                collect_names(parsed.expr(), out);
            }
        }
        _ => {}
    }
}

/// Why a return class breaks `@auto_docstring`, or `None` when it does not
/// (or is not a `ModelOutput`, or cannot be followed).
fn return_class_problem(ctx: &LintContext, name: &str) -> Option<String> {
    let found = patched::resolve_class(ctx, name)?;
    let chain = patched::lineage(ctx, found);
    let is_output = chain.iter().any(|c| {
        let d = c.def(ctx);
        d.name.id.as_str() == "ModelOutput" || pyfacts::base_names(d).iter().any(|b| b.ends_with("ModelOutput"))
    });
    if !is_output {
        return None;
    }
    for (i, c) in chain.iter().enumerate() {
        let def = c.def(ctx);
        match class_doc(c.file(ctx), def) {
            ClassDoc::Text(doc) => {
                return if documents_fields(&doc) {
                    None
                } else if i == 0 {
                    Some(format!("the docstring of `{name}` documents no fields (no `name (type): ...` lines)"))
                } else {
                    Some(format!(
                        "`{name}` has no docstring and the one it falls back to (`{}`) documents no fields",
                        def.name.id
                    ))
                };
            }
            ClassDoc::Unknown => return None,
            ClassDoc::Missing if is_dataclass(def) => {
                return Some(if i == 0 {
                    format!("`{name}` is a `@dataclass` without a docstring (its automatic one documents no fields)")
                } else {
                    format!("`{name}` falls back to `{}`, a `@dataclass` without a docstring", def.name.id)
                });
            }
            ClassDoc::Missing => {}
        }
    }
    Some(format!("neither `{name}` nor its bases have a docstring"))
}

/// Argument names transformers documents for every model (`ModelArgs`),
/// read once per run.
fn model_args<'a>(ctx: &LintContext<'a>) -> &'a [String] {
    ctx.shared.memo.model_args.get_or_init(|| {
        match ctx.shared.pipeline.search.find_module("transformers.utils.auto_docstring") {
            Ok(source) => class_attributes(&source.text, &["ModelArgs", "ImageProcessorArgs"]),
            Err(_) => Vec::new(),
        }
    })
}

/// Names assigned at the first indentation level of top-level classes
/// `classes` (`    labels = {...}`), read from the text: the file is large
/// and only these lines matter.
pub fn class_attributes(text: &str, classes: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !line.starts_with([' ', '\t']) && !line.trim().is_empty() {
            inside = classes.iter().any(|c| {
                line.strip_prefix("class ")
                    .and_then(|rest| rest.strip_prefix(c))
                    .is_some_and(|rest| rest.starts_with([':', '(']))
            });
            continue;
        }
        let Some(rest) = line.strip_prefix("    ") else { continue };
        if !inside || rest.starts_with([' ', '\t']) {
            continue;
        }
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if end > 0 && rest[end..].trim_start().starts_with('=') && !rest[end..].trim_start().starts_with("==") {
            out.push(rest[..end].to_string());
        }
    }
    out
}

fn is_auto_docstring(method: &StmtFunctionDef) -> bool {
    method.decorator_list.iter().any(|d| facts::decorator_ident(d) == Some("auto_docstring"))
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for m in patched::methods(ctx) {
        if !is_auto_docstring(m.method) {
            continue;
        }
        let doc = facts::docstring(&m.method.body).unwrap_or_default();
        let qual = m.qualname();
        if let Some(returns) = &m.method.returns
            && !has_returns_section(doc)
        {
            for name in annotation_names(returns) {
                if let Some(why) = return_class_problem(ctx, &name) {
                    let d = RULE
                        .diagnostic(format!(
                            "`{qual}` keeps `@auto_docstring` and is annotated to return `{name}`, but {why}: importing the generated module raises `ValueError`"
                        ))
                        .help(format!(
                            "give `{name}` a docstring with an `Args:` section listing its fields, or add a `Returns:` section to the method's docstring"
                        ));
                    out.push(ctx.at_generated(d, returns.start(), m.registered_at.as_ref()));
                }
            }
        }
        // Parameters the replacement adds to the upstream signature.
        let Some(upstream_params) =
            patched::with_upstream_method(ctx, m.class.name.id.as_str(), m.method.name.id.as_str(), |f| {
                pyfacts::param_names(&f.parameters).into_iter().map(str::to_string).collect::<Vec<String>>()
            })
        else {
            continue;
        };
        let documented = documented_names(doc);
        let p = &m.method.parameters;
        let named = p.posonlyargs.iter().chain(&p.args).chain(&p.kwonlyargs).map(|p| &p.parameter);
        let mut undocumented: Vec<&ruff_python_ast::Parameter> = Vec::new();
        for param in named {
            let name = param.name.id.as_str();
            if name == "self"
                || name.starts_with('_')
                || upstream_params.iter().any(|u| u == name)
                || documented.contains(&name)
                || model_args(ctx).iter().any(|k| k == name)
            {
                continue;
            }
            undocumented.push(param);
        }
        // One fix for the function: its docstring with every missing entry.
        let fix = if undocumented.is_empty() { None } else { docstring_fix(ctx, &qual, &undocumented) };
        // One finding per parameter: each points at its own line.
        for param in undocumented {
            let name = &param.name.id;
            let mut d = RULE
                .diagnostic(format!(
                    "`{qual}` keeps `@auto_docstring` and adds parameter `{name}`, which its docstring does not document: every import prints an `[ERROR] ... not documented` line"
                ))
                .help(format!(
                    "document it in the method's docstring (`{name} (`type`, *optional*):` and a description), or drop it if upstream no longer has it"
                ));
            // Noise on stdout, not a failure.
            d.severity = Severity::Warning;
            out.push(ctx.at_generated(d, param.start(), m.registered_at.as_ref()).with_fix(fix.clone()));
        }
    }
    out
}

/// The config function behind `qual` with an entry for each parameter of
/// `params` (named as in the generated method) in its docstring, created
/// when it has none.
fn docstring_fix(ctx: &LintContext, qual: &str, params: &[&ruff_python_ast::Parameter]) -> Option<Fix> {
    let origin = ctx.origin_named(qual)?;
    let file = ctx.shared.pipeline.loader.parse_file(&origin.config_path).ok()?;
    let func = pyfacts::function_on_line(&file, origin.config_line)?;
    let p = &func.parameters;
    let mut entries = Vec::new();
    for want in params {
        let name = want.name.id.as_str();
        // The config's own parameter (its annotation and default).
        let own =
            p.posonlyargs.iter().chain(&p.args).chain(&p.kwonlyargs).find(|q| q.parameter.name.id.as_str() == name)?;
        let kind = own.parameter.annotation.as_ref().map(|a| type_of(&file.text[a.range()]));
        entries.push(entry(name, kind.as_deref(), own.default.is_some()));
    }
    let names: Vec<String> = params.iter().map(|q| format!("`{}`", q.name.id)).collect();
    let message = format!("Document {} in the docstring", names.join(", "));
    let edit = match func.body.first() {
        Some(Stmt::Expr(e)) if matches!(&*e.value, Expr::StringLiteral(_)) => {
            let literal = &file.text[e.value.range()];
            TextEdit { range: e.value.range(), content: with_entries(literal, &entries)? }
        }
        first => {
            // A new docstring before the first statement, at its indentation.
            let first = first?;
            let line_start = file.line_start(file.line_of(first.start()));
            let indent = &file.text[line_start..first.start().to_usize()];
            if !indent.chars().all(char::is_whitespace) {
                return None;
            }
            let mut doc = String::from("r\"\"\"\n");
            for e in &entries {
                for l in e.lines() {
                    doc.push_str(&format!("{indent}{l}\n"));
                }
            }
            doc.push_str(&format!("{indent}\"\"\"\n{indent}"));
            TextEdit { range: ruff_text_size::TextRange::empty(first.start()), content: doc }
        }
    };
    Some(crate::fix::of_text(Applicability::Safe, message, &file.path, &file.text, &[edit]))
}

/// The type of a docstring entry from an annotation: `X | None` → `X`.
fn type_of(annotation: &str) -> String {
    let parts: Vec<&str> = annotation.split('|').map(str::trim).filter(|t| *t != "None").collect();
    let joined = parts.join(" | ");
    joined.strip_prefix("Optional[").and_then(|t| t.strip_suffix(']')).unwrap_or(&joined).to_string()
}

/// One entry as transformers writes them: `name (`type`, *optional*):`
/// then its description, indented four more (relative lines).
fn entry(name: &str, kind: Option<&str>, optional: bool) -> String {
    let mut head = String::new();
    if let Some(k) = kind {
        head.push_str(&format!("`{k}`"));
    }
    if optional {
        head.push_str(if head.is_empty() { "*optional*" } else { ", *optional*" });
    }
    let head = if head.is_empty() { format!("{name}:") } else { format!("{name} ({head}):") };
    format!("{head}\n    Kept by this patch; upstream's signature no longer has `{name}`.")
}

/// The docstring `literal` (its source text, quotes included) with
/// `entries` appended after its last documented entry, at that entry's
/// indentation (else under its `Args:` header, else at the indentation of
/// its closing quotes when they have a line of their own).
pub fn with_entries(literal: &str, entries: &[String]) -> Option<String> {
    let quote = ["\"\"\"", "'''"].into_iter().find(|q| literal.ends_with(q))?;
    let body = &literal[..literal.len() - 3];
    let lines: Vec<&str> = body.split('\n').collect();
    let last = *lines.last()?;
    let closing_own_line = lines.len() > 1 && last.trim().is_empty();
    let indent_of = |l: &str| l[..l.len() - l.trim_start().len()].to_string();
    let documented = (1..lines.len()).rfind(|&i| !documented_names(lines[i]).is_empty());
    let indent = match documented {
        Some(i) => indent_of(lines[i]),
        None => match lines.iter().find(|l| l.trim() == "Args:") {
            Some(args) => format!("{}    ", indent_of(args)),
            None if closing_own_line => last.to_string(),
            None => return None,
        },
    };
    let mut block = String::new();
    for e in entries {
        for l in e.lines() {
            block.push_str(&format!("{indent}{l}\n"));
        }
    }
    if closing_own_line {
        let keep = &body[..body.len() - last.len()];
        Some(format!("{keep}{block}{last}{quote}"))
    } else {
        let close = indent.get(..indent.len().saturating_sub(4)).unwrap_or("");
        Some(format!("{}\n{block}{close}{quote}", body.trim_end()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_join_the_docstring_in_its_style() {
        let doc = "r\"\"\"\n    labels (`torch.LongTensor`, *optional*):\n        The labels.\n    \"\"\"";
        let e = entry("cache_position", Some("torch.LongTensor"), true);
        let fixed = with_entries(doc, &[e]).unwrap();
        assert_eq!(
            fixed,
            "r\"\"\"\n    labels (`torch.LongTensor`, *optional*):\n        The labels.\n    cache_position (`torch.LongTensor`, *optional*):\n        Kept by this patch; upstream's signature no longer has `cache_position`.\n    \"\"\""
        );
        assert_eq!(documented_names(&fixed), ["labels", "cache_position"]);
        let args = "\"\"\"\n    Forward.\n\n    Args:\n    \"\"\"";
        assert!(with_entries(args, &[entry("x", None, false)]).unwrap().contains("\n        x:\n"));
        assert_eq!(type_of("Optional[torch.Tensor]"), "torch.Tensor");
        assert_eq!(type_of("torch.Tensor | None"), "torch.Tensor");
    }

    use crate::pyfacts::parsed as parse;

    #[test]
    fn documented_fields_as_transformers_parses_them() {
        assert!(documents_fields(
            "\n    Args:\n        loss (`torch.FloatTensor`, *optional*):\n            The loss.\n"
        ));
        assert!(documents_fields("r\"\"\"\npast_key_values (`Cache`, *optional*, returned when x):\n  y\n"));
        assert!(!documents_fields("MyOutput(loss: torch.Tensor | None = None, logits: torch.Tensor = None)"));
        assert!(!documents_fields("Per-token outputs of the fused path."));
        assert_eq!(documented_names("x (`int`):\n  d\nmode (`str`, *optional*):\n"), vec!["x", "mode"]);
    }

    #[test]
    fn class_doc_reads_docstrings_and_doc_assignments() {
        let f = parse(
            "_ARGS = \"\"\"\n    Args:\n        aux (`X`):\n            d\n\"\"\"\n\
class A:\n    \"\"\"Doc.\"\"\"\n\
class B:\n    __doc__ = \"B + aux.\" + _ARGS\n\
class C:\n    __doc__ = make_doc()\n\
class D:\n    x: int = 0\n",
        );
        let doc = |n: &str| class_doc(&f, pyfacts::class(f.body(), n).unwrap());
        assert_eq!(doc("A"), ClassDoc::Text("Doc.".into()));
        match doc("B") {
            ClassDoc::Text(t) => assert!(documents_fields(&t)),
            other => panic!("{other:?}"),
        }
        assert_eq!(doc("C"), ClassDoc::Unknown);
        assert_eq!(doc("D"), ClassDoc::Missing);
    }

    #[test]
    fn class_attributes_from_text() {
        let text = "class ModelArgs:\n    labels = {\n        \"description\": \"x\",\n    }\n    input_ids = {}\n\n    def f(self):\n        inner = 1\n\nclass ModelArgsExtra:\n    nope = 1\nclass ImageProcessorArgs(Base):\n    images = {}\nx = 1\n";
        assert_eq!(class_attributes(text, &["ModelArgs", "ImageProcessorArgs"]), ["labels", "input_ids", "images"]);
    }

    #[test]
    fn annotation_names_see_unions_and_strings() {
        let f = parse("def f() -> tuple | \"MyOut\" | None: pass\n");
        let Stmt::FunctionDef(fd) = &f.body()[0] else { panic!() };
        assert_eq!(annotation_names(fd.returns.as_ref().unwrap()), vec!["tuple", "MyOut"]);
    }
}
