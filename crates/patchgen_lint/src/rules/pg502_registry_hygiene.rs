//! PG502 registry-hygiene: registry keys upstream has no `model_type` for, architecture dispatch that can never reach a branch, a missing `None` guard, a package the models package does not import (off by default).
//!
//! ## What it does
//! For each model package (the `__init__.py` next to its configs) and each
//! `@MODELING_REGISTRY.register("<key>")` function in it:
//! - the key must be a `model_type = "..."` of the upstream configuration
//!   modules its configs patch (`gemma3` registers `gemma3_text`);
//! - in the chain of `"<Name>" in architecture` tests, a later string that
//!   contains an earlier one can never be reached (`"Model"` tested before
//!   `"ThinkerTextModel"`);
//! - when a toy config of that `model_type` has no `architectures`, the
//!   function is called with `None` and must guard it
//!   (`architecture = architecture or "XForCausalLM"`) before `in` tests;
//! - the parent package's `__init__.py` must import the model package, or
//!   the registration never runs.
//!
//! ## Why is this bad?
//! Registry mistakes fail at model-build time, far from the registration:
//! `Unknown Modeling name`, `TypeError: argument of type 'NoneType' is not
//! iterable`, or — worst — a dispatch that quietly returns the wrong class
//! for an architecture.
//!
//! ## Example
//! ```python
//! @MODELING_REGISTRY.register("qwen3_omni")  # upstream model_type: qwen3_omni_moe
//! def register(architecture: str):
//!     if "Model" in architecture:
//!         return Qwen3OmniMoeThinkerTextModel
//!     elif "ThinkerTextModel" in architecture:  # never reached
//!         ...
//! ```
//!
//! ## Use instead
//! ```python
//! @MODELING_REGISTRY.register("qwen3_omni_moe")
//! def register(architecture: str):
//!     architecture = architecture or "Qwen3OmniMoeForConditionalGeneration"
//!     if "ThinkerTextModel" in architecture:
//!         ...
//!     elif "Model" in architecture:
//!         ...
//! ```

use ruff_python_ast::{CmpOp, Expr, Stmt, StmtFunctionDef};
use ruff_text_size::Ranged;

use super::super::{ProjectContext, Rule, package, pyfacts};
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::facts;
use patchgen_python::semantic::walk::{self, Scope};

pub const RULE: Rule = Rule {
    code: "PG502",
    name: "registry-hygiene",
    default_on: false,
    severity: Severity::Warning,
    doc: include_str!("pg502_registry_hygiene.rs"),
    check: |_| Vec::new(),
    check_project: Some(check_project),
};

/// `model_type = "..."` values of a configuration module's classes.
pub fn model_types(configuration: &ParsedFile) -> Vec<String> {
    let mut out = Vec::new();
    for stmt in configuration.body() {
        let Stmt::ClassDef(c) = stmt else { continue };
        for s in &c.body {
            let Some((target, value)) = facts::one_target_assignment(s) else { continue };
            if let (Expr::Name(n), Expr::StringLiteral(v)) = (target, value)
                && n.id.as_str() == "model_type"
            {
                out.push(v.value.to_str().to_string());
            }
        }
    }
    out
}

/// The `"<s>" in <param>` tests of a function, in source order: (s, offset).
pub fn dispatch_tests<'a>(function: &'a StmtFunctionDef, param: &str) -> Vec<(&'a str, ruff_text_size::TextSize)> {
    let mut out = Vec::new();
    for expr in walk::expressions(&function.body, Scope::Own) {
        let Expr::Compare(c) = expr else { continue };
        if c.ops.len() != 1 || !matches!(c.ops[0], CmpOp::In) {
            continue;
        }
        if let (Expr::StringLiteral(s), Expr::Name(n)) = (&*c.left, &c.comparators[0])
            && n.id.as_str() == param
        {
            out.push((s.value.to_str(), c.start()));
        }
    }
    out
}

/// Later tests that an earlier, shorter test always catches first:
/// `(shadowed, by, offset)`.
pub fn shadowed<'a>(
    tests: &[(&'a str, ruff_text_size::TextSize)],
) -> Vec<(&'a str, &'a str, ruff_text_size::TextSize)> {
    let mut out = Vec::new();
    for (j, (later, at)) in tests.iter().enumerate() {
        if let Some((earlier, _)) = tests[..j].iter().find(|(e, _)| e != later && later.contains(e)) {
            out.push((*later, *earlier, *at));
        }
    }
    out
}

/// Whether the function makes `param` non-`None` before testing it:
/// `param = param or ...`, `if param is None`, `if not param`.
pub fn guards_none(function: &StmtFunctionDef, param: &str) -> bool {
    let mut found = false;
    walk::for_each_statement(&function.body, Scope::Own, |s| match s {
        Stmt::Assign(a)
            if a.targets.iter().any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == param))
                && matches!(&*a.value, Expr::BoolOp(_) | Expr::If(_)) =>
        {
            found = true;
        }
        Stmt::If(i) => {
            let t = &*i.test;
            let is_none_test = match t {
                Expr::Compare(c) => {
                    matches!(&*c.left, Expr::Name(n) if n.id.as_str() == param)
                        && c.ops.iter().any(|o| matches!(o, CmpOp::Is | CmpOp::Eq))
                        && c.comparators.iter().any(|e| matches!(e, Expr::NoneLiteral(_)))
                }
                Expr::UnaryOp(u) => matches!(&*u.operand, Expr::Name(n) if n.id.as_str() == param),
                _ => false,
            };
            found |= is_none_test;
        }
        _ => {}
    });
    found
}

fn first_param(function: &StmtFunctionDef) -> Option<&str> {
    pyfacts::param_names(&function.parameters).first().copied()
}

fn check_project(project: &ProjectContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (ctx, init) in project.package_inits() {
        // model_types of every configuration module this package's configs patch.
        let mut types: Vec<String> = Vec::new();
        for other in project.configs.iter().filter(|o| o.package_init().is_some_and(|i| i.path == init.path)) {
            if let Some(c) = other.upstream_configuration() {
                for t in model_types(c) {
                    if !types.contains(&t) {
                        types.push(t);
                    }
                }
            }
        }
        let here = |line: usize| Location::line(init.path.clone(), line);
        for reg in package::model_registrations(init) {
            if !types.is_empty() && !types.contains(&reg.key) {
                out.push(
                    RULE.diagnostic(format!(
                        "registry key `{}` is no `model_type` of the upstream configuration ({}): configs with that type never reach this function",
                        reg.key,
                        types.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
                    ))
                    .help("register the exact `model_type` the upstream configuration class declares")
                    .at(here(reg.line))
                    .config(ctx.module.clone()),
                );
            }
            let Some(param) = first_param(reg.function) else {
                continue;
            };
            let tests = dispatch_tests(reg.function, param);
            for (later, earlier, at) in shadowed(&tests) {
                out.push(
                    RULE.diagnostic(format!(
                        "`\"{later}\" in {param}` is never reached: the earlier test `\"{earlier}\" in {param}` matches every such architecture first"
                    ))
                    .help("test the more specific substring first")
                    .at(here(init.line_of(at)))
                    .config(ctx.module.clone()),
                );
            }
            if let Some((_, at)) = tests.first()
                && !guards_none(reg.function, param)
            {
                let toy = ctx.shared.toy_configs().iter().find(|(_, json)| {
                    json.get("model_type").and_then(|t| t.as_str()) == Some(reg.key.as_str())
                        && json.get("architectures").is_none_or(|a| a.is_null())
                });
                if let Some((toy, _)) = toy {
                    out.push(
                        RULE.diagnostic(format!(
                            "`\"…\" in {param}` with no `None` guard, and `{}` has no `architectures`: building it raises `TypeError: argument of type 'NoneType' is not iterable`",
                            toy.strip_prefix(ctx.shared.project_root()).unwrap_or(toy).display()
                        ))
                        .help(format!("start the function with `{param} = {param} or \"<default architecture>\"`"))
                        .at(here(init.line_of(*at)))
                        .related(Location::file(toy.clone()), "toy config without architectures")
                        .config(ctx.module.clone()),
                    );
                }
            }
        }
        // The parent package must import this one.
        let (Some(dir), Some(parent)) = (init.path.parent(), init.path.parent().and_then(|d| d.parent())) else {
            continue;
        };
        let Some(name) = dir.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let Ok(parent_init) = ctx.shared.pipeline.loader.parse_file(&parent.join("__init__.py")) else {
            continue;
        };
        let imported = parent_init.body().iter().any(|s| match s {
            Stmt::ImportFrom(i) => {
                (i.level > 0 && i.module.is_none() && i.names.iter().any(|a| a.name.id.as_str() == name))
                    || i.module
                        .as_ref()
                        .is_some_and(|m| m.id.as_str() == name || m.id.as_str().ends_with(&format!(".{name}")))
            }
            Stmt::Import(i) => i.names.iter().any(|a| a.name.id.as_str().ends_with(&format!(".{name}"))),
            _ => false,
        });
        if !imported && let Some(reg) = package::model_registrations(init).first() {
            out.push(
                RULE.diagnostic(format!(
                    "`{}` does not import `{name}`: its registrations never run",
                    parent.join("__init__.py").display()
                ))
                .help(format!("add `from . import {name}` (and `\"{name}\"` to `__all__`)"))
                .at(here(reg.line))
                .config(ctx.module.clone()),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pyfacts::parsed as parse;

    #[test]
    fn dispatch_order_and_guard() {
        let f = parse(
            "def register(architecture):\n    if \"Model\" in architecture:\n        return A\n    elif \"ThinkerTextModel\" in architecture:\n        return B\n    elif \"ForCausalLM\" in architecture:\n        return C\n    return D\n",
        );
        let Stmt::FunctionDef(fd) = &f.body()[0] else { panic!() };
        let tests = dispatch_tests(fd, "architecture");
        assert_eq!(tests.iter().map(|(s, _)| *s).collect::<Vec<_>>(), ["Model", "ThinkerTextModel", "ForCausalLM"]);
        let sh = shadowed(&tests);
        assert_eq!(sh.iter().map(|(l, e, _)| (*l, *e)).collect::<Vec<_>>(), [("ThinkerTextModel", "Model")]);
        assert!(!guards_none(fd, "architecture"));
        let g = parse("def r(arch):\n    arch = arch or \"X\"\n    if \"M\" in arch:\n        return 1\n");
        let Stmt::FunctionDef(gd) = &g.body()[0] else { panic!() };
        assert!(guards_none(gd, "arch"));
        let h = parse("def r(arch):\n    if arch is None:\n        arch = \"X\"\n");
        let Stmt::FunctionDef(hd) = &h.body()[0] else { panic!() };
        assert!(guards_none(hd, "arch"));
    }

    #[test]
    fn model_types_of_configuration() {
        let f = parse(
            "class A(PreTrainedConfig):\n    model_type = \"a\"\nclass B(PreTrainedConfig):\n    model_type: str = \"a_text\"\n",
        );
        assert_eq!(model_types(&f), ["a", "a_text"]);
    }
}
