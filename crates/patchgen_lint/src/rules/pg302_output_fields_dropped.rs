//! PG302 output-fields-dropped: a hand-built `…Output…(…)` in a patched method leaves out fields the upstream method fills.
//!
//! ## What it does
//! For every method a config writes (an `override_method` replacement or a
//! method of a `replace_class` replacement), finds the output dataclasses it
//! constructs (`CausalLMOutputWithLogProbs(...)`, `MoeModelOutputWithPast(...)`)
//! and compares the keyword arguments with what the upstream method passes
//! to its own output constructor. A field the constructed class has, that
//! upstream fills (explicitly, or through `**outputs`), and that the patched
//! call neither passes nor sets afterwards (`out.aux_loss = ...`) is
//! reported. The class is resolved where the generated module gets it from
//! (defined there, `transformers.*`, or a first-party module), bases
//! included, so a `name_map` that turns a dense output class into an MoE one
//! with more fields (`router_logits`) is seen with the MoE fields.
//!
//! ## Why is this bad?
//! Nothing fails: callers get `None` for `hidden_states` or `attentions`,
//! and an MoE model whose `router_logits` are dropped computes an auxiliary
//! load-balancing loss of zero, so the router collapses over a long run.
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3ForCausalLM.forward")
//! def forward(self, input_ids=None, labels=None, **kwargs):
//!     outputs = self.model(input_ids, **kwargs)
//!     ...
//!     return CausalLMOutputWithLogProbs(loss=loss, logits=logits, past_key_values=outputs.past_key_values)
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3ForCausalLM.forward")
//! def forward(self, input_ids=None, labels=None, **kwargs):
//!     outputs = self.model(input_ids, **kwargs)
//!     ...
//!     return CausalLMOutputWithLogProbs(
//!         loss=loss,
//!         logits=logits,
//!         past_key_values=outputs.past_key_values,
//!         hidden_states=outputs.hidden_states,
//!         attentions=outputs.attentions,
//!     )
//! ```

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::Ranged;

use super::super::{LintContext, Rule, patched};
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_python::semantic::walk::{self, Scope};

pub const RULE: Rule = Rule {
    code: "PG302",
    name: "output-fields-dropped",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg302_output_fields_dropped.rs"),
    check,
    check_project: None,
};

/// Whether a callee name is an output dataclass by naming convention.
pub fn is_output_name(name: &str) -> bool {
    name.contains("Output") && name.starts_with(|c: char| c.is_ascii_uppercase())
}

/// The output constructions of a function body: `(class name, call)`.
pub fn output_calls(body: &[Stmt]) -> Vec<(&str, &ExprCall)> {
    let mut out = Vec::new();
    for expr in walk::expressions(body, Scope::Own) {
        if let Expr::Call(call) = expr
            && let Expr::Name(n) = &*call.func
            && is_output_name(n.id.as_str())
        {
            out.push((n.id.as_str(), call));
        }
    }
    out
}

/// The fields an upstream output call fills: its keyword names, or `None`
/// when it splats (`**outputs`: everything the class has).
pub fn filled(call: &ExprCall) -> Option<Vec<&str>> {
    if call.arguments.keywords.iter().any(|k| k.arg.is_none()) || !call.arguments.args.is_empty() {
        return None;
    }
    Some(call.arguments.keywords.iter().filter_map(|k| k.arg.as_ref().map(|a| a.id.as_str())).collect())
}

/// Fields set after the construction: `x = Out(...)` then `x.f = ...` or
/// `x["f"] = ...` anywhere in the function.
pub fn set_later<'a>(func: &'a StmtFunctionDef, call: &ExprCall) -> Vec<&'a str> {
    let mut bound: Vec<&str> = Vec::new();
    walk::for_each_statement(&func.body, Scope::Own, |stmt| {
        if let Stmt::Assign(a) = stmt
            && a.value.range() == call.range()
        {
            for t in &a.targets {
                if let Expr::Name(n) = t {
                    bound.push(n.id.as_str());
                }
            }
        }
    });
    let mut out = Vec::new();
    if bound.is_empty() {
        return out;
    }
    walk::for_each_statement(&func.body, Scope::Own, |stmt| {
        let targets: Vec<&Expr> = match stmt {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AugAssign(a) => vec![&*a.target],
            Stmt::AnnAssign(a) => vec![&*a.target],
            _ => return,
        };
        for t in targets {
            match t {
                Expr::Attribute(at) if matches!(&*at.value, Expr::Name(n) if bound.contains(&n.id.as_str())) => {
                    out.push(at.attr.id.as_str());
                }
                Expr::Subscript(s) if matches!(&*s.value, Expr::Name(n) if bound.contains(&n.id.as_str())) => {
                    if let Expr::StringLiteral(lit) = &*s.slice {
                        out.push(lit.value.to_str());
                    }
                }
                _ => {}
            }
        }
    });
    out
}

/// The dataclass fields of an output class (annotated class-level names),
/// bases first, each once; `None` when the class cannot be found.
fn fields(ctx: &LintContext, class: &str) -> Option<Vec<String>> {
    let found = patched::resolve_class(ctx, class)?;
    let mut out: Vec<String> = Vec::new();
    for c in patched::lineage(ctx, found).iter().rev() {
        for stmt in &c.def(ctx).body {
            if let Stmt::AnnAssign(a) = stmt
                && let Expr::Name(n) = &*a.target
                && !out.iter().any(|f| f == n.id.as_str())
            {
                out.push(n.id.to_string());
            }
        }
    }
    Some(out)
}

/// Fields of an upstream output class, looked up in the upstream module.
fn upstream_fields(ctx: &LintContext, class: &str) -> Option<Vec<String>> {
    let c = ctx.upstream_class(class)?;
    let mut out: Vec<String> = Vec::new();
    for c in ctx.shared.lineage(&c).classes.iter().rev() {
        for stmt in &c.def().body {
            if let Stmt::AnnAssign(a) = stmt
                && let Expr::Name(n) = &*a.target
                && !out.iter().any(|f| f == n.id.as_str())
            {
                out.push(n.id.to_string());
            }
        }
    }
    Some(out)
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for m in patched::methods(ctx) {
        let calls = output_calls(&m.method.body);
        if calls.is_empty() {
            continue;
        }
        let class = m.class.name.id.as_str();
        let name = m.method.name.id.as_str();
        // What upstream fills, over all its output constructions.
        let upstream_filled = patched::with_upstream_method(ctx, class, name, |upstream_method| {
            let mut filled_names: Vec<String> = Vec::new();
            for (up_class, call) in output_calls(&upstream_method.body) {
                let names: Vec<String> = match filled(call) {
                    Some(names) => names.into_iter().map(str::to_string).collect(),
                    None => upstream_fields(ctx, up_class).unwrap_or_default(),
                };
                for n in names {
                    if !filled_names.contains(&n) {
                        filled_names.push(n);
                    }
                }
            }
            filled_names
        })
        .unwrap_or_default();
        if upstream_filled.is_empty() {
            continue;
        }
        for (built, call) in calls {
            let Some(passed) = filled(call) else { continue };
            let Some(fields) = fields(ctx, built) else {
                continue;
            };
            let later = set_later(m.method, call);
            let missing: Vec<&str> = fields
                .iter()
                .map(String::as_str)
                .filter(|f| upstream_filled.iter().any(|u| u == f) && !passed.contains(f) && !later.contains(f))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let list = missing.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
            let d = RULE
                .diagnostic(format!(
                    "`{}` builds `{built}` without {list}, which upstream `{class}.{name}` fills: callers get `None`",
                    m.qualname()
                ))
                .help(format!(
                    "pass {} (as upstream does, e.g. `hidden_states=outputs.hidden_states`)",
                    missing.iter().map(|f| format!("`{f}=`")).collect::<Vec<_>>().join(", ")
                ));
            out.push(ctx.at_generated(d, call.start(), m.registered_at.as_ref()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pyfacts::parsed as func;

    #[test]
    fn output_calls_and_filled_fields() {
        let f = func(
            "def forward(self):\n    o = helper(x)\n    out = MoeOutput(loss=l, logits=z)\n    out.aux_loss = a\n    out['router_logits'] = r\n    return BaseModelOutput(**o)\n",
        );
        let Stmt::FunctionDef(fd) = &f.body()[0] else { panic!() };
        let calls = output_calls(&fd.body);
        let names: Vec<&str> = calls.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["MoeOutput", "BaseModelOutput"]);
        assert_eq!(filled(calls[0].1), Some(vec!["loss", "logits"]));
        assert_eq!(filled(calls[1].1), None);
        assert_eq!(set_later(fd, calls[0].1), vec!["aux_loss", "router_logits"]);
        assert!(set_later(fd, calls[1].1).is_empty());
    }

    #[test]
    fn output_names() {
        assert!(is_output_name("CausalLMOutputWithPast"));
        assert!(is_output_name("Qwen3VLMoeModelOutputWithPast"));
        assert!(!is_output_name("output_proj"));
        assert!(!is_output_name("Linear"));
    }
}
