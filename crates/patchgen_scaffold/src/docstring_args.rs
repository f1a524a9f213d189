//! PG303's contract written into a function `new` copies: a replacement of
//! an `@auto_docstring` method documents every parameter it adds to the
//! upstream signature (transformers prints "`x` is part of …'s signature,
//! but not documented" at every import otherwise). The template's forward
//! keeps `cache_position`, which transformers 5.9 removed from the causal-LM
//! signatures: the copy gets a docstring entry for it, in transformers'
//! style (`name (`type`, *optional*):` and an indented description), added
//! to the function's docstring or in a new `r"""…"""` one.
//!
//! Pure text in, text out; the documented names are read as PG303 reads
//! them (`patchgen_lint::docstring`).

use patchgen_lint::docstring::documented_names;
use patchgen_python::pysource::ParsedFile;
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

/// `source` (a dedented `def`) with an `Args`-style entry for each of
/// `params` its docstring does not document yet; `None` when nothing is to
/// add or the text is not one function.
pub fn document_params(source: &str, params: &[String]) -> Option<String> {
    let file = ParsedFile::parse("<copy>".into(), source).ok()?;
    let [Stmt::FunctionDef(f)] = file.body() else { return None };
    let first = f.body.first()?;
    let existing = match first {
        Stmt::Expr(e) => match &*e.value {
            Expr::StringLiteral(s) => Some((s.value.to_str().to_string(), e.range())),
            _ => None,
        },
        _ => None,
    };
    let documented: Vec<&str> = existing.as_ref().map(|(d, _)| documented_names(d)).unwrap_or_default();
    let annotations = |name: &str| -> String {
        let p = f.parameters.iter_non_variadic_params().find(|p| p.parameter.name.id.as_str() == name);
        let ann = p.and_then(|p| p.parameter.annotation.as_ref()).map(|a| file.text[a.range()].to_string());
        let ty = ann
            .as_deref()
            .map(|a| a.split('|').next().unwrap_or(a).trim().to_string())
            .filter(|t| !t.is_empty() && t != "None");
        let optional = p.is_some_and(|p| p.default.is_some());
        match (ty, optional) {
            (Some(t), true) => format!("(`{t}`, *optional*)"),
            (Some(t), false) => format!("(`{t}`)"),
            (None, true) => "(*optional*)".to_string(),
            (None, false) => String::new(),
        }
    };
    let todo: Vec<&String> = params.iter().filter(|p| !documented.contains(&p.as_str())).collect();
    if todo.is_empty() {
        return None;
    }
    let indent: String = {
        let line_start = file.line_start(file.line_of(first.start()));
        file.text[line_start..usize::from(first.start())].to_string()
    };
    let mut entries = String::new();
    for p in &todo {
        let ty = annotations(p);
        let sep = if ty.is_empty() { "" } else { " " };
        entries.push_str(&format!(
            "{indent}{p}{sep}{ty}:\n{indent}    Kept from the sibling's replacement; not in this model's upstream signature.\n"
        ));
    }
    let mut out = String::new();
    match existing {
        Some((_, range)) => {
            // Before the closing quotes of the existing docstring.
            let text = &file.text[range];
            let quote = if text.ends_with("\"\"\"") || text.ends_with("'''") { 3 } else { return None };
            let close = usize::from(range.end()) - quote;
            let before = file.text[..close].trim_end_matches([' ', '\t']);
            out.push_str(before);
            if !before.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&entries);
            out.push_str(&indent);
            out.push_str(&file.text[close..]);
        }
        None => {
            let at = file.line_start(file.line_of(first.start()));
            out.push_str(&file.text[..at]);
            out.push_str(&format!("{indent}r\"\"\"\n{entries}{indent}\"\"\"\n"));
            out.push_str(&file.text[at..]);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_docstring_in_transformers_style() {
        let src = "def f(\n    self,\n    x: torch.Tensor | None = None,\n    cache_position: torch.LongTensor | None = None,\n    **kwargs,\n):\n    return x\n";
        let out = document_params(src, &["cache_position".into()]).unwrap();
        assert_eq!(
            out,
            "def f(\n    self,\n    x: torch.Tensor | None = None,\n    cache_position: torch.LongTensor | None = None,\n    **kwargs,\n):\n    r\"\"\"\n    cache_position (`torch.LongTensor`, *optional*):\n        Kept from the sibling's replacement; not in this model's upstream signature.\n    \"\"\"\n    return x\n"
        );
    }

    #[test]
    fn entries_join_an_existing_docstring_once() {
        let src = "def f(self, a=None, b=None):\n    r\"\"\"\n    a (`int`, *optional*):\n        A.\n    \"\"\"\n    return a\n";
        let out = document_params(src, &["a".into(), "b".into()]).unwrap();
        assert_eq!(
            out,
            "def f(self, a=None, b=None):\n    r\"\"\"\n    a (`int`, *optional*):\n        A.\n    b (*optional*):\n        Kept from the sibling's replacement; not in this model's upstream signature.\n    \"\"\"\n    return a\n"
        );
        assert_eq!(document_params(&out, &["a".into(), "b".into()]), None);
    }
}
