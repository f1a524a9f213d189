//! Findings about a plan against its upstream module, where the reference
//! silently does something surprising: a target that does not exist, a
//! method injected instead of overridden, a target patched twice. The
//! output stays the reference's; these are warnings (`--strict` fails on them),
//! coded diagnostics (`patchgen_diagnostics::codes`) naming their config.
//! [`from_config_warning`] gives the config evaluator's warnings their codes.

use std::collections::HashMap;

use ruff_python_ast::{Expr, Stmt};

use patchgen_config::Warning;
use patchgen_config::plan::{Loc, Patch, PatchPlan, PatchType};
use patchgen_diagnostics::codes::{self, Code};
use patchgen_diagnostics::{Diagnostic, Location};
use patchgen_python::pysource::ParsedFile;

fn location(loc: &Loc) -> Location {
    Location::line(loc.path.clone(), loc.line)
}

fn diagnostic(code: Code, loc: &Loc, message: String, config: &str) -> Diagnostic {
    code.diagnostic(message).at(location(loc)).config(config)
}

/// A config evaluator's warning as a coded diagnostic of config `module`.
pub fn from_config_warning(w: &Warning, module: &str) -> Diagnostic {
    let code = if w.message.starts_with("this call registers nothing") {
        codes::DISCARDED_DECORATOR
    } else if w.message.starts_with("cannot find the source of") {
        codes::SOURCE_NOT_FOUND
    } else if w.message.starts_with("helper ") && w.message.contains("has no source") {
        codes::HELPER_WITHOUT_SOURCE
    } else {
        codes::CONFIG_WARNING
    };
    diagnostic(code, &w.loc, w.message.clone(), module)
}

/// The top-level classes and functions of an upstream module: what patch
/// targets are looked up in (codegen walks exactly these).
pub struct UpstreamNames<'a> {
    pub classes: HashMap<&'a str, &'a ruff_python_ast::StmtClassDef>,
    pub functions: Vec<&'a str>,
}

/// What a patch's target must be upstream and is not: `Some("class")`
/// when the class a `replace_class`, external patch, `modify_init` or
/// `override_method` names is not a top-level class, `Some("function")`
/// when a `replace_function` target is not a top-level function. Such a
/// patch does nothing (codegen applies patches while walking upstream's
/// top-level statements) though the generated header lists it.
pub fn missing_target(names: &UpstreamNames, patch: &Patch) -> Option<&'static str> {
    match patch.patch_type {
        PatchType::FunctionReplacement => (!names.functions.contains(&patch.target.as_str())).then_some("function"),
        PatchType::AdditionalImport => None,
        _ => {
            let class = patch.target.split_once('.').map_or(patch.target.as_str(), |(c, _)| c);
            (!names.classes.contains_key(class)).then_some("class")
        }
    }
}

pub fn upstream_names(file: &ParsedFile) -> UpstreamNames<'_> {
    let mut names = UpstreamNames { classes: HashMap::new(), functions: Vec::new() };
    for stmt in file.body() {
        match stmt {
            Stmt::ClassDef(c) => {
                names.classes.entry(c.name.id.as_str()).or_insert(c);
            }
            Stmt::FunctionDef(f) => names.functions.push(f.name.id.as_str()),
            _ => {}
        }
    }
    names
}

fn is_empty_body(class: &ruff_python_ast::StmtClassDef) -> bool {
    class.body.iter().any(|s| match s {
        Stmt::Pass(_) => true,
        Stmt::Expr(e) => matches!(&*e.value, Expr::EllipsisLiteral(_)),
        _ => false,
    })
}

/// Findings (warnings, then one note naming the methods injected rather
/// than overridden: a common, deliberate pattern, never fatal), and the
/// injected targets themselves.
pub struct Diagnosis {
    pub diagnostics: Vec<Diagnostic>,
    pub injected: Vec<String>,
}

/// `config` is the config module's name, which every diagnostic carries.
pub fn diagnose(plan: &PatchPlan, upstream: &ParsedFile, config: &str) -> Diagnosis {
    let names = upstream_names(upstream);
    let mut out = Vec::new();
    let mut injected = Vec::new();
    let mut injected_at: Option<&Loc> = None;
    let module = &plan.source_module;
    for p in &plan.patches {
        match p.patch_type {
            PatchType::ClassReplacement if missing_target(&names, p).is_some() => out.push(diagnostic(
                codes::MISSING_TARGET,
                &p.registered_at,
                format!(
                    "replace_class target `{}` is not a top-level class of `{module}`; the patch does nothing",
                    p.target
                ),
                config,
            )),
            PatchType::FunctionReplacement if missing_target(&names, p).is_some() => out.push(diagnostic(
                codes::MISSING_TARGET,
                &p.registered_at,
                format!(
                    "replace_function target `{}` is not a top-level function of `{module}`; the patch does nothing",
                    p.target
                ),
                config,
            )),
            PatchType::MethodOverride => {
                let (class, method) = p.target.split_once('.').unwrap_or((p.target.as_str(), ""));
                match names.classes.get(class) {
                    None => out.push(diagnostic(
                        codes::MISSING_TARGET,
                        &p.registered_at,
                        format!("override_method target class `{class}` is not a top-level class of `{module}`; the patch does nothing"),
                        config,
                    )),
                    Some(c) => {
                        let has_method = c.body.iter().any(|s| matches!(s, Stmt::FunctionDef(f) if f.name.id.as_str() == method));
                        if !has_method {
                            let how = if is_empty_body(c) { " (into the empty body)" } else { "" };
                            injected.push(format!("{}{how}", p.target));
                            injected_at.get_or_insert(&p.registered_at);
                        }
                    }
                }
            }
            PatchType::InitModification => out.push(diagnostic(
                codes::NOOP_MODIFY_INIT,
                &p.registered_at,
                format!(
                    "modify_init(`{}`) is listed in the header but changes no code (the reference never applies it)",
                    p.target
                ),
                config,
            )),
            _ => {}
        }
    }
    // The same target registered more than once (per patch type).
    let mut seen: Vec<(PatchType, &str, Vec<&Loc>)> = Vec::new();
    for p in &plan.patches {
        match seen.iter_mut().find(|(t, target, _)| *t == p.patch_type && *target == p.target) {
            Some(entry) => entry.2.push(&p.registered_at),
            None => seen.push((p.patch_type, &p.target, vec![&p.registered_at])),
        }
    }
    for (t, target, locs) in seen {
        if locs.len() > 1 && t != PatchType::InitModification {
            let lines: Vec<String> = locs.iter().map(|l| l.line.to_string()).collect();
            out.push(diagnostic(
                codes::DUPLICATE_REGISTRATION,
                locs[locs.len() - 1],
                format!(
                    "`{target}` is patched {} times ({} at lines {}): the output uses the last registration, placed where the first one was; the header lists all",
                    locs.len(),
                    t.value(),
                    lines.join(", ")
                ),
                config,
            ));
        }
    }
    if let Some(at) = injected_at {
        out.push(diagnostic(
            codes::INJECTED_METHOD,
            at,
            format!("{} method(s) not found upstream, injected: {}", injected.len(), injected.join(", ")),
            config,
        ));
    }
    Diagnosis { diagnostics: out, injected }
}
