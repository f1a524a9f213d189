//! PG104 unresolved-import: an import of the upstream package in the generated module that does not resolve in that upstream version.
//!
//! ## What it does
//! Checks every `import transformers.…` and `from transformers.… import name`
//! in the generated module — module level and inside functions — against the
//! upstream version being linted, statically: the module must exist (a file
//! or a package), and each imported name must be a submodule, bound at the
//! module's top level (definitions, assignments, imports, also inside
//! `try`/`if`), re-exported through `from .x import *`, listed in a lazy
//! package's import structure, or served by a module `__getattr__`.
//!
//! ## Why is this bad?
//! Importing the generated module is what would catch this, and that needs
//! torch (and, for NPU modules, `torch_npu`), so CI usually never does it. An
//! import inside a patched function fails only when that function first runs.
//! Upstream moves and removes helpers between versions (`check_model_inputs`,
//! `Optional` re-exports, masking utilities), so a pin bump breaks imports
//! the configs added.
//!
//! ## Example
//! ```python
//! config.add_import("transformers.utils.generic", names=["check_model_inputs"])  # removed upstream
//! ```
//!
//! ## Use instead
//! Import the name from where this upstream version defines it (the
//! upstream modeling file's own imports show the current spelling).

use ruff_python_ast::Stmt;
use ruff_text_size::{Ranged, TextSize};

use std::collections::HashSet;

use super::super::context::Shared;
use super::super::{LintContext, Rule};
use patchgen_core::codegen::imports::absolute_module;
use patchgen_diagnostics::{Diagnostic, Severity};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::walk::{self, Scope};

pub const RULE: Rule = Rule {
    code: "PG104",
    name: "unresolved-import",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg104_unresolved_import.rs"),
    check,
    check_project: None,
};

/// Every import statement, nested ones included: (absolute module, names,
/// offset), relative imports resolved against `base` (the module's name).
fn imports_of(body: &[Stmt], base: &str) -> Vec<(String, Vec<String>, TextSize)> {
    let mut found = Vec::new();
    for stmt in walk::statements(body, Scope::All) {
        match stmt {
            Stmt::Import(i) => {
                for a in &i.names {
                    found.push((a.name.id.to_string(), Vec::new(), stmt.start()));
                }
            }
            Stmt::ImportFrom(i) => {
                let module = i.module.as_ref().map(|m| m.id.as_str());
                let absolute =
                    if i.level == 0 { module.map(str::to_string) } else { absolute_module(base, module, i.level) };
                if let Some(m) = absolute {
                    let names = i.names.iter().map(|a| a.name.id.to_string()).filter(|n| n != "*").collect();
                    found.push((m, names, stmt.start()));
                }
            }
            _ => {}
        }
    }
    found
}

/// The parsed file of `module` (a module or a package's `__init__`).
fn module_file(shared: &Shared, module: &str) -> Option<std::sync::Arc<ParsedFile>> {
    shared.upstream_module(module).or_else(|| shared.upstream_package_init(module))
}

const MAX_DEPTH: usize = 6;

/// Whether `name` can be imported from `module` of the upstream.
fn provides(shared: &Shared, module: &str, name: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true; // give up quietly rather than guess wrong
    }
    if shared.upstream_module_exists(&format!("{module}.{name}")) {
        return true;
    }
    let Some(file) = module_file(shared, module) else {
        return false;
    };
    if shared.upstream_bindings(module).is_some_and(|b| b.contains(name) || b.contains("__getattr__")) {
        return true;
    }
    // Lazy packages list their names as strings (`_import_structure`).
    let quoted = [format!("\"{name}\""), format!("'{name}'")];
    if quoted.iter().any(|q| file.text.contains(q.as_str())) {
        return true;
    }
    // `from .x import *` (also inside `if TYPE_CHECKING:`).
    let is_package = shared.upstream_module(module).is_none();
    let package = if is_package {
        module.to_string()
    } else {
        module.rsplit_once('.').map_or(String::new(), |(p, _)| p.to_string())
    };
    let mut stars = Vec::new();
    collect_stars(file.body(), &package, &mut stars);
    stars.iter().any(|m| provides(shared, m, name, depth + 1))
}

/// The modules of a module's `from m import *` statements, wherever its
/// own code runs them (an `if`, a `try` and its handlers, a loop).
fn collect_stars(body: &[Stmt], package: &str, out: &mut Vec<String>) {
    for stmt in walk::statements(body, Scope::Own) {
        let Stmt::ImportFrom(i) = stmt else { continue };
        if !i.names.iter().any(|a| a.name.id.as_str() == "*") {
            continue;
        }
        let m = i.module.as_ref().map(|m| m.id.to_string());
        let target = if i.level == 0 {
            m
        } else {
            let mut base = package.to_string();
            for _ in 1..i.level {
                base = base.rsplit_once('.').map_or(String::new(), |(p, _)| p.to_string());
            }
            Some(match m {
                Some(m) => format!("{base}.{m}"),
                None => base,
            })
        };
        out.extend(target);
    }
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let package = ctx.plan.source_module.split('.').next().unwrap_or_default();
    if package.is_empty() {
        return Vec::new();
    }
    // What the upstream module itself imports resolves by construction
    // (codegen copies those imports from this very upstream).
    let upstream_imports: HashSet<(String, String)> = imports_of(ctx.upstream.body(), &ctx.plan.source_module)
        .into_iter()
        .flat_map(|(m, names, _)| {
            let module_only = (m.clone(), String::new());
            names.into_iter().map(move |n| (m.clone(), n)).chain(std::iter::once(module_only))
        })
        .collect();
    let mut out = Vec::new();
    for (module, names, at) in imports_of(ctx.generated.body(), "") {
        if module != package && !module.starts_with(&format!("{package}.")) {
            continue;
        }
        let names: Vec<String> =
            names.into_iter().filter(|n| !upstream_imports.contains(&(module.clone(), n.clone()))).collect();
        if names.is_empty() && upstream_imports.contains(&(module.clone(), String::new())) {
            continue;
        }
        let problem = if !ctx.shared.upstream_module_exists(&module) {
            Some(format!(
                "module `{module}` does not exist in upstream {package} {}",
                ctx.shared.upstream.upstream.version
            ))
        } else {
            let missing: Vec<&String> = names.iter().filter(|n| !provides(ctx.shared, &module, n, 0)).collect();
            (!missing.is_empty()).then(|| {
                let list: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
                format!(
                    "`{module}` does not provide {} in upstream {package} {}",
                    list.join(", "),
                    ctx.shared.upstream.upstream.version
                )
            })
        };
        let Some(message) = problem else { continue };
        let d = RULE
            .diagnostic(format!("{message}: importing the generated module (or running this code) raises ImportError"))
            .help("import it from where this upstream version defines it, or drop it");
        let fallback =
            ctx.config_line_containing(&module).or_else(|| names.first().and_then(|n| ctx.config_line_containing(n)));
        out.push(ctx.at_generated(d, at, fallback.as_ref()));
    }
    out
}
