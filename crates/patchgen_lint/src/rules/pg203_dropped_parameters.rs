//! PG203 dropped-parameters: an override whose signature drops upstream parameters and has no `**kwargs` to absorb them.
//!
//! ## What it does
//! Compares the parameter list of every overriding method
//! (`override_method`, and each method of a `replace_class` replacement that
//! the upstream class or its bases define) and every `replace_function`
//! replacement with the upstream definition it replaces, as generated. An
//! upstream parameter callers can pass by keyword that the override neither
//! declares nor absorbs with `**kwargs` is reported; so is an upstream
//! `**kwargs`/`*args` the override removes.
//!
//! ## Why is this bad?
//! Upstream code, `generate()`, the trainer and other patches call the method
//! with upstream's contract. A dropped parameter turns a caller's keyword into
//! `TypeError`, and a dropped `**kwargs` stops flash-attention and
//! packing metadata (`cu_seq_lens_q`, `position_ids`, …) that callers thread
//! through `**kwargs` — the protocol's "Preserve full method signature when
//! overriding".
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3Attention.forward")
//! def qwen3_attention_forward(self, hidden_states, position_embeddings, attention_mask):
//!     ...
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3Attention.forward")
//! def qwen3_attention_forward(self, hidden_states, position_embeddings, attention_mask, past_key_values=None, **kwargs):
//!     ...
//! ```

use ruff_python_ast::{Stmt, StmtFunctionDef};
use ruff_text_size::Ranged;

use super::super::{LintContext, Rule};
use patchgen_config::plan::{Loc, PatchType};
use patchgen_core::survey::signature::{ParamKind, Signature};
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_python::pysource::ParsedFile;

pub const RULE: Rule = Rule {
    code: "PG203",
    name: "dropped-parameters",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg203_dropped_parameters.rs"),
    check,
    check_project: None,
};

/// How an override departs from the upstream parameter list.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Departure {
    /// Upstream names callers can pass by keyword that the override does not accept.
    pub dropped: Vec<String>,
    /// (upstream name, override name) at the same position.
    pub renamed: Vec<(String, String)>,
    /// `*args` / `**kwargs` upstream has and the override lacks (rendered with stars).
    pub variadic: Vec<String>,
}

/// Compare `replacement` with `upstream`.
pub fn departure(upstream: &Signature, replacement: &Signature) -> Departure {
    let absorbs = replacement.params.iter().any(|p| p.kind == ParamKind::VarKeyword);
    let positional = |s: &Signature| -> Vec<String> {
        s.params.iter().filter(|p| p.kind.is_positional()).map(|p| p.name.clone()).collect()
    };
    let (up_pos, rep_pos) = (positional(upstream), positional(replacement));
    let mut out = Departure::default();
    for p in &upstream.params {
        match p.kind {
            ParamKind::PositionalOnly => {}
            ParamKind::VarPositional | ParamKind::VarKeyword => {
                if !replacement.params.iter().any(|q| q.kind == p.kind) {
                    let star = if p.kind == ParamKind::VarKeyword { "**" } else { "*" };
                    out.variadic.push(format!("{star}{}", p.name));
                }
            }
            _ if absorbs || replacement.has(&p.name) => {}
            _ => {
                // Renamed: the same slot holds a name upstream does not have.
                let slot = up_pos.iter().position(|n| *n == p.name);
                match slot.and_then(|i| rep_pos.get(i)) {
                    Some(new) if !upstream.has(new) => out.renamed.push((p.name.clone(), new.clone())),
                    _ => out.dropped.push(p.name.clone()),
                }
            }
        }
    }
    out
}

/// Calls in `body` that may reach `method` of `class` (`x.method(…)`; for
/// `forward`, `self.<attr>(…)` where `self.<attr> = class(…)` somewhere in
/// the module): whether any splats `**` (`.0`) or `*` (`.1`).
fn splatting_callers(body: &[Stmt], class: &str, method: &str) -> (bool, bool) {
    use ruff_python_ast::Expr;
    use ruff_python_ast::visitor::{self, Visitor};
    /// `self.<attr> = …class(…)…` attributes.
    struct Holders<'c> {
        class: &'c str,
        attrs: Vec<String>,
    }
    impl<'a> Visitor<'a> for Holders<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if let Stmt::Assign(a) = stmt {
                let text_has_call = {
                    struct C<'c>(&'c str, bool);
                    impl<'a> Visitor<'a> for C<'_> {
                        fn visit_expr(&mut self, e: &'a Expr) {
                            if let Expr::Call(c) = e
                                && matches!(&*c.func, Expr::Name(n) if n.id.as_str() == self.0)
                            {
                                self.1 = true;
                            }
                            visitor::walk_expr(self, e);
                        }
                    }
                    let mut c = C(self.class, false);
                    c.visit_expr(&a.value);
                    c.1
                };
                if text_has_call {
                    for t in &a.targets {
                        if let Expr::Attribute(at) = t
                            && matches!(&*at.value, Expr::Name(n) if n.id.as_str() == "self")
                        {
                            self.attrs.push(at.attr.id.to_string());
                        }
                    }
                }
            }
            visitor::walk_stmt(self, stmt);
        }

        /// Assignments are statements, and statements never sit inside
        /// expressions (each value is searched with `C` above).
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    struct V<'m> {
        method: &'m str,
        holders: Vec<String>,
        kw: bool,
        pos: bool,
    }
    impl<'a> Visitor<'a> for V<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(c) = expr {
                let reaches = match &*c.func {
                    Expr::Attribute(a) if self.method == "forward" => {
                        self.holders.iter().any(|h| h == a.attr.id.as_str())
                    }
                    Expr::Attribute(a) => a.attr.id.as_str() == self.method,
                    _ => false,
                };
                if reaches {
                    self.kw |= c.arguments.keywords.iter().any(|k| k.arg.is_none());
                    self.pos |= c.arguments.args.iter().any(|a| matches!(a, Expr::Starred(_)));
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut holders = Holders { class, attrs: Vec::new() };
    holders.visit_body(body);
    let mut v = V { method, holders: holders.attrs, kw: false, pos: false };
    v.visit_body(body);
    (v.kw, v.pos)
}

/// The upstream method `method` of class `class` (own or inherited) and its file.
fn upstream_method(ctx: &LintContext, class: &str, method: &str) -> Option<(Signature, Location)> {
    let class_ref = ctx.upstream_class(class)?;
    if let Some(f) = class_ref.own_method(method) {
        return Some(sig_and_loc(f, &class_ref.file));
    }
    let lineage = ctx.shared.lineage(&class_ref);
    let (owner, f) = lineage.method(method)?;
    Some(sig_and_loc(f, &owner.file))
}

fn sig_and_loc(f: &StmtFunctionDef, file: &ParsedFile) -> (Signature, Location) {
    (Signature::of(&f.parameters, &file.text), Location::line(file.path.clone(), file.line_of(f.name.start())))
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // (generated qualname, upstream signature, upstream location, registration)
    let mut pairs: Vec<(String, Signature, Location, &Loc, Option<&str>)> = Vec::new();
    for (i, p) in ctx.plan.patches.iter().enumerate() {
        if ctx.plan.patches[i + 1..].iter().any(|q| q.patch_type == p.patch_type && q.target == p.target) {
            continue;
        }
        match p.patch_type {
            PatchType::MethodOverride if p.replacement.is_some() => {
                let Some((class, method)) = p.target.split_once('.') else {
                    continue;
                };
                if let Some((sig, loc)) = upstream_method(ctx, class, method) {
                    pairs.push((p.target.clone(), sig, loc, &p.registered_at, p.description.as_deref()));
                }
            }
            PatchType::FunctionReplacement if p.replacement.is_some() => {
                let found = ctx.upstream.body().iter().rev().find_map(|s| match s {
                    Stmt::FunctionDef(f) if f.name.id.as_str() == p.target => Some(f),
                    _ => None,
                });
                if let Some(f) = found {
                    let (sig, loc) = sig_and_loc(f, &ctx.upstream);
                    pairs.push((p.target.clone(), sig, loc, &p.registered_at, p.description.as_deref()));
                }
            }
            PatchType::ClassReplacement if p.replacement.is_some() => {
                let Some(class) = ctx.generated_class(&p.target) else {
                    continue;
                };
                for s in &class.body {
                    let Stmt::FunctionDef(f) = s else { continue };
                    let method = f.name.id.as_str();
                    if let Some((sig, loc)) = upstream_method(ctx, &p.target, method) {
                        pairs.push((
                            format!("{}.{method}", p.target),
                            sig,
                            loc,
                            &p.registered_at,
                            p.description.as_deref(),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    for (qual, upstream_sig, upstream_loc, registered_at, description) in pairs {
        let Some(f) = ctx.generated_def(&qual) else { continue };
        let replacement = Signature::of(&f.parameters, &ctx.generated.text);
        let mut dep = departure(&upstream_sig, &replacement);
        // A parameter the override's own text or the patch description
        // names was removed on purpose (a comment, the docstring, a local
        // that now computes it).
        // Prose about the override: its comments, its docstring, the patch
        // description. Code that still uses the name does not count (that
        // is an undefined name, not a decision).
        let mut prose = String::new();
        for line in ctx.generated.text[f.range()].lines() {
            if let Some((_, comment)) = line.split_once('#') {
                prose.push_str(comment);
                prose.push('\n');
            }
        }
        if let Some(Stmt::Expr(e)) = f.body.first()
            && let ruff_python_ast::Expr::StringLiteral(doc) = &*e.value
        {
            prose.push_str(doc.value.to_str());
        }
        if let Some(d) = description {
            prose.push_str(d);
        }
        let deliberate = |name: &str| {
            prose.match_indices(name).any(|(i, _)| {
                let before = prose[..i].chars().next_back();
                let after = prose[i + name.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        };
        dep.dropped.retain(|n| !deliberate(n));
        // A dropped `**kwargs`/`*args` matters when a caller here splats into it.
        if !dep.variadic.is_empty() {
            let (class, method) = qual.rsplit_once('.').unwrap_or(("", &qual));
            let (kw_splat, pos_splat) = splatting_callers(ctx.generated.body(), class, method);
            dep.variadic.retain(|v| if v.starts_with("**") { kw_splat } else { pos_splat });
        }
        if dep == Departure::default() {
            continue;
        }
        let mut parts = Vec::new();
        if !dep.dropped.is_empty() {
            let names: Vec<String> = dep.dropped.iter().map(|n| format!("`{n}`")).collect();
            parts.push(format!(
                "drops upstream parameter{} {}",
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            ));
        }
        for (old, new) in &dep.renamed {
            parts
                .push(format!("renames upstream parameter `{old}` to `{new}` (callers pass `{old}` in that position)"));
        }
        if !dep.variadic.is_empty() {
            let names: Vec<String> = dep.variadic.iter().map(|n| format!("`{n}`")).collect();
            parts.push(format!("drops {} that callers in the generated module splat into", names.join(", ")));
        }
        let d = RULE
            .diagnostic(format!(
                "`{qual}` override {}: callers using upstream's signature `{upstream_sig}` break or pass the wrong value",
                parts.join("; ")
            ))
            .related(upstream_loc, "the upstream definition")
            .help("keep upstream's parameters, names and order (unused ones too), or end the signature with `**kwargs`; a deliberate change can say so with `# noqa: PG203`");
        out.push(ctx.at_generated(d, f.name.start(), Some(registered_at)));
    }
    out
}
