//! Settings, resolved once: for every option, the command line wins, then
//! the environment (`PATCHGEN_*`), then `[tool.patchgen]` in the project's
//! `pyproject.toml`, then the default. Nothing else reads the environment
//! or the pyproject section for an option.
//!
//! [`Options`] is the `[tool.patchgen]` table as written (serde, unknown
//! keys refused with the file, line and nearest known key); its keys are
//! the reference's (`search_root`, `package_prefix`,
//! `legacy_patches_prefix`, `ruff_extra_ignore`, `ruff_isolated`) plus ours
//! (`ruff`, `cache-dir`, the `[tool.patchgen.lint]` sub-table).
//! [`Resolved`] is what a command runs with. `docs/cli.md` lists every
//! setting with its flag, environment variable and key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::normalize::Ruff;
use crate::project::Project;

mod env;
pub use env::Env;

/// `[tool.patchgen]` as written in `pyproject.toml`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Where `*_patch_gen_config.py` files live (relative to the pyproject).
    pub search_root: Option<String>,
    /// Dotted module prefix of `search_root`.
    pub package_prefix: Option<String>,
    /// `patches.X` shorthand prefix (the reference's legacy layout).
    pub legacy_patches_prefix: Option<String>,
    /// Ruff codes ignored on top of `E402,B007`.
    pub ruff_extra_ignore: Option<Vec<String>>,
    /// Pass `--isolated` to ruff.
    pub ruff_isolated: Option<bool>,
    /// The ruff binary (ours).
    pub ruff: Option<String>,
    /// Where patchgen keeps its caches (ours).
    #[serde(rename = "cache-dir")]
    pub cache_dir: Option<String>,
    /// Where `patchgen reference` writes upstream sources (ours).
    #[serde(rename = "reference-dir")]
    pub reference_dir: Option<String>,
    /// Largest file patchgen reads, in bytes (ours).
    #[serde(rename = "max-file-size")]
    pub max_file_size: Option<u64>,
    /// `[tool.patchgen.lint]`.
    pub lint: Option<LintOptions>,
}

/// `[tool.patchgen.lint]`: which lint rules run (the `lint` command).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LintOptions {
    /// Rule codes or prefixes to enable (replaces the default set).
    pub select: Option<Vec<String>>,
    /// Rule codes or prefixes to disable.
    pub ignore: Option<Vec<String>>,
    /// Rule codes or prefixes enabled on top of `select`.
    pub extend_select: Option<Vec<String>>,
    /// Glob (relative to the pyproject's directory) → codes ignored in matching files.
    pub per_file_ignores: Option<BTreeMap<String, Vec<String>>>,
    /// PG102: methods the runtime calls by name (replaces the default list).
    pub framework_hooks: Option<Vec<String>>,
    /// PG102: added to the hook list.
    pub extend_framework_hooks: Option<Vec<String>>,
    /// PG202: `<m>_<suffix>_…` sibling configs, the reference suffix first.
    pub sibling_suffixes: Option<Vec<String>>,
    /// PG201: packages whose helpers are checked at call sites.
    pub first_party: Option<Vec<String>>,
    /// PG106: attributes every module has (added to the framework list).
    pub extend_framework_attrs: Option<Vec<String>>,
}

/// The keys of `[tool.patchgen]` and `[tool.patchgen.lint]`, for messages.
pub const KEYS: [&str; 10] = [
    "search_root",
    "package_prefix",
    "legacy_patches_prefix",
    "ruff_extra_ignore",
    "ruff_isolated",
    "ruff",
    "cache-dir",
    "reference-dir",
    "max-file-size",
    "lint",
];
pub const LINT_KEYS: [&str; 9] = [
    "select",
    "ignore",
    "extend-select",
    "per-file-ignores",
    "framework-hooks",
    "extend-framework-hooks",
    "sibling-suffixes",
    "first-party",
    "extend-framework-attrs",
];

/// The output format before a project is found (errors need it too): the
/// flag, else a valid `PATCHGEN_OUTPUT_FORMAT`, else text. Once the project
/// is known, [`resolve`] decides it for good (and rejects a bad value).
pub fn early_format(flag: Option<patchgen_diagnostics::Format>, env: &Env) -> patchgen_diagnostics::Format {
    flag.or_else(|| env.value("PATCHGEN_OUTPUT_FORMAT").and_then(|v| v.parse().ok())).unwrap_or_default()
}

/// The output format: the flag, else `PATCHGEN_OUTPUT_FORMAT` (an
/// invalid value is an error), else text.
pub fn output_format(
    flag: Option<patchgen_diagnostics::Format>,
    env: &Env,
) -> Result<patchgen_diagnostics::Format, SettingsError> {
    match (flag, env.value("PATCHGEN_OUTPUT_FORMAT")) {
        (Some(f), _) => Ok(f),
        (None, Some(v)) => v.parse().map_err(|_| SettingsError::Env {
            name: "PATCHGEN_OUTPUT_FORMAT",
            value: v.clone(),
            message: format!("expected {}", patchgen_diagnostics::format::EXPECTED),
        }),
        (None, None) => Ok(patchgen_diagnostics::Format::Text),
    }
}

/// Where version wheels are cached: `${PATCHGEN_CACHE:-<project root>/.cache}/wheels`.
pub fn wheel_cache_dir(env: &Env, project_root: &Path) -> PathBuf {
    match env.value("PATCHGEN_CACHE") {
        Some(c) => PathBuf::from(c).join("wheels"),
        None => project_root.join(".cache").join("wheels"),
    }
}

/// How ruff runs over many files: `PATCHGEN_RUFF_MODE=per-file` forces one
/// ruff pair per file (for measurements and as an escape hatch; deliberately
/// not a flag), else batches.
pub fn ruff_mode(env: &Env) -> crate::normalize::Mode {
    match env.value("PATCHGEN_RUFF_MODE").as_deref() {
        Some("per-file") => crate::normalize::Mode::PerFile,
        _ => crate::normalize::Mode::Batch,
    }
}

/// A whole-number variable (`None` when unset).
fn whole_number(env: &Env, name: &'static str) -> Result<Option<u64>, SettingsError> {
    match env.value(name) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| SettingsError::Env {
            name,
            value: v,
            message: "not a whole number".into(),
        }),
    }
}

/// `PATCHGEN_REMOTE_TIMEOUT`: seconds before a remote checkpoint request gives up (`moe`).
pub fn remote_timeout_secs(env: &Env) -> Result<Option<u64>, SettingsError> {
    whole_number(env, "PATCHGEN_REMOTE_TIMEOUT")
}

/// `PATCHGEN_REMOTE_RETRIES`: how often a failed remote request is retried (`moe`).
pub fn remote_retries(env: &Env) -> Result<Option<u64>, SettingsError> {
    whole_number(env, "PATCHGEN_REMOTE_RETRIES")
}

/// `PATCHGEN_DOCS_URL`: where the documentation is published (the
/// directory holding `rules/` and `diagnostics.md`, ending in `/`; one is
/// added when missing). The `sarif` report's rules link there (`helpUri`);
/// without it they carry their documentation inline only.
pub fn docs_url(env: &Env) -> Option<String> {
    env.value("PATCHGEN_DOCS_URL").map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).map(|mut v| {
        if !v.ends_with('/') {
            v.push('/');
        }
        v
    })
}

/// `PATCHGEN_TIMINGS=1`: print phase timings on stderr (`crate::timings`).
pub fn timings_enabled(env: &Env) -> bool {
    env.value("PATCHGEN_TIMINGS").is_some_and(|v| v != "0")
}

/// A problem with the settings (exit code 2).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SettingsError {
    #[error("{path}:{line}: unknown key `{key}` in [{table}]\n  help: {help}")]
    UnknownKey { path: PathBuf, line: usize, key: String, table: &'static str, help: String },
    #[error("{path}:{line}: invalid TOML: {message}")]
    Toml { path: PathBuf, line: usize, message: String },
    #[error("{path}:{line}: [tool.patchgen] {message}")]
    Invalid { path: PathBuf, line: usize, message: String },
    #[error("{name}={value}: {message}")]
    Env { name: &'static str, value: String, message: String },
}

#[derive(Deserialize)]
struct Document {
    tool: Option<Tool>,
}

#[derive(Deserialize)]
struct Tool {
    patchgen: Option<toml::Value>,
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    patchgen_diagnostics::LineIndex::new(text).line_of(offset.min(text.len()))
}

impl Options {
    /// `[tool.patchgen]` of a pyproject's text; `Ok(None)` without the
    /// section. `path` names the file in errors.
    pub fn from_pyproject(path: &Path, text: &str) -> Result<Option<Options>, SettingsError> {
        let doc: Document = toml::from_str(text).map_err(|e| SettingsError::Toml {
            path: path.to_path_buf(),
            line: e.span().map_or(0, |s| line_of(text, s.start)),
            message: e.message().trim().to_string(),
        })?;
        if doc.tool.and_then(|t| t.patchgen).is_none() {
            return Ok(None);
        }
        // Deserialised again from the text, so that errors carry spans.
        #[derive(Deserialize)]
        struct Doc {
            tool: ToolOptions,
        }
        #[derive(Deserialize)]
        struct ToolOptions {
            patchgen: Options,
        }
        let doc: Doc = toml::from_str(text).map_err(|e| Self::error(path, text, &e))?;
        Ok(Some(doc.tool.patchgen))
    }

    fn error(path: &Path, text: &str, e: &toml::de::Error) -> SettingsError {
        let span = e.span().unwrap_or(0..0);
        let line = line_of(text, span.start);
        let message = e.message().trim().to_string();
        if let Some(rest) = message.strip_prefix("unknown field `") {
            let key = rest.split('`').next().unwrap_or_default().to_string();
            let lint = message.contains("`per-file-ignores`");
            let (table, known): (&'static str, &[&str]) =
                if lint { ("tool.patchgen.lint", &LINT_KEYS) } else { ("tool.patchgen", &KEYS) };
            let help = match nearest(&key, known) {
                Some(k) => format!("did you mean `{k}`? (known keys: {})", known.join(", ")),
                None => format!("known keys: {}", known.join(", ")),
            };
            return SettingsError::UnknownKey { path: path.to_path_buf(), line, key, table, help };
        }
        // Name the key the value belongs to: the text before `=` on its line.
        let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
        let message = match line_text.split_once('=') {
            Some((key, _)) if !key.trim().starts_with('[') => format!("`{}`: {message}", key.trim()),
            _ => message,
        };
        SettingsError::Invalid { path: path.to_path_buf(), line, message }
    }
}

/// The known word closest to `word`, if one is close enough to be a typo.
pub fn nearest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(&word.replace('-', "_"), &k.replace('-', "_")), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// What the command line says about settings (`None`: not given).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub ruff: Option<PathBuf>,
    pub jobs: Option<usize>,
    pub format: Option<patchgen_diagnostics::Format>,
    /// `--no-cache`.
    pub no_cache: bool,
}

/// Settings every command runs with.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub ruff: Ruff,
    /// Worker threads (`None`: one per CPU).
    pub jobs: Option<usize>,
    pub format: patchgen_diagnostics::Format,
    /// `None`: each cache's own default.
    pub cache_dir: Option<PathBuf>,
    /// Neither read nor write the result cache (`--no-cache`, `PATCHGEN_NO_CACHE`).
    pub no_cache: bool,
    /// Largest file read, in bytes (`PATCHGEN_MAX_FILE_SIZE`, `max-file-size`; 16 MiB).
    pub max_file_size: u64,
    pub lint: LintOptions,
}

fn env_bool(name: &'static str, value: String) -> Result<bool, SettingsError> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(SettingsError::Env { name, value, message: "expected true or false".into() }),
    }
}

/// A path from the pyproject: relative to its directory.
fn from_root(root: &Path, p: &str) -> PathBuf {
    let p = PathBuf::from(p);
    if p.is_relative() { root.join(p) } else { p }
}

/// Which ruff runs: `--ruff`, else `PATCHGEN_RUFF`, else `ruff` in
/// `[tool.patchgen]` (a relative path with a `/` from the pyproject's
/// directory), else `ruff` on `PATH`; its flags from `PATCHGEN_RUFF_*` or
/// the reference's keys.
pub fn ruff(cli: Option<&Path>, env: &Env, project: &Project) -> Result<Ruff, SettingsError> {
    let program = cli
        .map(Path::to_path_buf)
        .or_else(|| env.value("PATCHGEN_RUFF").map(PathBuf::from))
        .or_else(|| project.settings.ruff.clone())
        .unwrap_or_else(|| PathBuf::from("ruff"));
    let isolated = match env.value("PATCHGEN_RUFF_ISOLATED") {
        Some(v) => env_bool("PATCHGEN_RUFF_ISOLATED", v)?,
        None => project.settings.ruff_isolated,
    };
    let extra_ignore = match env.value("PATCHGEN_RUFF_EXTRA_IGNORE") {
        Some(v) => v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect(),
        None => project.settings.ruff_extra_ignore.clone(),
    };
    Ok(Ruff { program, extra_ignore, isolated, env: env.clone() })
}

/// [`ruff`], with invalid `PATCHGEN_RUFF*` values ignored (the variables
/// unset) rather than an error: for contexts made after the command has
/// resolved and reported the settings.
pub fn ruff_or_default(cli: Option<&Path>, env: &Env, project: &Project) -> Ruff {
    ruff(cli, env, project).unwrap_or_else(|_| {
        let unset = env.without(&["PATCHGEN_RUFF", "PATCHGEN_RUFF_ISOLATED", "PATCHGEN_RUFF_EXTRA_IGNORE"]);
        ruff(cli, &unset, project).expect("no PATCHGEN_RUFF_*, no error")
    })
}

impl Resolved {
    /// Where the result cache is: `PATCHGEN_CACHE_DIR` (from the working
    /// directory) or `cache-dir` (from the pyproject's directory), else
    /// `.patchgen_cache` next to the pyproject.
    pub fn cache_path(&self, cwd: &Path, project_root: &Path) -> PathBuf {
        match &self.cache_dir {
            Some(d) => cwd.join(d),
            None => project_root.join(patchgen_cache::DEFAULT_DIR),
        }
    }

    pub fn resolve(cli: &Overrides, env: &Env, project: &Project) -> Result<Resolved, SettingsError> {
        let jobs = match (cli.jobs, env.value("PATCHGEN_JOBS")) {
            (Some(j), _) => Some(j),
            (None, Some(v)) => Some(v.parse().map_err(|_| SettingsError::Env {
                name: "PATCHGEN_JOBS",
                value: v.clone(),
                message: "expected a number".into(),
            })?),
            (None, None) => None,
        };
        let format = output_format(cli.format, env)?;
        let cache_dir =
            env.value("PATCHGEN_CACHE_DIR").map(PathBuf::from).or_else(|| project.settings.cache_dir.clone());
        let no_cache = cli.no_cache
            || match env.value("PATCHGEN_NO_CACHE") {
                Some(v) => env_bool("PATCHGEN_NO_CACHE", v)?,
                None => false,
            };
        let max_file_size = match env.value("PATCHGEN_MAX_FILE_SIZE") {
            Some(v) => v.parse().map_err(|_| SettingsError::Env {
                name: "PATCHGEN_MAX_FILE_SIZE",
                value: v.clone(),
                message: "expected a number of bytes".into(),
            })?,
            None => project.settings.max_file_size.unwrap_or(patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE),
        };
        Ok(Resolved {
            ruff: ruff(cli.ruff.as_deref(), env, project)?,
            jobs,
            format,
            cache_dir,
            no_cache,
            max_file_size,
            lint: lint_from_env(env, &project.settings.lint),
        })
    }

    /// `lint`'s `--select` (replaces), `--extend-select` and `--ignore`
    /// (added to what the environment and `[tool.patchgen.lint]` say).
    pub fn with_lint_flags(mut self, flags: &LintFlags) -> Resolved {
        if let Some(select) = &flags.select {
            self.lint.select = Some(select.clone());
        }
        let extend = |v: &mut Option<Vec<String>>, more: &[String]| {
            if !more.is_empty() {
                v.get_or_insert_with(Vec::new).extend(more.iter().cloned());
            }
        };
        extend(&mut self.lint.extend_select, &flags.extend_select);
        extend(&mut self.lint.ignore, &flags.ignore);
        self
    }
}

/// `lint`'s rule selection on the command line (`None`/empty: not given).
#[derive(Clone, Debug, Default)]
pub struct LintFlags {
    pub select: Option<Vec<String>>,
    pub extend_select: Vec<String>,
    pub ignore: Vec<String>,
}

/// `[tool.patchgen.lint]` with the environment applied:
/// `PATCHGEN_LINT_SELECT` replaces `select`; `PATCHGEN_LINT_EXTEND_SELECT`
/// and `PATCHGEN_LINT_IGNORE` add to `extend-select` and `ignore`
/// (comma-separated codes, prefixes or names).
fn lint_from_env(env: &Env, file: &LintOptions) -> LintOptions {
    let list = |name: &str| {
        env.value(name)
            .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect::<Vec<_>>())
    };
    let mut lint = file.clone();
    if let Some(select) = list("PATCHGEN_LINT_SELECT") {
        lint.select = Some(select);
    }
    for (name, field) in
        [("PATCHGEN_LINT_EXTEND_SELECT", &mut lint.extend_select), ("PATCHGEN_LINT_IGNORE", &mut lint.ignore)]
    {
        if let Some(more) = list(name) {
            field.get_or_insert_with(Vec::new).extend(more);
        }
    }
    lint
}

/// The project-level settings of [`Options`]: paths made absolute, required keys checked.
pub(crate) fn project_settings(
    pyproject: &Path,
    root: &Path,
    options: Options,
) -> Result<crate::project::Settings, crate::project::ProjectError> {
    let Options {
        search_root,
        package_prefix,
        legacy_patches_prefix,
        ruff_extra_ignore,
        ruff_isolated,
        ruff,
        cache_dir,
        reference_dir,
        max_file_size,
        lint,
    } = options;
    let (Some(search_root), Some(package_prefix)) = (search_root.clone(), package_prefix) else {
        let missing = if search_root.is_some() { "package_prefix" } else { "search_root" };
        return Err(crate::project::ProjectError::MissingKey { pyproject: pyproject.to_path_buf(), key: missing });
    };
    let ruff = ruff.map(|r| if r.contains('/') { from_root(root, &r) } else { PathBuf::from(r) });
    let resolved = crate::project::resolve(&root.join(search_root));
    let project = crate::project::resolve(root);
    if !resolved.starts_with(&project) {
        return Err(crate::project::ProjectError::SearchRootOutside {
            pyproject: pyproject.to_path_buf(),
            resolved,
            project,
        });
    }
    Ok(crate::project::Settings {
        search_root: resolved,
        package_prefix,
        legacy_patches_prefix,
        ruff_extra_ignore: ruff_extra_ignore.unwrap_or_default(),
        ruff_isolated: ruff_isolated.unwrap_or(false),
        ruff,
        cache_dir: cache_dir.map(|d| from_root(root, &d)),
        reference_dir: reference_dir.map(|d| from_root(root, &d)),
        max_file_size,
        lint: lint.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests;
