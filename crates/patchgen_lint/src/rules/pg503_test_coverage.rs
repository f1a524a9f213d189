//! PG503 test-coverage: a registered model that the project's test tables do not exercise (off by default).
//!
//! ## What it does
//! Reads the project's model test tables — the files named
//! `test_models_patch.py`, `test_e2e_parallel.py` and
//! `test_models_logits_equal_v5.py` anywhere under `tests/` — and collects
//! the models each one covers: a string that names a toy config directory
//! (`"./tests/toy_config/qwen3_moe_toy/config.json"`, mapped to that toy's
//! `model_type`) or a registry key itself. Every
//! `@MODELING_REGISTRY.register("<key>")` of a model package is reported
//! with the tables that have no case for it.
//!
//! ## Why is this bad?
//! The tables are what runs the generated module at all: forward/backward
//! against HuggingFace, logits equality, parallel end-to-end training. A
//! model missing from them is only ever exercised by its users.
//!
//! ## Example
//! ```python
//! TEST_CASES = [
//!     pytest.param("./tests/toy_config/llama31_toy/config.json", False, id="llama3_1"),
//!     # no qwen3_moe entry
//! ]
//! ```
//!
//! ## Use instead
//! ```python
//! TEST_CASES = [
//!     pytest.param("./tests/toy_config/llama31_toy/config.json", False, id="llama3_1"),
//!     pytest.param("./tests/toy_config/qwen3_moe_toy/config.json", True, id="qwen3_moe"),
//! ]
//! ```

use std::path::{Path, PathBuf};

use ruff_python_ast::Expr;

use crate::{ProjectContext, Rule, package, toy_config};
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::walk::{self, Scope};

pub const RULE: Rule = Rule {
    code: "PG503",
    name: "test-coverage",
    default_on: false,
    severity: Severity::Info,
    doc: include_str!("pg503_test_coverage.rs"),
    check: |_| Vec::new(),
    check_project: Some(check_project),
};

/// The file names of the model test tables.
pub const TABLES: &[&str] = &["test_models_patch.py", "test_e2e_parallel.py", "test_models_logits_equal_v5.py"];

/// The table files under `tests/`, sorted.
fn table_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() && depth < 4 {
                walk(&p, out, depth + 1);
            } else if p.file_name().and_then(|n| n.to_str()).is_some_and(|n| TABLES.contains(&n)) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root.join("tests"), &mut out, 0);
    out.sort();
    out
}

/// The string literals of a table file.
pub fn strings(table: &ParsedFile) -> Vec<String> {
    walk::expressions(table.body(), Scope::All)
        .into_iter()
        .filter_map(|e| match e {
            Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            _ => None,
        })
        .collect()
}

/// Whether a table's strings cover `key`: the key itself, or a path
/// through a toy directory whose config has that `model_type`.
pub fn covers(strings: &[String], key: &str, toy_types: &[(String, Vec<String>)]) -> bool {
    strings.iter().any(|s| {
        s == key
            || toy_types
                .iter()
                .any(|(dir, types)| toy_config::is_for_model(types, key) && s.split('/').any(|part| part == dir))
    })
}

fn check_project(project: &ProjectContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(first) = project.configs.first() else {
        return out;
    };
    let shared = first.shared;
    let tables: Vec<(PathBuf, Vec<String>)> = table_files(shared.project_root())
        .into_iter()
        .filter_map(|p| shared.pipeline.loader.parse_file(&p).ok().map(|f| (p, strings(&f))))
        .collect();
    if tables.is_empty() {
        return out;
    }
    let toy_types: Vec<(String, Vec<String>)> = shared
        .toy_configs()
        .iter()
        .filter_map(|(path, json)| {
            let dir = path.parent()?.file_name()?.to_string_lossy().into_owned();
            let (types, _, _) = toy_config::text_dims(json);
            Some((dir, types))
        })
        .collect();
    for (ctx, init) in project.package_inits() {
        for reg in package::model_registrations(init) {
            let missing: Vec<&PathBuf> =
                tables.iter().filter(|(_, s)| !covers(s, &reg.key, &toy_types)).map(|(p, _)| p).collect();
            if missing.is_empty() {
                continue;
            }
            let names: Vec<String> = missing
                .iter()
                .map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
                .collect();
            let mut d = RULE
                .diagnostic(format!("model `{}` has no case in {}", reg.key, names.join(", ")))
                .help(
                    "add a case with its toy config to the tables (fwd/bwd against HF, logits equality, parallel e2e)",
                )
                .at(Location::line(init.path.clone(), reg.line))
                .config(ctx.module.clone());
            for p in missing {
                d = d.related(Location::file(p.clone()), "no case for this model");
            }
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_by_key_or_toy_dir() {
        let toys = vec![
            ("qwen3_moe_toy".to_string(), vec!["qwen3_moe".to_string()]),
            ("qwen3omni_toy".to_string(), vec!["qwen3_omni_moe".to_string(), "qwen3_omni_moe_text".to_string()]),
        ];
        let strings = vec!["./tests/toy_config/qwen3_moe_toy/config.json".to_string(), "llama".to_string()];
        assert!(covers(&strings, "qwen3_moe", &toys));
        assert!(covers(&strings, "llama", &toys));
        assert!(!covers(&strings, "qwen3_omni_moe", &toys));
        assert!(!covers(&strings, "qwen3", &toys));
    }
}
