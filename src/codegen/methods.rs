//! Method overrides: preparing the replacement's text and splicing it into
//! the class segment (the reference's `_apply_method_override` and
//! `_replace_method_body_with_preserved`).

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use super::text::{apply_name_map, indent_preserved_source, indent_width, py_replace, split_leading_comments, strip_patch_decorators};
use super::CodegenError;
use crate::config::plan::Patch;
use crate::config::source::{keyword_line, ParsedFile};
use crate::pytext;

/// Whether any function is defined anywhere in the statements (`ast.walk`).
fn contains_function(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::FunctionDef(_) => true,
        Stmt::ClassDef(c) => contains_function(&c.body),
        Stmt::If(i) => contains_function(&i.body) || i.elif_else_clauses.iter().any(|c| contains_function(&c.body)),
        Stmt::For(f) => contains_function(&f.body) || contains_function(&f.orelse),
        Stmt::While(w) => contains_function(&w.body) || contains_function(&w.orelse),
        Stmt::With(w) => contains_function(&w.body),
        Stmt::Try(t) => {
            contains_function(&t.body)
                || t.handlers.iter().any(|h| {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    contains_function(&h.body)
                })
                || contains_function(&t.orelse)
                || contains_function(&t.finalbody)
        }
        Stmt::Match(m) => m.cases.iter().any(|c| contains_function(&c.body)),
        _ => false,
    })
}

/// `_apply_method_override`: the cleaned replacement source, or `None` when
/// the reference would not apply the override (no source, or the
/// dedented, name-mapped source does not parse as code with a function).
pub fn prepare_override(patch: &Patch, method_name: &str) -> Option<String> {
    let replacement = patch.replacement.as_ref()?;
    if replacement.source.is_empty() {
        return None;
    }
    let src = pytext::dedent(&replacement.source);
    let src = apply_name_map(&src, patch.name_map.as_deref());
    let mut cleaned = strip_patch_decorators(&src);
    if replacement.name != method_name {
        cleaned = py_replace(
            &cleaned,
            &format!("def {}(", replacement.name),
            &format!("def {method_name}("),
            Some(1),
        );
    }
    let parsed = ruff_python_parser::parse_module(&src).ok()?;
    if !contains_function(&parsed.syntax().body) {
        return None;
    }
    Some(cleaned)
}

fn is_empty_body_node(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Pass(_) => true,
        Stmt::Expr(e) => matches!(&*e.value, Expr::EllipsisLiteral(_)),
        _ => false,
    }
}

/// Python's `lst[a:b]` for non-negative bounds.
fn slice<'a>(lines: &[&'a str], a: usize, b: usize) -> Vec<String> {
    let b = b.min(lines.len());
    if a >= b {
        return Vec::new();
    }
    lines[a..b].iter().map(|s| s.to_string()).collect()
}

/// `_replace_method_body_with_preserved`.
pub fn replace_method(class_source: &str, method_name: &str, preserved: &str) -> Result<String, CodegenError> {
    let Ok(file) = ParsedFile::parse(Default::default(), class_source) else {
        return Ok(class_source.to_string());
    };
    // `ast.walk` is breadth-first: the first class is a top-level one.
    let Some(class_def) = file.body().iter().find_map(|s| if let Stmt::ClassDef(c) = s { Some(c) } else { None }) else {
        return Ok(class_source.to_string());
    };
    let source_lines = pytext::splitlines(class_source);
    let line = |i: usize| -> Result<&str, CodegenError> {
        source_lines.get(i).copied().ok_or_else(|| CodegenError {
            message: format!("line {} of the class segment is out of range (upstream line numbering and str.splitlines disagree)", i + 1),
            help: Some("the upstream file contains form feeds or other characters Python treats as line breaks".into()),
        })
    };
    let class_start = keyword_line(&file, class_def.name.start()) - 1;
    let class_indent = source_lines.get(class_start).map(|l| indent_width(l)).unwrap_or(0);

    let method = class_def.body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.id.as_str() == method_name => Some(f),
        _ => None,
    });
    if let Some(method) = method {
        let method_start = keyword_line(&file, method.name.start()) - 1;
        let method_end = file.line_of(method.end());
        let method_indent = match source_lines.get(method_start) {
            Some(l) => indent_width(l),
            None => class_indent + 4,
        };
        let (leading, def_source) = split_leading_comments(preserved);
        let indented_leading = if leading.is_empty() {
            Vec::new()
        } else {
            indent_preserved_source(&leading.join("\n"), method_indent)
        };
        let indented_def = indent_preserved_source(&def_source, method_indent);
        let decorator_start = method
            .decorator_list
            .iter()
            .map(|d| file.line_of(d.expression.start()) - 1)
            .min()
            .unwrap_or(method_start);
        let mut out = slice(&source_lines, 0, decorator_start);
        out.extend(indented_leading);
        out.extend(slice(&source_lines, decorator_start, method_start));
        out.extend(indented_def);
        out.extend(slice(&source_lines, method_end, source_lines.len()));
        return Ok(out.join("\n"));
    }

    let method_indent = class_indent + 4;
    let indented = indent_preserved_source(preserved, method_indent);
    if let Some(empty) = class_def.body.iter().find(|s| is_empty_body_node(s)) {
        let empty_start = file.line_of(empty.start()) - 1;
        let empty_end = file.line_of(empty.end());
        let header = line(empty_start)?;
        let colon = header.rfind(':');
        let after = match colon {
            Some(i) => header[i + 1..].split('#').next().unwrap_or(""),
            None => "",
        };
        let mut out = slice(&source_lines, 0, empty_start);
        if colon.is_some() && matches!(pytext::strip(after), "pass" | "...") {
            out.push(pytext::rstrip(&header[..colon.expect("checked") + 1]).to_string());
        }
        out.extend(indented);
        out.extend(slice(&source_lines, empty_end, source_lines.len()));
        return Ok(out.join("\n"));
    }
    let mut out: Vec<String> = source_lines.iter().map(|s| s.to_string()).collect();
    if out.last().is_some_and(|l| !pytext::strip(l).is_empty()) {
        out.push(String::new());
    }
    out.extend(indented);
    Ok(out.join("\n"))
}
