//! PG304 partial-rotary-full-kernel: `apply_rotary_pos_emb` replaced by a full-head kernel on a model whose configuration defaults to partial rotary or interleaved mrope.
//!
//! ## What it does
//! Looks at the generated `apply_rotary_pos_emb` (and other non-vision
//! `*rotary_pos_emb` functions) when a config replaced it: with an external
//! function (`from liger_kernel... import liger_rotary_pos_emb as apply_rotary_pos_emb`),
//! or with a function that hands the whole query tensor (its first
//! parameter, unsliced) to a kernel — a callee named like one (`liger`,
//! `rotary`, `rope`, `kernel`, `npu`, `fused`, `triton`) or an
//! `OpSlot("rotary_pos_emb", "full")` declared in the module (a `"partial"`
//! slot is fine). It fires when the upstream configuration module defaults
//! `partial_rotary_factor` below 1 (`kwargs.setdefault("partial_rotary_factor", 0.25)`,
//! `default_partial_rotary_factor = 64 / 512`, a class default, a rope-parameters
//! dict entry) or turns `mrope_interleaved` on. Of several `setdefault`s of
//! one key on one object only the first counts, as in Python (solar_open
//! sets `partial_rotary_factor` to 1.0, then "to 0.5" with a no-op).
//!
//! ## Why is this bad?
//! A full-head rotary kernel rotates every channel of the head; partial
//! rotary models rotate only the first `rotary_dim` channels and pass the
//! rest through. The result is wrong attention and, with Liger's kernel on
//! Qwen3.5/Qwen3-Next shapes, NaN losses: a training run wasted before
//! anyone looks at the rotary patch.
//!
//! ## Example
//! ```python
//! config.add_post_import_block('veomni_apply_rotary_pos_emb = OpSlot("rotary_pos_emb", "full")')
//!
//! @config.replace_function("apply_rotary_pos_emb")  # qwen3_5: partial_rotary_factor=0.25
//! def apply_rotary_pos_emb_patched(q, k, cos, sin, unsqueeze_dim=1):
//!     if veomni_apply_rotary_pos_emb.use_non_eager_impl:
//!         return veomni_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=unsqueeze_dim)
//!     ...
//! ```
//!
//! ## Use instead
//! ```python
//! config.add_post_import_block('veomni_apply_rotary_pos_emb = OpSlot("rotary_pos_emb", "partial")')
//! ```
//! or keep upstream's `apply_rotary_pos_emb`, which splits off
//! `q[..., :rotary_dim]` before rotating.

use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::super::{LintContext, Rule, patched, pyfacts};
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::{
    facts,
    walk::{self, Scope},
};

pub const RULE: Rule = Rule {
    code: "PG304",
    name: "partial-rotary-full-kernel",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg304_partial_rotary_full_kernel.rs"),
    check,
    check_project: None,
};

/// Why the configuration module makes rotary partial, if it does.
pub fn partial_rotary(configuration: &ParsedFile) -> Option<String> {
    let mut found: Option<String> = None;
    // (receiver, key) of the setdefaults seen: only the first one for a key
    // sets it (solar_open: `kwargs.setdefault("partial_rotary_factor", 1.0)`
    // then `(..., 0.5)`, a no-op).
    let mut set: Vec<(Option<String>, String)> = Vec::new();
    for expr in walk::expressions(configuration.body(), Scope::All) {
        if found.is_some() {
            break;
        }
        match expr {
            // kwargs.setdefault("partial_rotary_factor", 0.25), rope_parameters.setdefault(..., kwargs.pop("x", 0.25))
            Expr::Call(c) if facts::last_ident(&c.func) == Some("setdefault") => {
                if let [Expr::StringLiteral(k), v, ..] = &*c.arguments.args {
                    let receiver = match &*c.func {
                        Expr::Attribute(a) => facts::dotted(&a.value),
                        _ => None,
                    };
                    let key = (receiver, k.value.to_str().to_string());
                    if set.contains(&key) {
                        continue;
                    }
                    set.push(key);
                    found = factor_or_flag(k.value.to_str(), v);
                }
            }
            // {"partial_rotary_factor": 0.5}
            Expr::Dict(d) => {
                for item in &d.items {
                    if let Some(Expr::StringLiteral(k)) = &item.key
                        && found.is_none()
                    {
                        found = factor_or_flag(k.value.to_str(), &item.value);
                    }
                }
            }
            _ => {}
        }
    }
    if found.is_some() {
        return found;
    }
    // Assignments: `kwargs["partial_rotary_factor"] = 0.5`, class defaults
    // `partial_rotary_factor: float = 0.5`, `default_partial_rotary_factor = 64 / 512`.
    let mut stmts: Vec<&Stmt> = Vec::new();
    for stmt in configuration.body() {
        if let Stmt::ClassDef(c) = stmt {
            stmts.extend(c.body.iter());
            for m in &c.body {
                if let Stmt::FunctionDef(f) = m {
                    walk::for_each_statement(&f.body, Scope::Own, |s| stmts.push(s));
                    for p in f.parameters.args.iter().chain(&f.parameters.kwonlyargs) {
                        if let Some(d) = &p.default
                            && found.is_none()
                        {
                            found = factor_or_flag(p.parameter.name.id.as_str(), d);
                        }
                    }
                }
            }
        }
    }
    for stmt in stmts {
        if found.is_some() {
            break;
        }
        let Some((targets, value)) = facts::assignment(stmt) else { continue };
        for t in targets {
            let key = match t {
                Expr::Name(n) => n.id.to_string(),
                Expr::Attribute(a) => a.attr.id.to_string(),
                Expr::Subscript(s) => match &*s.slice {
                    Expr::StringLiteral(k) => k.value.to_str().to_string(),
                    _ => continue,
                },
                _ => continue,
            };
            if found.is_none() {
                found = factor_or_flag(&key, value);
            }
        }
    }
    found
}

/// `partial_rotary_factor`-like keys with a constant below 1, or
/// `mrope_interleaved` set to `True`.
fn factor_or_flag(key: &str, value: &Expr) -> Option<String> {
    if key.ends_with("partial_rotary_factor") {
        let v = last_number(value)?;
        return (v < 1.0 && v > 0.0).then(|| format!("`{key}` defaults to {v}"));
    }
    if key == "mrope_interleaved" && matches!(value, Expr::BooleanLiteral(b) if b.value) {
        return Some("`mrope_interleaved` defaults to True".into());
    }
    None
}

/// The value of a numeric constant expression (`0.25`, `64 / 512`), or of
/// the last argument of a call (`kwargs.pop("rotary_pct", 0.25)`).
fn last_number(expr: &Expr) -> Option<f64> {
    use ruff_python_ast::{Number, Operator};
    match expr {
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(i) => i.as_u64().map(|v| v as f64),
            Number::Float(f) => Some(*f),
            Number::Complex { .. } => None,
        },
        Expr::BinOp(b) => {
            let (l, r) = (last_number(&b.left)?, last_number(&b.right)?);
            match b.op {
                Operator::Div => (r != 0.0).then(|| l / r),
                Operator::Mult => Some(l * r),
                Operator::Add => Some(l + r),
                Operator::Sub => Some(l - r),
                _ => None,
            }
        }
        Expr::Call(c) => c.arguments.args.last().and_then(last_number),
        _ => None,
    }
}

/// Module-level `NAME = OpSlot("rotary_pos_emb", "<variant>")`: the variant.
fn opslot_variant<'a>(generated: &'a ParsedFile, name: &str) -> Option<(&'a str, TextSize)> {
    for stmt in generated.body() {
        let Stmt::Assign(a) = stmt else { continue };
        if !a.targets.iter().any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name)) {
            continue;
        }
        if let Expr::Call(c) = &*a.value
            && facts::last_ident(&c.func) == Some("OpSlot")
            && let Some(Expr::StringLiteral(v)) = c.arguments.args.get(1)
        {
            return Some((v.value.to_str(), a.start()));
        }
    }
    None
}

fn is_kernel_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["liger", "rotary", "rope", "kernel", "npu", "fused", "triton"].iter().any(|k| n.contains(k))
}

/// A call in `func` that hands the unsliced first parameter to a full-head
/// kernel: `(call start, callee text, where an OpSlot "full" is declared)`.
pub fn full_head_call(generated: &ParsedFile, func: &StmtFunctionDef) -> Option<(TextSize, String, Option<TextSize>)> {
    let q = pyfacts::param_names(&func.parameters).first().map(|s| s.to_string())?;
    for expr in walk::expressions(&func.body, Scope::Own) {
        let Expr::Call(call) = expr else { continue };
        let passes_q = call.arguments.args.iter().any(|a| matches!(a, Expr::Name(n) if n.id.as_str() == q))
            || call.arguments.keywords.iter().any(|k| matches!(&k.value, Expr::Name(n) if n.id.as_str() == q));
        if !passes_q {
            continue;
        }
        let Some(callee) = facts::last_ident(&call.func) else {
            continue;
        };
        if callee == "rotate_half" {
            continue;
        }
        let slot = match &*call.func {
            Expr::Name(n) => opslot_variant(generated, n.id.as_str()),
            _ => None,
        };
        match slot {
            Some(("full", at)) => return Some((call.start(), callee.to_string(), Some(at))),
            Some(_) => continue,
            None if is_kernel_name(callee) => {
                return Some((call.start(), callee.to_string(), None));
            }
            None => {}
        }
    }
    None
}

/// `from M import X as <name>` at the generated module's top level.
fn external_alias(generated: &ParsedFile, name: &str) -> Option<(String, TextSize)> {
    generated.body().iter().find_map(|s| match s {
        Stmt::ImportFrom(i) => i.names.iter().find_map(|a| {
            let bound = a.asname.as_ref()?;
            (bound.id.as_str() == name && a.name.id.as_str() != name).then(|| {
                (format!("{}.{}", i.module.as_ref().map(|m| m.id.as_str()).unwrap_or(""), a.name.id), s.start())
            })
        }),
        _ => None,
    })
}

fn is_rotary_target(name: &str) -> bool {
    name.contains("rotary_pos_emb") && !name.contains("vision")
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let replaced: Vec<&patchgen_config::plan::Patch> = ctx
        .plan
        .patches
        .iter()
        .filter(|p| {
            p.patch_type == patchgen_config::plan::PatchType::FunctionReplacement && is_rotary_target(&p.target)
        })
        .collect();
    if replaced.is_empty() {
        return out;
    }
    let Some(configuration) = ctx.upstream_configuration() else {
        return out;
    };
    let Some(why) = partial_rotary(configuration) else {
        return out;
    };
    let anchor = patched::config_anchor(ctx);
    for p in replaced {
        let help = "keep upstream's rotary (it splits off `q[..., :rotary_dim]`), or use a partial-aware kernel (`OpSlot(\"rotary_pos_emb\", \"partial\")`)";
        if let Some((source, at)) = external_alias(&ctx.generated, &p.target) {
            let d = RULE
                .diagnostic(format!(
                    "`{}` is replaced by `{source}`, a full-head kernel, but the upstream configuration makes rotary partial ({why})",
                    p.target
                ))
                .help(help);
            out.push(ctx.at_generated(d, at, Some(&p.registered_at)));
            continue;
        }
        let Some(func) = ctx.generated_def(&p.target) else {
            continue;
        };
        let Some((at, callee, slot)) = full_head_call(&ctx.generated, func) else {
            continue;
        };
        let mut d = RULE
            .diagnostic(format!(
                "`{}` hands the whole query to `{callee}`, a full-head rotary kernel, but the upstream configuration makes rotary partial ({why}): wrong rotations, NaN losses",
                p.target
            ))
            .help(help);
        d = ctx.at_generated(d, at, Some(&p.registered_at));
        if let Some(slot) = slot {
            let line = ctx.generated.line_of(slot);
            let declared = ctx.config_line_containing(&format!("{callee} = OpSlot(")).map(|l| ctx.at_config(&l));
            let loc = declared.or_else(|| ctx.config_location_of_line(line)).unwrap_or_else(|| ctx.at_config(&anchor));
            d = d.related(loc, "the `full` OpSlot is declared here");
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pyfacts::parsed as parse;

    #[test]
    fn partial_rotary_defaults_in_their_shapes() {
        let setdefault = "class C(PreTrainedConfig):\n    def __init__(self, **kwargs):\n        kwargs.setdefault(\"partial_rotary_factor\", 0.25)  # BC\n";
        assert!(partial_rotary(&parse(setdefault)).unwrap().contains("0.25"));
        let class_attr = "class C:\n    default_partial_rotary_factor = 64 / 512\n";
        assert!(partial_rotary(&parse(class_attr)).unwrap().contains("0.125"));
        let pop = "class C:\n    def __init__(self, **kwargs):\n        self.rope_parameters.setdefault(\"partial_rotary_factor\", kwargs.pop(\"rotary_pct\", 0.25))\n";
        assert!(partial_rotary(&parse(pop)).is_some());
        let dict = "class C:\n    def __init__(self, rope_parameters=None):\n        x = {\"rope_type\": \"default\", \"partial_rotary_factor\": 0.5}\n";
        assert!(partial_rotary(&parse(dict)).is_some());
        let param = "class C:\n    def __init__(self, partial_rotary_factor=0.5):\n        pass\n";
        assert!(partial_rotary(&parse(param)).is_some());
        let mrope = "class C:\n    mrope_interleaved: bool = True\n";
        assert!(partial_rotary(&parse(mrope)).unwrap().contains("mrope_interleaved"));
        let full = "class C:\n    def __init__(self, **kwargs):\n        kwargs.setdefault(\"partial_rotary_factor\", 1.0)\n        self.mrope_interleaved = False\n";
        assert_eq!(partial_rotary(&parse(full)), None);
        // Only mentioned, never defaulted (qwen3_5's validation skip list).
        let mention = "class C:\n    ignore_keys_at_rope_validation = {\"mrope_section\", \"mrope_interleaved\"}\n";
        assert_eq!(partial_rotary(&parse(mention)), None);
    }

    #[test]
    fn full_head_calls() {
        let src = "slot = OpSlot(\"rotary_pos_emb\", \"full\")\npslot = OpSlot(\"rotary_pos_emb\", \"partial\")\n\
def a(q, k, cos, sin):\n    if slot.use_non_eager_impl:\n        return slot(q, k, cos, sin)\n    return rotate_half(q)\n\
def b(q, k, cos, sin):\n    return pslot(q, k, cos, sin)\n\
def c(query, key, cos, sin):\n    from liger_kernel.transformers.rope import liger_rotary_pos_emb\n    return liger_rotary_pos_emb(query, key, cos, sin)\n\
def d(q, k, cos, sin):\n    rot = cos.shape[-1]\n    return my_rope_kernel(q[..., :rot], k[..., :rot], cos, sin)\n";
        let f = parse(src);
        let get = |n: &str| pyfacts::function(f.body(), n).unwrap();
        let a = full_head_call(&f, get("a")).unwrap();
        assert_eq!(a.1, "slot");
        assert!(a.2.is_some());
        assert!(full_head_call(&f, get("b")).is_none());
        assert_eq!(full_head_call(&f, get("c")).unwrap().1, "liger_rotary_pos_emb");
        assert!(full_head_call(&f, get("d")).is_none());
    }

    #[test]
    fn the_first_setdefault_of_a_key_wins() {
        // solar_open (transformers 5.16.1): the second setdefault is a no-op in Python.
        let full = pyfacts::parsed(
            "class C:\n    def __post_init__(self, **kwargs):\n        kwargs.setdefault(\"partial_rotary_factor\", 1.0)\n        kwargs.setdefault(\"partial_rotary_factor\", 0.5)\n",
        );
        assert_eq!(partial_rotary(&full), None);
        let partial = pyfacts::parsed(
            "class C:\n    def __post_init__(self, **kwargs):\n        kwargs.setdefault(\"partial_rotary_factor\", 0.5)\n        kwargs.setdefault(\"partial_rotary_factor\", 1.0)\n        other.setdefault(\"partial_rotary_factor\", 1.0)\n",
        );
        assert_eq!(partial_rotary(&partial).as_deref(), Some("`partial_rotary_factor` defaults to 0.5"));
    }
}
