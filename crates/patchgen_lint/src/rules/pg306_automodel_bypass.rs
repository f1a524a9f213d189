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
//!
//! ## Fix
//! Unsafe: each `AutoModel*.from_config(config.<x>)` of the method becomes
//! `<Generated>._from_config(config.<x>)` — in the config's own code where
//! the method is a config override, else in an `override_method` appended
//! to the config, made of upstream's method (from its `def` line; the
//! generated classes are defined in the generated module, so it needs no
//! import). Unsafe because the override freezes upstream's constructor
//! at the linted version: a later bump must carry its changes.

use rustc_hash::FxHashSet;

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtClassDef};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::super::{LintContext, Rule, genmap::OriginKind, package, patched, pyfacts};
use crate::automodel::{automodel_calls, automodel_calls_in, model_class_for, model_class_for_call, sub_config_class};
use crate::fix::{Applicability, Fix, TextEdit};
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
            let fix = bypass_fix(ctx, holder, call);
            out.push(ctx.at_generated(d, call.start(), Some(&fallback)).with_fix(fix));
        }
    }
    out
}

/// The fix of `holder`'s method holding `call`: each `AutoModel*.from_config`
/// call of that method whose model class the generated module defines
/// rewritten to `<Model>._from_config`. In config code (an override the
/// config writes) the calls are edited where they are; in upstream code an
/// `override_method("<holder>.<method>")` is appended to the config, made
/// of upstream's method with the calls rewritten.
fn bypass_fix(ctx: &LintContext, holder: &StmtClassDef, call: &ExprCall) -> Option<Fix> {
    let body = ctx.generated.body();
    let method = holder.body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.range().contains(call.start()) => Some(f),
        _ => None,
    })?;
    // Every call of the method, with the generated class it should build.
    // (callee range, rewritten callee, the sub-config attribute it builds from).
    let mut rewrites: Vec<(TextRange, String, String)> = Vec::new();
    for (c, attr) in automodel_calls_in(&method.body) {
        let cc = ctx.upstream_configuration().and_then(|conf| sub_config_class(conf, &attr))?;
        let model = model_class_for_call(body, &cc, c).or_else(|| model_class_for(body, &cc))?;
        rewrites.push((c.func.range(), format!("{}._from_config", model.name.id), attr));
    }
    let target = format!("{}.{}", holder.name.id, method.name.id);
    let message = format!(
        "Build the generated classes in `{target}` ({})",
        rewrites.iter().map(|(_, r, _)| format!("`{r}`")).collect::<Vec<_>>().join(", ")
    );
    let def_line = ctx.generated.line_of(method.name.start());
    if let Some(origin) = ctx.origin_of_line(def_line) {
        // The config's own method: edit its calls.
        let file = ctx.shared.pipeline.loader.parse_file(&origin.config_path).ok()?;
        let func = pyfacts::function_on_line(&file, origin.config_line)?;
        let mut edits = Vec::new();
        // Each call by the sub-config it builds from (`AutoModel.from_config`
        // is the same callee for the vision and the text model).
        for (c, attr) in automodel_calls_in(&func.body) {
            let callee = &file.text[c.func.range()];
            let generated = rewrites.iter().find(|(r, _, a)| *a == attr && &ctx.generated.text[*r] == callee)?;
            edits.push(TextEdit { range: c.func.range(), content: generated.1.clone() });
        }
        return Some(crate::fix::of_text(Applicability::Unsafe, message, &file.path, &file.text, &edits));
    }
    // Upstream's method, overridden by the config.
    let start = ctx.generated.line_start(ctx.generated.line_of(method.range().start()));
    let end = method.end().to_usize();
    let mut text = ctx.generated.text[start..end].to_string();
    let mut sorted = rewrites.clone();
    sorted.sort_by_key(|(r, _, _)| std::cmp::Reverse(r.start()));
    for (r, to, _) in sorted {
        let (a, b) = (r.start().to_usize() - start, r.end().to_usize() - start);
        text.replace_range(a..b, &to);
    }
    // From the `def` line (upstream's decorators stay on the generated method).
    let def_at = ctx.generated.line_start(def_line) - start;
    let source = patchgen_python::pytext::dedent(&text[def_at..]);
    let function = format!("{}_{}_patched", snake(holder.name.id.as_str()), method.name.id.as_str().trim_matches('_'));
    let source = source.replacen(&format!("def {}(", method.name.id), &format!("def {function}("), 1);
    let config_file = ctx.shared.pipeline.loader.parse_file(ctx.config_path()).ok()?;
    let var = config_variable(&config_file, ctx.plan.created_at.line)?;
    let addition = format!(
        "\n\n@{var}.override_method(\n    \"{target}\",\n    description=\"Build the generated sub-models, not transformers' own (lint PG306)\",\n)\n{}\n",
        source.trim_end()
    );
    let mut at = config_file.text.len();
    let mut content = addition;
    if !config_file.text.ends_with('\n') {
        content.insert(0, '\n');
    }
    // Trailing blank lines stay after the addition.
    let trimmed = config_file.text.trim_end_matches('\n').len();
    if trimmed + 1 < at {
        at = trimmed + 1;
        content = content.trim_end_matches('\n').to_string() + "\n";
    }
    let range = TextRange::empty(TextSize::try_from(at).ok()?);
    Some(crate::fix::of_text(
        Applicability::Unsafe,
        message,
        &config_file.path,
        &config_file.text,
        &[TextEdit { range, content }],
    ))
}

/// `snake_case` of a class name (`Qwen3VLModel` → `qwen3_vl_model`).
fn snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
        if c.is_uppercase() && i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit() || next_lower) {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// The name the config's `PatchConfig(...)` on `line` is assigned to.
fn config_variable(file: &ParsedFile, line: usize) -> Option<String> {
    file.body().iter().find_map(|s| match s {
        Stmt::Assign(a) if file.line_of(a.start()) <= line && line <= file.line_of(a.end()) => {
            match a.targets.first()? {
                Expr::Name(n) => Some(n.id.to_string()),
                _ => None,
            }
        }
        _ => None,
    })
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
