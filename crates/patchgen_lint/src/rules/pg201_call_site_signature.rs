//! PG201 call-site-signature: a call in the generated module that does not bind to its callee's signature.
//!
//! ## What it does
//! Reads every call in the generated module (NPU and other accelerator
//! modules included: nothing is imported) and binds its argument shape —
//! the number of positional arguments and the keyword names — to the
//! callee's parameter list, as `inspect.Signature.bind` would. Callees are:
//! functions defined at the module's top level; functions imported from
//! first-party packages (`[tool.patchgen.lint] first-party`, default the
//! first segment of `package_prefix`), found by reading their source and
//! following re-exports; and `self.<attr>(…)` where `<attr>` is assigned
//! `SomeClass(…)` or `TABLE[key](…)` (a module-level dict of classes) in the
//! module — the call must fit the `forward` of at least one such class.
//! Calls with `*args`/`**kwargs` splats are skipped. This is the static form
//! of VeOmni's `tests/models/test_generated_call_site_signatures.py`.
//!
//! ## Why is this bad?
//! `check` and ruff compare text and names, not argument lists: a patched
//! caller can pass a keyword its patched callee no longer accepts and every
//! gate stays green until the code runs — typically on the hardware whose
//! config forked the callee (it happened three times in a row on one model
//! when the GPU side gained a parameter the NPU fork did not).
//!
//! ## Example
//! ```python
//! @config.override_method("Attention.forward")
//! def attention_forward(self, hidden_states, position_embeddings, cu_seqlens=None):
//!     q = self.rotary(q, position_embeddings, cu_seqlens=cu_seqlens)  # rotary() takes no cu_seqlens
//! ```
//!
//! ## Use instead
//! Keep caller and callee in step: add the parameter to the callee (in every
//! config that patches it) or stop passing it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;

use super::super::context::Shared;
use super::super::signature::{rejection, without_self};
use super::super::{LintContext, Rule};
use patchgen_config::plan::Loc;
use patchgen_core::survey::signature::Signature;
use patchgen_diagnostics::{Diagnostic, Location, Severity};

pub const RULE: Rule = Rule {
    code: "PG201",
    name: "call-site-signature",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg201_call_site_signature.rs"),
    check,
    check_project: None,
};

/// A callee: its parameter list and where it is defined.
#[derive(Clone)]
struct Callee {
    sig: Signature,
    /// Qualified name in the generated module (`f`, `C.forward`), or the
    /// dotted first-party name.
    name: String,
    /// Where the callee is defined outside the generated module.
    defined_at: Option<Location>,
}

const MAX_DEPTH: usize = 4;

/// A first-party function `name` of `module`, following `from X import name`
/// re-exports (first-party only).
fn first_party_function(shared: &Shared, module: &str, name: &str, depth: usize) -> Option<Callee> {
    if depth > MAX_DEPTH {
        return None;
    }
    let (file, is_package) = shared.project_module(module)?;
    let package = if is_package {
        module.to_string()
    } else {
        module.rsplit_once('.').map_or(String::new(), |(p, _)| p.to_string())
    };
    for stmt in file.body() {
        match stmt {
            Stmt::FunctionDef(f) if f.name.id.as_str() == name => {
                return Some(Callee {
                    sig: Signature::of(&f.parameters, &file.text),
                    name: format!("{module}.{name}"),
                    defined_at: Some(Location::line(file.path.clone(), file.line_of(f.name.start()))),
                });
            }
            Stmt::ClassDef(c) if c.name.id.as_str() == name => return None,
            Stmt::ImportFrom(i) => {
                for alias in &i.names {
                    if alias.asname.as_ref().unwrap_or(&alias.name).id.as_str() != name {
                        continue;
                    }
                    let m = i.module.as_ref().map(|m| m.id.to_string());
                    let target = if i.level == 0 {
                        m.unwrap_or_default()
                    } else {
                        let mut base = package.clone();
                        for _ in 1..i.level {
                            base = base.rsplit_once('.').map_or(String::new(), |(p, _)| p.to_string());
                        }
                        match m {
                            Some(m) => format!("{base}.{m}"),
                            None => base,
                        }
                    };
                    if !is_first_party(shared, &target) {
                        return None;
                    }
                    return first_party_function(shared, &target, alias.name.id.as_str(), depth + 1);
                }
            }
            _ => {}
        }
    }
    None
}

fn is_first_party(shared: &Shared, module: &str) -> bool {
    shared.settings.first_party.iter().any(|p| module == p || module.starts_with(&format!("{p}.")))
}

/// Names the module imports from first-party packages, with signatures.
#[derive(Default)]
struct FirstPartyImports<'s> {
    shared: Option<&'s Shared>,
    /// Names called as `name(…)` somewhere in the module: only these are resolved.
    called: BTreeSet<&'s str>,
    found: HashMap<String, Callee>,
}

impl<'a> Visitor<'a> for FirstPartyImports<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::ImportFrom(i) = stmt {
            let shared = self.shared.expect("set");
            if let Some(m) = &i.module
                && i.level == 0
                && is_first_party(shared, m.id.as_str())
            {
                for alias in &i.names {
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).id.as_str();
                    if !self.called.contains(bound) {
                        continue;
                    }
                    if let Some(c) = first_party_function(shared, m.id.as_str(), alias.name.id.as_str(), 0) {
                        self.found.insert(alias.asname.as_ref().unwrap_or(&alias.name).id.to_string(), c);
                    }
                }
            }
        }
        visitor::walk_stmt(self, stmt);
    }

    /// Imports are statements, and statements never sit inside expressions.
    fn visit_expr(&mut self, _: &'a Expr) {}
}

/// `self.<attr>` → the classes it is built from.
struct Owners<'c> {
    classes: &'c BTreeSet<String>,
    tables: HashMap<String, BTreeSet<String>>,
    owners: BTreeMap<String, BTreeSet<String>>,
}

struct CallsIn<'v> {
    out: &'v mut Vec<String>,
    tables: &'v HashMap<String, BTreeSet<String>>,
    classes: &'v BTreeSet<String>,
}

impl<'a> Visitor<'a> for CallsIn<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            match &*call.func {
                Expr::Name(n) if self.classes.contains(n.id.as_str()) => self.out.push(n.id.to_string()),
                Expr::Subscript(s) => {
                    if let Expr::Name(n) = &*s.value
                        && let Some(t) = self.tables.get(n.id.as_str())
                    {
                        self.out.extend(t.iter().cloned());
                    }
                }
                _ => {}
            }
        }
        visitor::walk_expr(self, expr);
    }
}

impl<'a> Visitor<'a> for Owners<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::Assign(a) = stmt {
            for t in &a.targets {
                let Expr::Attribute(attr) = t else { continue };
                let Expr::Name(base) = &*attr.value else {
                    continue;
                };
                if base.id.as_str() != "self" {
                    continue;
                }
                let mut found = Vec::new();
                CallsIn { out: &mut found, tables: &self.tables, classes: self.classes }.visit_expr(&a.value);
                if !found.is_empty() {
                    self.owners.entry(attr.attr.id.to_string()).or_default().extend(found);
                }
            }
        }
        visitor::walk_stmt(self, stmt);
    }

    /// Only assignment statements matter (their values are searched
    /// explicitly), and statements never sit inside expressions.
    fn visit_expr(&mut self, _: &'a Expr) {}
}

struct Calls<'c> {
    calls: Vec<&'c ExprCall>,
}

impl<'a> Visitor<'a> for Calls<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(c) = expr {
            self.calls.push(c);
        }
        visitor::walk_expr(self, expr);
    }
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let file = &ctx.generated;
    let body = file.body();
    let mut functions: HashMap<String, Callee> = HashMap::new();
    let mut methods: HashMap<String, HashMap<String, Signature>> = HashMap::new();
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(f) => {
                functions.insert(
                    f.name.id.to_string(),
                    Callee {
                        sig: Signature::of(&f.parameters, &file.text),
                        name: f.name.id.to_string(),
                        defined_at: None,
                    },
                );
            }
            Stmt::ClassDef(c) => {
                let m = c
                    .body
                    .iter()
                    .filter_map(|s| match s {
                        Stmt::FunctionDef(f) => {
                            Some((f.name.id.to_string(), without_self(&Signature::of(&f.parameters, &file.text))))
                        }
                        _ => None,
                    })
                    .collect();
                methods.insert(c.name.id.to_string(), m);
            }
            _ => {}
        }
    }
    let mut calls = Calls { calls: Vec::new() };
    calls.visit_body(body);
    let called: BTreeSet<&str> = calls
        .calls
        .iter()
        .filter_map(|c| match &*c.func {
            Expr::Name(n) => Some(n.id.as_str()),
            _ => None,
        })
        .collect();
    let mut imported = FirstPartyImports { shared: Some(ctx.shared), called, found: HashMap::new() };
    imported.visit_body(body);
    functions.extend(imported.found);

    let classes: BTreeSet<String> = methods.keys().cloned().collect();
    let mut tables: HashMap<String, BTreeSet<String>> = HashMap::new();
    for stmt in body {
        let Stmt::Assign(a) = stmt else { continue };
        let Expr::Dict(d) = &*a.value else { continue };
        let names: BTreeSet<String> = d
            .items
            .iter()
            .filter_map(|item| match &item.value {
                Expr::Name(n) if classes.contains(n.id.as_str()) => Some(n.id.to_string()),
                _ => None,
            })
            .collect();
        if names.is_empty() {
            continue;
        }
        for t in &a.targets {
            if let Expr::Name(n) = t {
                tables.insert(n.id.to_string(), names.clone());
            }
        }
    }
    let mut owners = Owners { classes: &classes, tables, owners: BTreeMap::new() };
    owners.visit_body(body);
    let owners = owners.owners;

    let mut out = Vec::new();
    for call in calls.calls {
        let args = &call.arguments;
        if args.args.iter().any(|a| matches!(a, Expr::Starred(_))) || args.keywords.iter().any(|k| k.arg.is_none()) {
            continue;
        }
        let keywords: Vec<&str> = args.keywords.iter().filter_map(|k| k.arg.as_ref().map(|a| a.id.as_str())).collect();
        let n = args.args.len();
        match &*call.func {
            Expr::Name(name) => {
                let Some(callee) = functions.get(name.id.as_str()) else {
                    continue;
                };
                let Some(reason) = rejection(&callee.sig, n, &keywords) else {
                    continue;
                };
                let message = format!("`{}(…)` does not fit `{}{}`: {reason}", name.id, callee.name, callee.sig);
                out.push(report(ctx, call, message, &callee.name, callee.defined_at.clone()));
            }
            Expr::Attribute(attr) => {
                let Expr::Name(base) = &*attr.value else {
                    continue;
                };
                if base.id.as_str() != "self" {
                    continue;
                }
                let Some(owner_classes) = owners.get(attr.attr.id.as_str()) else {
                    continue;
                };
                let candidates: Vec<(&String, &Signature)> = owner_classes
                    .iter()
                    .filter_map(|c| methods.get(c).and_then(|m| m.get("forward")).map(|s| (c, s)))
                    .collect();
                if candidates.is_empty() {
                    continue;
                }
                let reasons: Vec<(String, String)> = candidates
                    .iter()
                    .filter_map(|(c, s)| rejection(s, n, &keywords).map(|r| (format!("{c}.forward{s}"), r)))
                    .collect();
                if reasons.len() < candidates.len() {
                    continue;
                }
                let detail: Vec<String> = reasons.iter().map(|(c, r)| format!("`{c}`: {r}")).collect();
                let message = format!("`self.{}(…)` fits no class it can hold — {}", attr.attr.id, detail.join("; "));
                let first = format!("{}.forward", candidates[0].0);
                out.push(report(ctx, call, message, &first, None));
            }
            _ => {}
        }
    }
    out
}

/// Point at the caller's config line when config code wrote the call, else
/// at the callee's replacement (its signature is what changed).
fn report(
    ctx: &LintContext,
    call: &ExprCall,
    message: String,
    callee: &str,
    callee_at: Option<Location>,
) -> Diagnostic {
    let callee_origin = ctx.origin_named(callee).map(|o| Loc::line(o.config_path.clone(), o.config_line));
    let mut d = RULE
        .diagnostic(message)
        .help("make the call match the callee, or give the callee the parameter (in every config that patches it)");
    if let Some(loc) = &callee_origin {
        d = d.related(ctx.at_config(loc), format!("`{callee}` is defined here"));
    } else if let Some(loc) = callee_at {
        d = d.related(loc, format!("`{callee}` is defined here"));
    }
    ctx.at_generated(d, call.start(), callee_origin.as_ref())
}
