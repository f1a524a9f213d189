//! PG102 orphaned-override: an `override_method` that injects a method upstream does not have and nothing calls.
//!
//! ## What it does
//! For each `override_method("Class.method")` whose class exists upstream
//! but neither the class nor any base it inherits from (followed through the
//! upstream package) defines `method`, checks whether anything in the
//! generated module refers to `method` (`self.method(…)`, `obj.method`, a
//! bare `method`). If nothing does and the name is not a known framework
//! hook — methods the training runtime calls on the model
//! (`[tool.patchgen.lint] framework-hooks`, default `dummy_forward`,
//! `get_position_id_func`, `get_parallel_plan`, …) — the override is
//! reported. Dunder methods and methods of `torch.nn.Module` (`forward`,
//! `extra_repr`, …) on classes whose bases leave the upstream package are
//! not reported.
//!
//! ## Why is this bad?
//! patchgen injects an override whose method is missing, so a method that
//! upstream removed or renamed keeps its patched body in the generated file,
//! but no code path reaches it any more: the behaviour the patch was written
//! for silently stops (transformers 5.16 removed
//! `Qwen3_5TextModel._update_linear_attn_mask`; the forward no longer calls it).
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3_5TextModel._update_linear_attn_mask")
//! def _update_linear_attn_mask(self, attention_mask, cache_position):
//!     ...
//! ```
//!
//! ## Use instead
//! Move the patched logic to the method that now does the work upstream (here
//! the forward's mask construction), or drop the override. A method the
//! runtime calls by name belongs in `extend-framework-hooks`.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::super::{LintContext, Rule};
use patchgen_config::plan::PatchType;
use patchgen_diagnostics::{Diagnostic, Severity};

pub const RULE: Rule = Rule {
    code: "PG102",
    name: "orphaned-override",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg102_orphaned_override.rs"),
    check,
    check_project: None,
};

/// `torch.nn.Module` methods: overriding them is meaningful even where the
/// class's own upstream source does not show them.
const NN_MODULE_METHODS: &[&str] = &[
    "forward",
    "extra_repr",
    "reset_parameters",
    "_init_weights",
    "_apply",
    "train",
    "eval",
    "state_dict",
    "load_state_dict",
    "_load_from_state_dict",
    "_save_to_state_dict",
    "named_parameters",
    "parameters",
    "to",
    "half",
    "float",
    "cuda",
];

/// References to `name` (as an attribute or a bare name) outside `skip`.
struct Refs<'n> {
    name: &'n str,
    skip: TextRange,
    found: bool,
}

impl<'a> Visitor<'a> for Refs<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.found || self.skip.contains_range(stmt.range()) {
            return;
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found {
            return;
        }
        match expr {
            Expr::Attribute(a) if a.attr.id.as_str() == self.name => self.found = true,
            Expr::Name(n) if n.id.as_str() == self.name => self.found = true,
            Expr::StringLiteral(s) if s.value.to_str() == self.name => self.found = true,
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// A method of `class` whose name is within two edits of `name` (a typo).
fn similar_method<'c>(class: &'c ruff_python_ast::StmtClassDef, name: &str) -> Option<&'c str> {
    class
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::FunctionDef(f) => Some(f.name.id.as_str()),
            _ => None,
        })
        .map(|m| (edit_distance(m, name), m))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, m)| m)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let hooks = &ctx.settings().hooks;
    for (i, p) in ctx.plan.patches.iter().enumerate() {
        if p.patch_type != PatchType::MethodOverride {
            continue;
        }
        if ctx.plan.patches[i + 1..].iter().any(|q| q.patch_type == p.patch_type && q.target == p.target) {
            continue;
        }
        let Some((class, method)) = p.target.split_once('.') else {
            continue;
        };
        if hooks.iter().any(|h| h == method) || (method.starts_with("__") && method.ends_with("__")) {
            continue;
        }
        let Some(upstream_class) = ctx.upstream_class_def(class) else {
            continue;
        }; // PG101's case
        let own = upstream_class.body.iter().any(|s| matches!(s, Stmt::FunctionDef(f) if f.name.id.as_str() == method));
        if own {
            continue;
        }
        if let Some(class_ref) = ctx.upstream_class(class) {
            let lineage = ctx.shared.lineage(&class_ref);
            if lineage.method(method).is_some() {
                continue; // overrides an inherited method
            }
            if !lineage.unresolved.is_empty() && NN_MODULE_METHODS.contains(&method) {
                continue;
            }
        }
        // The injected method in the generated class, and references elsewhere.
        let Some(gen_class) = ctx.generated_class(class) else {
            continue;
        };
        let injected = gen_class.body.iter().rev().find_map(|s| match s {
            Stmt::FunctionDef(f) if f.name.id.as_str() == method => Some(f),
            _ => None,
        });
        let skip = injected.map_or(TextRange::default(), |f| f.range());
        let mut refs = Refs { name: method, skip, found: false };
        refs.visit_body(ctx.generated.body());
        if refs.found {
            continue;
        }
        let mut d = RULE
            .diagnostic(format!(
                "override_method(\"{}\") injects `{method}` into `{class}`: neither `{class}` nor its bases in `{}` define it, and nothing in the generated module calls it, so the patch is dead code",
                p.target, ctx.plan.source_module
            ))
            .at(ctx.at_target(p))
            .help(match similar_method(upstream_class, method) {
                Some(near) => format!("did you mean `{class}.{near}`? Otherwise move the patched logic to the method upstream now uses, or drop the override"),
                None => "move the patched logic to the method upstream now uses, or drop the override; if the runtime calls it by name, add it to `extend-framework-hooks` in [tool.patchgen.lint]".to_string(),
            });
        if let Some(f) = injected {
            d = d.related(ctx.generated_location(ctx.generated.line_of(f.start())), "injected here");
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn edit_distance() {
        assert_eq!(super::edit_distance("forward", "forwad"), 1);
        assert_eq!(super::edit_distance("forward", "forwrad"), 2);
        assert_eq!(super::edit_distance("", "abc"), 3);
        assert_eq!(super::edit_distance("kitten", "sitting"), 3);
    }
}
