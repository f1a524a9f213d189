//! The protocol's cross-cutting kernel patches (RMSNorm, full-head RoPE)
//! for a new model whose template has none to carry (qwen2_5_vl patches
//! neither for a Qwen3-VL; a Qwen3.5 left alone by a standard-norm
//! template): the project's OpSlot guard written over the new model's own
//! upstream code — `if <slot>.use_non_eager_impl: return <slot>(…)`, then
//! the upstream body unchanged, the shape of every OpSlot-era norm and RoPE
//! patch of VeOmni.
//!
//! Only where the project is in the OpSlot era (a config declares the
//! slot: its declaration line and the `OpSlot` import are taken from the
//! project's configs, never invented) and the upstream code has the
//! formulation the kernel computes: a norm whose class computes
//! `rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)` and scales by
//! `self.weight` (the `standard` slot) or `1 + self.weight` (the variant a
//! project config declares for its own `1 + weight` norm); a RoPE
//! `apply_rotary_pos_emb(q, k, cos, sin, …, unsqueeze_dim)` that uses
//! `rotate_half` on a configuration without partial rotary.

use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use super::facts::ModelFacts;
use super::ruff_findings::UpstreamOverride;
use crate::declined::Declined;
use patchgen_core::survey::modules::Version;

/// One `<var> = OpSlot("<op>", "<variant>")` line of a project config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotDecl {
    pub var: String,
    pub op: String,
    pub variant: String,
    /// The line as written, stripped.
    pub line: String,
}

/// The OpSlot declarations the project's configs make, and the line
/// importing `OpSlot`.
#[derive(Clone, Debug, Default)]
pub struct ProjectSlots {
    pub import_line: Option<String>,
    pub decls: Vec<SlotDecl>,
}

impl ProjectSlots {
    /// Read from config texts.
    pub fn scan<'a>(texts: impl IntoIterator<Item = &'a str>) -> ProjectSlots {
        let mut out = ProjectSlots::default();
        for text in texts {
            for line in text.lines().map(str::trim) {
                if out.import_line.is_none() && line.starts_with("from ") && line.ends_with(" import OpSlot") {
                    out.import_line = Some(line.to_string());
                }
                if let Some(d) = parse_decl(line)
                    && !out.decls.iter().any(|x| x.line == d.line)
                {
                    out.decls.push(d);
                }
            }
        }
        out
    }

    pub fn find(&self, op: &str, variant: &str) -> Option<&SlotDecl> {
        self.decls.iter().find(|d| d.op == op && d.variant == variant)
    }
}

fn parse_decl(line: &str) -> Option<SlotDecl> {
    let (var, rest) = line.split_once(" = OpSlot(\"")?;
    if !var.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let (op, rest) = rest.split_once("\", \"")?;
    let (variant, tail) = rest.split_once('"')?;
    (tail.trim() == ")").then(|| SlotDecl {
        var: var.to_string(),
        op: op.to_string(),
        variant: variant.to_string(),
        line: line.to_string(),
    })
}

/// A guard over the upstream definition `text` (a `def`, dedented): the
/// guard goes after the docstring, the body stays as it is.
fn guarded(text: &str, function: &str, original: &str, var: &str, call: &str) -> Option<String> {
    let parsed = ruff_python_parser::parse_module(text).ok()?;
    let Some(Stmt::FunctionDef(f)) = parsed.syntax().body.first() else { return None };
    let first = f.body.first()?;
    let is_doc = matches!(first, Stmt::Expr(e) if e.value.is_string_literal_expr());
    let at = if is_doc { f.body.get(1)?.start() } else { first.start() }.to_usize();
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..at];
    if !indent.chars().all(|c| c == ' ') {
        return None;
    }
    let def_at = text.find(&format!("def {original}("))?;
    let mut out = String::new();
    out.push_str(&text[def_at..line_start].replacen(&format!("def {original}("), &format!("def {function}("), 1));
    out.push_str(&format!(
        "{indent}# Modification: OpSlot guard — use the fused kernel when bound (patchgen new).\n{indent}if {var}.use_non_eager_impl:\n{indent}    return {var}({call})\n{indent}# Original HF code below, unchanged.\n"
    ));
    out.push_str(&text[line_start..]);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    ruff_python_parser::parse_module(&out).ok()?;
    Some(out)
}

/// The class's source, whitespace removed.
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The attribute `__init__` stores its `eps` parameter in.
fn eps_attribute(init: &str) -> Option<String> {
    init.lines().find_map(|l| {
        let (lhs, rhs) = l.trim().split_once('=')?;
        let attr = lhs.trim().strip_prefix("self.")?;
        (rhs.trim() == "eps" && attr.chars().all(|c| c.is_alphanumeric() || c == '_')).then(|| attr.to_string())
    })
}

/// The norm guard for `class` (the new model's main RMSNorm), with the
/// slot for its formulation: `standard`, or `one_plus` (the project's
/// `1 + weight` variant) when the norm computes `1 + weight`.
pub fn norm_guard(
    new: &ModelFacts,
    version: &Version,
    class: &str,
    slots: &ProjectSlots,
    one_plus_variant: Option<&str>,
) -> Result<(UpstreamOverride, SlotDecl), Declined> {
    let forward = new.method_text(version, class, "forward").ok_or("no forward")?;
    let init = new.method_text(version, class, "__init__").ok_or("no __init__")?;
    let norm = new.method_text(version, class, "_norm").unwrap_or_default();
    let all = squeezed(&format!("{forward}{norm}"));
    if !(all.contains("rsqrt(") && all.contains(".pow(2).mean(-1,keepdim=True)") && all.contains("self.weight")) {
        return Err(format!("`{class}` is not the RMSNorm the kernel computes (no rsqrt of the mean square)").into());
    }
    let one_plus = new.norm_is_one_plus_weight(version, class).is_some();
    let variant = match (one_plus, one_plus_variant) {
        (false, _) => "standard",
        (true, Some(v)) => v,
        (true, None) => {
            return Err(format!(
                "`{class}` computes `1 + weight` and no project config declares a `1 + weight` rms_norm slot"
            )
            .into());
        }
    };
    let decl = slots
        .find("rms_norm", variant)
        .or_else(|| slots.find("rms_norm", "standard"))
        .ok_or("no project config declares an rms_norm OpSlot")?;
    let eps = eps_attribute(&init).ok_or_else(|| format!("`{class}.__init__` stores no `eps`"))?;
    let text = patchgen_python::pytext::dedent(&def_from_keyword(&forward)?);
    let parsed = ruff_python_parser::parse_module(&text).map_err(|e| e.to_string())?;
    let Some(Stmt::FunctionDef(f)) = parsed.syntax().body.first() else { return Err("no def".into()) };
    let x = f.parameters.args.get(1).ok_or("forward takes no input")?.parameter.name.id.to_string();
    let function = format!("{}_forward_guarded", snake(class));
    let mut decl = decl.clone();
    if decl.variant != variant {
        decl.line = decl.line.replace(&format!("\"{}\")", decl.variant), &format!("\"{variant}\")"));
        decl.variant = variant.to_string();
    }
    let source = guarded(&text, &function, "forward", &decl.var, &format!("{x}, self.weight, self.{eps}"))
        .ok_or("the guard does not parse")?;
    let what = if one_plus { format!("`1 + weight`, slot variant {variant}") } else { "standard".into() };
    Ok((
        UpstreamOverride {
            patch_type: "override_method",
            target: format!("{class}.forward"),
            function,
            codes: Vec::new(),
            todo: format!(
                "patchgen new: the template has no norm patch for `{class}`; the project's OpSlot guard over its upstream forward, {what}"
            ),
            description: format!("OpSlot guard for the fused RMSNorm ({what})"),
            source,
            imports: vec!["import torch".into()].into_iter().filter(|_| forward.contains("torch.")).collect(),
        },
        decl,
    ))
}

/// The RoPE guard for the new module's `apply_rotary_pos_emb`.
pub fn rotary_guard(new: &ModelFacts, slots: &ProjectSlots) -> Result<(UpstreamOverride, SlotDecl), Declined> {
    let f =
        patchgen_core::survey::modules::function(&new.file, "apply_rotary_pos_emb").ok_or("no apply_rotary_pos_emb")?;
    let text = patchgen_python::pytext::dedent(&def_from_keyword(&new.file.text[f.range()])?);
    let names: Vec<&str> = f.parameters.args.iter().map(|p| p.parameter.name.id.as_str()).collect();
    let standard = names.len() >= 5
        && names[..4] == ["q", "k", "cos", "sin"]
        && names.contains(&"unsqueeze_dim")
        && text.contains("rotate_half(q)")
        && text.contains("rotate_half(k)");
    if !standard {
        return Err(format!(
            "apply_rotary_pos_emb({}) is not the full-head rotate_half RoPE the kernel computes",
            names.join(", ")
        )
        .into());
    }
    // Interleaved RoPE (helium, ernie4_5, cohere): `rotate_half` pairs
    // even and odd channels (`x[..., 0::2]`) and cos/sin are
    // `repeat_interleave`d; the kernel rotates the two halves.
    let rotate_half = patchgen_core::survey::modules::function(&new.file, "rotate_half")
        .map(|r| new.file.text[r.range()].chars().filter(|c| !c.is_whitespace()).collect::<String>());
    let half_split = rotate_half.as_deref().is_some_and(|r| r.contains("x.shape[-1]//2") && !r.contains("::2]"));
    if !half_split || text.contains("repeat_interleave") {
        return Err("the model's RoPE is interleaved (`rotate_half` pairs even and odd channels, or cos/sin are `repeat_interleave`d); the kernel rotates the two halves of the head".into());
    }
    let decl = slots.find("rotary_pos_emb", "full").ok_or("no project config declares a full rotary_pos_emb OpSlot")?;
    let function = "apply_rotary_pos_emb_guarded".to_string();
    let source =
        guarded(&text, &function, "apply_rotary_pos_emb", &decl.var, "q, k, cos, sin, unsqueeze_dim=unsqueeze_dim")
            .ok_or("the guard does not parse")?;
    Ok((
        UpstreamOverride {
            patch_type: "replace_function",
            target: "apply_rotary_pos_emb".into(),
            function,
            codes: Vec::new(),
            todo: "patchgen new: the template has no RoPE patch; the project's OpSlot guard over the upstream function (full-head rotary: no partial_rotary_factor < 1, no mrope_interleaved)".into(),
            description: "OpSlot guard for the fused RoPE (full head)".into(),
            source,
            imports: Vec::new(),
        },
        decl.clone(),
    ))
}

/// The text from the `def` keyword on (decorators dropped: codegen keeps
/// upstream's).
fn def_from_keyword(text: &str) -> Result<String, Declined> {
    let at = text.find("def ").ok_or("no def")?;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    Ok(format!("{}{}", &text[line_start..at].replace(|c: char| !c.is_whitespace(), " "), &text[at..]))
}

fn snake(name: &str) -> String {
    super::ruff_findings::snake(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_declarations_and_the_import() {
        let text = "    from veomni.ops.dispatch import OpSlot\n    veomni_rms_norm = OpSlot(\"rms_norm\", \"standard\")\n    x = OpSlot(\"rms_norm\", y)\n";
        let s = ProjectSlots::scan([text]);
        assert_eq!(s.import_line.as_deref(), Some("from veomni.ops.dispatch import OpSlot"));
        assert_eq!(s.decls.len(), 1);
        assert_eq!(s.find("rms_norm", "standard").unwrap().var, "veomni_rms_norm");
    }

    #[test]
    fn the_guard_goes_after_the_docstring() {
        let text = "def f(q, k):\n    \"\"\"Doc.\"\"\"\n    return q\n";
        let g = guarded(text, "g", "f", "slot", "q, k").unwrap();
        assert_eq!(
            g,
            "def g(q, k):\n    \"\"\"Doc.\"\"\"\n    # Modification: OpSlot guard — use the fused kernel when bound (patchgen new).\n    if slot.use_non_eager_impl:\n        return slot(q, k)\n    # Original HF code below, unchanged.\n    return q\n"
        );
        assert_eq!(
            eps_attribute("def __init__(self, d, eps=1e-6):\n    self.variance_epsilon = eps\n").as_deref(),
            Some("variance_epsilon")
        );
    }
}
