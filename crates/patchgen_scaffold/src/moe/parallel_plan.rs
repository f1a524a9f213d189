//! The template's expert-parallel plan (`parallel_plan.py`) re-aimed at the
//! new model: its keys (the fused expert parameters' FQN patterns) found in
//! the text and replaced, everything else kept as written.

use std::fmt::Write;

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

/// The string keys of the plan dict of a `parallel_plan.py` (the first
/// dict literal whose keys are strings and values calls), the dict's byte
/// range and the text of its first value (`Shard(0)`).
pub fn plan_keys(text: &str) -> Option<(Vec<String>, std::ops::Range<usize>, String)> {
    let parsed = ruff_python_parser::parse_module(text).ok()?;
    let mut found = None;
    fn visit<'a>(body: &'a [Stmt], found: &mut Option<&'a ruff_python_ast::ExprDict>) {
        for s in body {
            if found.is_some() {
                return;
            }
            match s {
                Stmt::FunctionDef(f) => visit(&f.body, found),
                Stmt::Assign(a) => {
                    if let Expr::Dict(d) = &*a.value
                        && !d.items.is_empty()
                        && d.items
                            .iter()
                            .all(|i| matches!(i.key, Some(Expr::StringLiteral(_))) && matches!(i.value, Expr::Call(_)))
                    {
                        *found = Some(d);
                    }
                }
                _ => {}
            }
        }
    }
    visit(&parsed.syntax().body, &mut found);
    let d = found?;
    let keys = d
        .items
        .iter()
        .filter_map(|i| match &i.key {
            Some(Expr::StringLiteral(s)) => Some(s.value.to_str().to_string()),
            _ => None,
        })
        .collect();
    let range: std::ops::Range<usize> = d.start().into()..d.end().into();
    let value = text[d.items[0].value.range()].to_string();
    Some((keys, range, value))
}

/// The new model's `parallel_plan.py`: the template's, with its plan dict
/// listing this model's fused expert parameters.
pub fn parallel_plan_py(template: &str, keys: &[String]) -> Option<String> {
    let (_, range, value) = plan_keys(template)?;
    let mut dict = String::from("{\n");
    // The dict's indentation: the column of the line it starts on, plus four.
    let line_start = template[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let indent: String = template[line_start..].chars().take_while(|c| *c == ' ').collect();
    for k in keys {
        let _ = writeln!(dict, "{indent}    {}: {value},", crate::render::py_str(k));
    }
    let _ = write!(dict, "{indent}}}");
    Some(format!("{}{dict}{}", &template[..range.start], &template[range.end..]))
}
