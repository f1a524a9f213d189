//! PG306 automodel-bypass: a constructor builds a sub-model with `AutoModel.from_config` while the generated module defines a patched class for it.
//!
//! ## What it does
//! Finds `AutoModel*.from_config(config.<x>_config)` calls in the methods of
//! the generated module, resolves `<x>_config` to its configuration class
//! (the composite configuration's `sub_configs` in the upstream
//! configuration module) and that to the generated model class declared for
//! it (`config: Qwen3VLVisionConfig`). When that class, or any class or
//! function it uses, carries a config patch, the call is reported — unless
//! the model package's registry never returns a class that reaches the
//! constructor (gemma3 registers only `gemma3_text`, so its composite is
//! never built).
//!
//! ## Why is this bad?
//! `AutoModel` resolves the configuration to transformers' *own* class, not
//! the generated one next to it: the vision tower or language model is built
//! from the unpatched upstream code, and every patch for it (sequence
//! parallelism, fused kernels, precomputed metadata) is silently bypassed.
//! transformers 5.16 switched the Qwen3-VL, Qwen3-VL-MoE and Qwen3.5
//! composites to `AutoModel.from_config`; nothing fails until a shape error
//! far away, if at all.
//!
//! ## Example
//! ```python
//! # upstream (5.16) Qwen3VLModel.__init__, kept by the config:
//! self.visual = AutoModel.from_config(config.vision_config)
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3VLModel.__init__")
//! def qwen3_vl_model_init_patched(self, config):
//!     super().__init__(config)
//!     self.visual = Qwen3VLVisionModel._from_config(config.vision_config)
//!     self.language_model = Qwen3VLTextModel._from_config(config.text_config)
//!     self.rope_deltas = None
//!     self.post_init()
//! ```

use rustc_hash::FxHashSet;

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use super::super::{LintContext, Rule, genmap::OriginKind, package, patched};
use crate::automodel::{automodel_calls, model_class_for, model_class_for_call, sub_config_class};
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::walk::{self, Scope};

pub const RULE: Rule = Rule {
    code: "PG306",
    name: "automodel-bypass",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg306_automodel_bypass.rs"),
    check,
    check_project: None,
};

/// Top-level definitions of the module that `start` uses, transitively
/// (itself included): names loaded anywhere in their bodies.
pub fn closure(body: &[Stmt], start: &[&str]) -> Vec<String> {
    let defined: FxHashSet<&str> = body
        .iter()
        .filter_map(|s| match s {
            Stmt::ClassDef(c) => Some(c.name.id.as_str()),
            Stmt::FunctionDef(f) => Some(f.name.id.as_str()),
            _ => None,
        })
        .collect();
    let mut seen: Vec<String> = Vec::new();
    let mut todo: Vec<String> = start.iter().filter(|s| defined.contains(*s)).map(|s| s.to_string()).collect();
    while let Some(name) = todo.pop() {
        if seen.contains(&name) {
            continue;
        }
        let Some(stmt) = body.iter().find(|s| match s {
            Stmt::ClassDef(c) => c.name.id.as_str() == name,
            Stmt::FunctionDef(f) => f.name.id.as_str() == name,
            _ => false,
        }) else {
            continue;
        };
        // A base's `_init_weights` names every module class of the model:
        // following it would make everything reach everything.
        let exprs: Vec<&Expr> = match stmt {
            Stmt::ClassDef(c) => {
                let mut v: Vec<&Expr> = Vec::new();
                for b in c.bases() {
                    v.extend(walk::sub_expressions(b));
                }
                for s in &c.body {
                    if matches!(s, Stmt::FunctionDef(f) if f.name.id.as_str() == "_init_weights") {
                        continue;
                    }
                    v.extend(walk::expressions(std::slice::from_ref(s), Scope::All));
                }
                v
            }
            _ => walk::expressions(std::slice::from_ref(stmt), Scope::All),
        };
        for expr in exprs {
            if let Expr::Name(n) = expr
                && defined.contains(n.id.as_str())
                // The shared base names every module class of the model
                // (`_no_split_modules`, output recorders): not a use.
                && !n.id.as_str().ends_with("PreTrainedModel")
                && !seen.iter().any(|s| s == n.id.as_str())
            {
                todo.push(n.id.to_string());
            }
        }
        seen.push(name);
    }
    seen
}

/// Classes the model package's registry functions return (`None`: no
/// registry function found, so nothing can be ruled out).
fn registry_returns(init: &ParsedFile) -> Option<Vec<String>> {
    let regs = package::model_registrations(init);
    if regs.is_empty() {
        return None;
    }
    Some(regs.iter().flat_map(|r| package::returned_names(r.function)).collect())
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let body = ctx.generated.body();
    // Names a config patch wrote: replaced classes and functions, classes
    // with an overriding method; and where each was registered.
    let mut patched_names: Vec<(String, Option<patchgen_config::plan::Loc>)> = Vec::new();
    for o in &ctx.origins {
        if o.kind != OriginKind::Replacement {
            continue;
        }
        let top = o.qualname.split('.').next().unwrap_or(&o.qualname).to_string();
        if !patched_names.iter().any(|(n, _)| *n == top) {
            patched_names.push((top, o.patch.map(|i| ctx.plan.patches[i].registered_at.clone())));
        }
    }
    if patched_names.is_empty() {
        return out;
    }
    let reachable: std::cell::OnceCell<Option<Vec<String>>> = std::cell::OnceCell::new();
    for stmt in body {
        let Stmt::ClassDef(holder) = stmt else {
            continue;
        };
        let calls = automodel_calls(holder);
        if calls.is_empty() {
            continue;
        }
        let reachable = reachable.get_or_init(|| {
            ctx.package_init()
                .and_then(registry_returns)
                .map(|returned| closure(body, &returned.iter().map(String::as_str).collect::<Vec<_>>()))
        });
        if let Some(reach) = reachable
            && !reach.iter().any(|r| r == holder.name.id.as_str())
        {
            continue;
        }
        for (call, attr) in calls {
            let config_class = ctx.upstream_configuration().and_then(|c| sub_config_class(c, &attr));
            let Some(model) = config_class
                .as_deref()
                .and_then(|cc| model_class_for_call(body, cc, call).or_else(|| model_class_for(body, cc)))
            else {
                continue;
            };
            let model_name = model.name.id.as_str();
            let used = closure(body, &[model_name]);
            let bypassed: Vec<&(String, Option<patchgen_config::plan::Loc>)> =
                patched_names.iter().filter(|(n, _)| used.contains(n)).collect();
            let Some(first) = bypassed.first() else {
                continue;
            };
            let list = bypassed.iter().take(4).map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ");
            let more = if bypassed.len() > 4 { format!(" and {} more", bypassed.len() - 4) } else { String::new() };
            let callee = &ctx.generated.text[call.func.range()];
            let d = RULE
                .diagnostic(format!(
                    "`{}` builds `config.{attr}` with `{callee}`, which resolves to transformers' own `{model_name}`, not the generated one: the patches to {list}{more} are bypassed",
                    holder.name.id
                ))
                .help(format!(
                    "override `{}.__init__` and build the sub-model with `{model_name}._from_config(config.{attr})`",
                    holder.name.id
                ));
            let fallback = first.1.clone().unwrap_or_else(|| patched::config_anchor(ctx));
            out.push(ctx.at_generated(d, call.start(), Some(&fallback)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pyfacts::parsed as parse;

    #[test]
    fn closure_follows_uses() {
        let module = parse(
            "class PreTrained(PreTrainedModel):\n    config: Cfg\n\
class VisModel(PreTrained):\n    config: VisCfg\n    def forward(self):\n        return helper(self.blocks)\n\
def helper(x):\n    return Block(x)\n\
class Block(nn.Module):\n    pass\n",
        );
        let mut used = closure(module.body(), &["VisModel"]);
        used.sort();
        assert_eq!(used, ["Block", "PreTrained", "VisModel", "helper"]);
    }

    #[test]
    fn registry_returns_names() {
        let init = parse(
            "@MODELING_REGISTRY.register(\"gemma3_text\")\ndef register(architecture):\n    from .generated.x import A, B\n    if \"Model\" in architecture:\n        return B\n    return A\n",
        );
        assert_eq!(registry_returns(&init), Some(vec!["B".to_string(), "A".to_string()]));
        assert_eq!(registry_returns(&parse("x = 1\n")), None);
    }
}
