//! The mechanical fixes a bump needs, made by `patchgen lint --fix`
//! (`patchgen_lint::fix`) on the ported configs, at the new upstream,
//! before regeneration: a target removed upstream that reappears under
//! another name is retargeted (PG101), stale `drop_import_names` entries
//! go (PG107), post-import placeholders that now shadow upstream
//! definitions go (PG108), auto_docstring entries are written (PG303), the
//! `__init__` override of a composite model that bypasses the auto classes
//! is written (PG306).
//!
//! Unsafe fixes among them are applied too (a bump's diff is reviewed as a
//! whole); `lint --fix`'s own safety net holds: a config that evaluated
//! and generated before the fixes and no longer does gets its files back
//! as they were. A config still holding conflict markers does not
//! evaluate, so it gets no fix until its conflicts are resolved (rerun
//! `patchgen lint --fix --unsafe-fixes --upstream V` then).
//!
//! Not a bump fix: PG106's attribute rename (the nearest name the new
//! class sets is a suggestion to review, not a mechanical change).

use std::path::{Path, PathBuf};

use patchgen_core::error::RunError;
use patchgen_core::survey::modules::Version;
use patchgen_lint::fix::{self, Mode, Selection};

use crate::Options;

/// The rules whose fixes a bump applies.
pub const RULES: [&str; 5] = ["PG101", "PG107", "PG108", "PG303", "PG306"];

/// One fix applied to a config: the rule's code and the config line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub code: String,
    pub line: usize,
}

/// The fixes applied to a file (a config, or a module a config imports).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub path: PathBuf,
    pub fix: Fix,
}

/// Apply the bump's fixes to `modules`' configs (and the files they read)
/// at the new upstream `to`, writing the files changed.
pub fn apply(opts: &Options, modules: &[String], to: &Version) -> Result<Vec<Applied>, RunError> {
    let args = patchgen_lint::run::Options {
        select: Some(RULES.iter().map(|c| c.to_string()).collect()),
        unsafe_fixes: true,
        ..opts.lint_options(modules, to)
    };
    let report = fix::run(&args, &opts.project_dir, Mode::Write, Selection::SafeAndUnsafe)?;
    Ok(report
        .fixed
        .map(|f| f.applied)
        .unwrap_or_default()
        .into_iter()
        .map(|a| Applied { path: a.path, fix: Fix { code: a.code, line: a.line } })
        .collect())
}

/// Whether `a` and `b` name the same file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    a == b || patchgen_core::project::resolve(a) == patchgen_core::project::resolve(b)
}

/// After a regeneration: every config whose generation failed on names
/// ruff calls undefined that the config itself imports gets their
/// `add_import` (`import_fix`), recorded as `F821` fixes. Whether any
/// config was written.
pub fn add_missing_imports(report: &mut crate::BumpReport, config_name: &str) -> Result<bool, RunError> {
    let package = report.package.clone();
    let mut wrote = false;
    for c in &mut report.configs {
        let crate::Generation::Failed(d) = &c.generation else { continue };
        let names = undefined_names(&format!("{}\n{}", d.message, d.help.as_deref().unwrap_or_default()));
        if names.is_empty() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&c.path) else { continue };
        let Some((fixed, applied)) = import_fix(&text, config_name, &package, &names) else { continue };
        patchgen_core::atomic::write(&c.path, &fixed)
            .map_err(|e| RunError::failed(format!("{}: cannot write the fixed config: {e}", c.path.display())))?;
        c.fixes.extend(applied);
        wrote = true;
    }
    Ok(wrote)
}

/// The names ruff's F821 says are undefined in a failed generation's
/// message (`Undefined name `Optional``), each once.
pub fn undefined_names(message: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in message.split("Undefined name `").skip(1) {
        let Some((name, _)) = part.split_once('`') else { continue };
        let is_name = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if is_name && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The fix of an undefined name the config itself imports (`from typing
/// import Optional` at its top, while the patch body relied on the
/// generated module's own import, which the new upstream dropped): a
/// `config.add_import("typing", names=["Optional"])` after the config's
/// `PatchConfig(...)` statement, one per name. `None` when the config
/// binds none of the names by a plain `from M import X` at module level.
/// A name imported from the bumped package itself (`package`, e.g.
/// `transformers.models.qwen3_5.modeling_qwen3_5`) is left alone: the new
/// upstream may well no longer define it there (a removed class), which is
/// a change for a person to read, not an import to copy.
pub fn import_fix(config_text: &str, config_name: &str, package: &str, names: &[String]) -> Option<(String, Vec<Fix>)> {
    use ruff_python_ast::Stmt;
    use ruff_text_size::Ranged;
    let parsed = ruff_python_parser::parse_module(config_text).ok()?;
    let body = &parsed.syntax().body;
    // `config = PatchConfig(...)`: where the additions go.
    let created = body.iter().find(|s| match s {
        Stmt::Assign(a) => {
            a.targets.iter().any(|t| matches!(t, ruff_python_ast::Expr::Name(n) if n.id.as_str() == config_name))
        }
        _ => false,
    })?;
    let mut additions = Vec::new();
    for name in names {
        let module = body.iter().find_map(|s| match s {
            Stmt::ImportFrom(i) if i.level == 0 => i
                .names
                .iter()
                .any(|a| a.name.id.as_str() == name && a.asname.is_none())
                .then(|| i.module.as_ref().map(|m| m.id.to_string()))
                .flatten(),
            _ => None,
        });
        let from_package = |m: &str| m == package || m.starts_with(&format!("{package}."));
        if let Some(module) = module.filter(|m| !from_package(m)) {
            additions.push(format!("{config_name}.add_import({module:?}, names=[{name:?}])\n"));
        }
    }
    if additions.is_empty() {
        return None;
    }
    let end = created.end().to_usize();
    let at = config_text[end..].find('\n').map_or(config_text.len(), |i| end + i + 1);
    let line = config_text[..at].matches('\n').count() + 1;
    let mut text = String::with_capacity(config_text.len() + 64);
    text.push_str(&config_text[..at]);
    text.push('\n');
    let fixes = (0..additions.len()).map(|i| Fix { code: "F821".into(), line: line + 1 + i }).collect();
    for a in &additions {
        text.push_str(a);
    }
    text.push_str(&config_text[at..]);
    Some((text, fixes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_names_from_ruff_output() {
        let m = "F821 Undefined name `Optional`\n  --> x.py:3:5\nF821 Undefined name `Optional`\nF821 Undefined name `torch_npu`";
        assert_eq!(undefined_names(m), ["Optional", "torch_npu"]);
    }

    #[test]
    fn an_import_the_config_has_becomes_an_add_import() {
        let text = "from typing import Optional\n\nfrom patchgen import PatchConfig\nfrom transformers.models.m.modeling_m import MCache\n\nconfig = PatchConfig(\n    source_module=\"m\",\n)\n\n\ndef f(x: Optional[int]):\n    pass\n";
        let (fixed, fixes) =
            import_fix(text, "config", "transformers", &["Optional".into(), "missing".into(), "MCache".into()])
                .unwrap();
        assert_eq!(
            fixed,
            "from typing import Optional\n\nfrom patchgen import PatchConfig\nfrom transformers.models.m.modeling_m import MCache\n\nconfig = PatchConfig(\n    source_module=\"m\",\n)\n\nconfig.add_import(\"typing\", names=[\"Optional\"])\n\n\ndef f(x: Optional[int]):\n    pass\n"
        );
        assert_eq!(fixes, [Fix { code: "F821".into(), line: 10 }]);
        // Not from the bumped package (the new upstream may not define it).
        assert_eq!(import_fix(text, "config", "transformers", &["MCache".into(), "missing".into()]), None);
    }
}
