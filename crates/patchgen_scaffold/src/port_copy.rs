//! A template patch whose upstream target is not the new model's (renamed):
//! copied into the new config and *ported*, not reused. The port is the
//! three-way merge `patchgen bump` runs (`patchgen_core::port`): the
//! template's patch (renamed by the reuse's `name_map`), the template's
//! upstream target (renamed) as the base, the new model's upstream target
//! as theirs. A clean port is written as it merged; where the merge
//! conflicts, the sibling's edits are kept and each conflict is marked with
//! `# TODO(patchgen new): …` comment lines showing the new model's upstream
//! lines there — the copy is then listed for review.
//!
//! The copy is renamed as copied helpers are (the `def` name's model
//! prefix too), gets PG301's fix when the template's causal-LM forward
//! needs it (`pg301_copy`), and PG303's docstring entries for the
//! parameters it keeps beyond the new upstream signature
//! (`docstring_args`).

use patchgen_core::codegen::text::{split_leading_comments, strip_patch_decorators};
use patchgen_core::port::{PortRequest, port};
use patchgen_python::merge::Labels;

use super::pg301_copy::{self, Copied};
use super::retarget::{Carried, Differs};

/// The ported copy of `c` (`from`: `<template config>:<line>`; `models`:
/// the template's and the new HF model names; `upstream_params`: the new
/// target's parameter names when it is an `@auto_docstring` method).
pub fn ported(
    c: &Carried,
    d: &Differs,
    from: &str,
    models: (&str, &str),
    upstream_params: Option<&[String]>,
) -> Copied {
    let target_name = c.target.rsplit('.').next().unwrap_or(&c.target);
    let template_label = format!("{} upstream", d.template_target);
    let new_label = format!("{} upstream", c.target);
    // Docstrings are not code (the sameness test ignores them): merged
    // without them, a docstring the sibling's patch dropped is no conflict.
    let (old, new) = (without_docstrings(&d.old), without_docstrings(&d.new));
    let p = port(&PortRequest {
        patch: &c.source,
        patch_name: &c.import_name,
        old: &old,
        new: &new,
        target_name,
        labels: Some(Labels { ours: "sibling's patch", base: &template_label, theirs: &new_label }),
    });
    let conflicts = p.conflicts();
    let carried_hunks = p.carried();
    let (_, code) = split_leading_comments(&p.text);
    let mut function = patchgen_python::pytext::dedent(&strip_patch_decorators(&code));
    if conflicts > 0 {
        function = todo_conflicts(&function, &c.target);
    }
    let mut fixes = Vec::new();
    if let Some((fixed, _)) = pg301_copy::pg301_fixed(c, &function) {
        function = fixed;
        fixes.push("PG301 fixed (the loss receives the sliced hidden states, as upstream)");
    }
    if let Some(params) = upstream_params {
        let kept: Vec<String> = signature_params(&function).into_iter().filter(|n| !params.contains(n)).collect();
        if let Some(documented) = super::docstring_args::document_params(&function, &kept) {
            function = documented;
            fixes.push("PG303: docstring entries for the parameters kept beyond the upstream signature");
        }
    }
    let name = pg301_copy::rename_def(&c.import_name, models);
    let function = function.replacen(&format!("def {}(", c.import_name), &format!("def {name}("), 1);
    let outcome = if conflicts == 0 {
        format!("ported cleanly ({carried_hunks} upstream hunk(s) carried)")
    } else {
        format!(
            "ported with {conflicts} conflict(s) ({carried_hunks} hunk(s) carried): the sibling's edits are kept, each conflict is marked `TODO(patchgen new)` with this model's upstream lines — review"
        )
    };
    let mut note = format!(
        "patchgen new: copied from {from} and ported, not reused: `{}` upstream differs from the template's `{}` (first at {}); {outcome}",
        c.target, d.template_target, d.first_difference
    );
    for f in &fixes {
        note.push_str(&format!("; {f}"));
    }
    note.push('.');
    Copied { from: from.to_string(), name, source: function.trim_end().to_string(), note, conflicts }
}

/// `text` without the lines of its docstrings (a definition's first
/// statement when it is a string literal, nested definitions too); the
/// text itself when it does not parse.
fn without_docstrings(text: &str) -> String {
    use ruff_python_ast::{Expr, Stmt};
    use ruff_text_size::Ranged;
    let Ok(file) = patchgen_python::pysource::ParsedFile::parse("<target>".into(), text) else {
        return text.to_string();
    };
    let mut drop: Vec<(usize, usize)> = Vec::new();
    fn walk(body: &[Stmt], scope: bool, file: &patchgen_python::pysource::ParsedFile, drop: &mut Vec<(usize, usize)>) {
        if scope
            && let Some(Stmt::Expr(e)) = body.first()
            && matches!(*e.value, Expr::StringLiteral(_))
            && body.len() > 1
        {
            drop.push((file.line_of(e.start()), file.line_of(e.end())));
        }
        for s in body {
            match s {
                Stmt::FunctionDef(f) => walk(&f.body, true, file, drop),
                Stmt::ClassDef(c) => walk(&c.body, true, file, drop),
                _ => {}
            }
        }
    }
    walk(file.body(), false, &file, &mut drop);
    text.split_inclusive('\n')
        .enumerate()
        .filter(|(i, _)| !drop.iter().any(|(a, b)| (*a..=*b).contains(&(i + 1))))
        .map(|(_, l)| l)
        .collect()
}

/// The parameter names of a method target (`Class.method`) defined in
/// `file` when it is decorated `@auto_docstring` (PG303's contract):
/// `None` otherwise, or when the class inherits the method.
pub fn auto_docstring_params(file: &patchgen_python::pysource::ParsedFile, target: &str) -> Option<Vec<String>> {
    use patchgen_python::pysource::{defs, signature};
    let (class, method) = target.split_once('.')?;
    let (_, c) = defs::class(file.body(), class)?;
    let f = defs::method(c, method)?;
    f.decorator_list
        .iter()
        .any(|d| signature::decorator_name(d).is_some_and(|n| n.rsplit('.').next() == Some("auto_docstring")))
        .then(|| f.parameters.iter().map(|p| p.name().id.to_string()).collect())
}

/// The parameter names of a function's text.
pub fn signature_params(function: &str) -> Vec<String> {
    let Ok(parsed) = ruff_python_parser::parse_module(function) else { return Vec::new() };
    match parsed.syntax().body.first() {
        Some(ruff_python_ast::Stmt::FunctionDef(f)) => {
            f.parameters.iter_non_variadic_params().map(|p| p.parameter.name.id.to_string()).collect()
        }
        _ => Vec::new(),
    }
}

/// Replace each diff3 conflict of `text` by the sibling's side ("ours"),
/// preceded by `# TODO(patchgen new): …` comment lines quoting the new
/// model's upstream side, indented as the sibling's first line there.
fn todo_conflicts(text: &str, target: &str) -> String {
    #[derive(PartialEq)]
    enum Part {
        Outside,
        Ours,
        Base,
        Theirs,
    }
    let mut out = String::new();
    let mut part = Part::Outside;
    let (mut ours, mut theirs): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        match part {
            Part::Outside if bare.starts_with("<<<<<<<") => part = Part::Ours,
            Part::Ours if bare.starts_with("|||||||") => part = Part::Base,
            Part::Ours | Part::Base if bare.starts_with("=======") => part = Part::Theirs,
            Part::Theirs if bare.starts_with(">>>>>>>") => {
                let indent: String = ours
                    .iter()
                    .chain(&theirs)
                    .find(|l| !l.trim().is_empty())
                    .map(|l| l.chars().take_while(|c| c.is_whitespace() && *c != '\n').collect())
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{indent}# TODO(patchgen new): conflict with {target} upstream; the sibling's lines are kept below, upstream has here:\n"
                ));
                if theirs.is_empty() {
                    out.push_str(&format!("{indent}#   (nothing)\n"));
                }
                for t in &theirs {
                    out.push_str(&format!(
                        "{indent}#   {}\n",
                        t.trim_end().strip_prefix(indent.as_str()).unwrap_or(t.trim())
                    ));
                }
                for o in &ours {
                    out.push_str(o);
                }
                ours.clear();
                theirs.clear();
                part = Part::Outside;
            }
            Part::Outside => out.push_str(line),
            Part::Ours => ours.push(line),
            Part::Base => {}
            Part::Theirs => theirs.push(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_keeps_ours_under_a_todo_quoting_theirs() {
        let merged = "def f(x):\n<<<<<<< sibling's patch\n    y = g(x)\n||||||| base\n    y = x\n=======\n    y = x * 2\n>>>>>>> new\n    return y\n";
        assert_eq!(
            todo_conflicts(merged, "A.f"),
            "def f(x):\n    # TODO(patchgen new): conflict with A.f upstream; the sibling's lines are kept below, upstream has here:\n    #   y = x * 2\n    y = g(x)\n    return y\n"
        );
    }
}
