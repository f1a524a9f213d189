//! PG504 pin-consistency: a checked-in generated file based on another transformers version than the project pins, or a version gate the pin already satisfies (off by default).
//!
//! ## What it does
//! Reads the project's transformers pin (`transformers==X` in
//! `pyproject.toml`: project dependencies, optional dependencies,
//! dependency groups or `[tool.uv]` lists) and compares it with
//! - the `#  Based on: transformers==Y` line of each checked-in generated
//!   file;
//! - every `is_transformers_version_greater_or_equal_to("Y")` call in the
//!   config file, where `Y <= X` makes the gate always true.
//!
//! ## Why is this bad?
//! A generated file based on another version was generated against other
//! upstream code than the one the project runs: `--check` may pass in one
//! environment and drift in the next, and reviewers read a diff against the
//! wrong base. A gate the pin satisfies is dead code that hides which
//! branch really runs (the protocol: "do not add new version gates for
//! versions <= the pin").
//!
//! ## Example
//! ```python
//! if is_transformers_version_greater_or_equal_to("5.0.0"):  # pin: 5.9.0
//!     from transformers.masking_utils import create_causal_mask
//! ```
//!
//! ## Use instead
//! ```python
//! from transformers.masking_utils import create_causal_mask
//! ```
//! and regenerate every config after a pin bump (`patchgen generate --all`).

use ruff_python_ast::Expr;
use ruff_text_size::Ranged;

use super::super::{LintContext, Rule};
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_python::semantic::{
    facts,
    walk::{self, Scope},
};

pub const RULE: Rule = Rule {
    code: "PG504",
    name: "pin-consistency",
    default_on: false,
    severity: Severity::Warning,
    doc: include_str!("pg504_pin_consistency.rs"),
    check,
    check_project: None,
};

/// The version pinned as `transformers==X` anywhere in a `pyproject.toml`
/// value (a string in a list under any table), first one in document order.
pub fn pin(pyproject: &str) -> Option<String> {
    let value: toml::Value = toml::from_str(pyproject).ok()?;
    fn find(v: &toml::Value) -> Option<String> {
        match v {
            toml::Value::String(s) => {
                let s = s.trim();
                let rest = s.strip_prefix("transformers")?.trim_start();
                let rest = rest.strip_prefix("==")?.trim();
                let version: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
                (!version.is_empty()).then_some(version)
            }
            toml::Value::Array(a) => a.iter().find_map(find),
            toml::Value::Table(t) => t.values().find_map(find),
            _ => None,
        }
    }
    find(&value)
}

/// Numeric parts of a version (`5.16.1` → [5, 16, 1]; suffixes dropped).
pub fn version_key(v: &str) -> Vec<u64> {
    v.split('.')
        .map_while(|p| {
            let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()
        })
        .collect()
}

/// The `Based on: transformers==X` header line: (1-based line, X).
pub fn based_on(generated: &str) -> Option<(usize, String)> {
    generated.lines().take(40).enumerate().find_map(|(i, l)| {
        let rest = l.trim_start_matches('#').trim().strip_prefix("Based on: transformers==")?;
        Some((i + 1, rest.trim().to_string()))
    })
}

/// The project's pin, read once per run.
fn project_pin(ctx: &LintContext) -> Option<String> {
    ctx.shared
        .memo
        .project_pin
        .get_or_init(|| std::fs::read_to_string(&ctx.shared.pipeline.project.pyproject).ok().and_then(|t| pin(&t)))
        .clone()
}

/// The first lines of a file (its header), without reading all of it.
fn head(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 4096];
    let mut file = std::fs::File::open(path).ok()?;
    let n = file.read(&mut buf).ok()?;
    buf.truncate(n);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(pin) = project_pin(ctx) else {
        return out;
    };
    if let Some(text) = head(ctx.py_path())
        && let Some((line, based)) = based_on(&text)
        && version_key(&based) != version_key(&pin)
    {
        let anchor = super::super::patched::config_anchor(ctx);
        let py = ctx.py_path();
        out.push(
            RULE.diagnostic(format!(
                "the checked-in `{}` is based on transformers {based}, the project pins {pin}",
                py.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ))
            .help("regenerate against the pinned version (`patchgen generate --all`), or update the pin")
            .at(ctx.at_config(&anchor))
            .related(Location::line(py.to_path_buf(), line), "generated header"),
        );
    }
    for expr in walk::expressions(ctx.config.body(), Scope::All) {
        let Expr::Call(c) = expr else { continue };
        if facts::last_ident(&c.func) != Some("is_transformers_version_greater_or_equal_to") {
            continue;
        }
        let Some(Expr::StringLiteral(v)) = c.arguments.args.first() else {
            continue;
        };
        let gate = v.value.to_str();
        if version_key(gate) <= version_key(&pin) {
            out.push(
                RULE.diagnostic(format!(
                    "`is_transformers_version_greater_or_equal_to(\"{gate}\")` is always true with the pinned transformers {pin}"
                ))
                .help("drop the gate and keep only the branch the pin runs")
                .at(Location::from_offsets(ctx.config.path.clone(), &ctx.config.text, c.start().into(), c.end().into())),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_headers_and_versions() {
        let py = "[project]\nname = \"x\"\ndependencies = [\"torch>=2\"]\n[dependency-groups]\ntransformers-stable = [\n  \"transformers==5.9.0\"\n]\n";
        assert_eq!(pin(py).as_deref(), Some("5.9.0"));
        assert_eq!(pin("[project]\ndependencies = [\"transformers>=5\"]\n"), None);
        assert_eq!(
            pin("[project]\ndependencies = [\"transformers == 5.16.1 ; python_version>'3'\"]\n").as_deref(),
            Some("5.16.1")
        );
        let header =
            "# ===\n#  Source: transformers.models.qwen3.modeling_qwen3\n#  Based on: transformers==5.9.0\n#\n";
        assert_eq!(based_on(header), Some((3, "5.9.0".to_string())));
        assert!(version_key("5.16.1") > version_key("5.9.0"));
        assert!(version_key("5.9") <= version_key("5.9.0"));
        assert_eq!(version_key("5.17.0.dev0"), vec![5, 17, 0]);
    }
}
