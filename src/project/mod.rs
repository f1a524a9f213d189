//! The project: `[tool.patchgen]` from the nearest `pyproject.toml` walking
//! up from the working directory, and discovery of
//! `search_root/**/*_patch_gen_config.py`.

use std::path::{Path, PathBuf};

/// `[tool.patchgen]`, as the reference reads it (plus `ruff`, ours).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Absolute, resolved.
    pub search_root: PathBuf,
    pub package_prefix: String,
    pub legacy_patches_prefix: Option<String>,
    pub ruff_extra_ignore: Vec<String>,
    pub ruff_isolated: bool,
    /// The ruff binary to use (ours; relative paths are from the pyproject's directory).
    pub ruff: Option<PathBuf>,
    /// `cache-dir` (ours), absolute.
    pub cache_dir: Option<PathBuf>,
    /// `reference-dir` (ours), absolute: where `patchgen reference` writes
    /// (default `<root>/.agents_workspace/hf_reference`).
    pub reference_dir: Option<PathBuf>,
    /// `[tool.patchgen.lint]`.
    pub lint: crate::settings::LintOptions,
}

#[derive(Clone, Debug)]
pub struct Project {
    pub pyproject: PathBuf,
    pub root: PathBuf,
    pub settings: Settings,
}

/// A usage or project-configuration problem (exit code 2): the message
/// names the file (and line) and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProjectError(pub String);

pub const SECTION_TEMPLATE: &str = "  [tool.patchgen]\n  search_root = \"<dir containing *_patch_gen_config.py>\"\n  package_prefix = \"<dotted import prefix>\"\n";

/// A discovered config file.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    pub module: String,
    pub path: PathBuf,
}

/// `Path.resolve()` (non-strict): canonical where the path exists.
pub fn resolve(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

impl Project {
    /// The nearest `pyproject.toml` with a `[tool.patchgen]` table, from `start` up.
    pub fn find(start: &Path) -> Result<Project, ProjectError> {
        let start = resolve(start);
        for dir in start.ancestors() {
            let candidate = dir.join("pyproject.toml");
            if !candidate.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&candidate)
                .map_err(|e| ProjectError(format!("{}: cannot read: {e}", candidate.display())))?;
            let options =
                crate::settings::Options::from_pyproject(&candidate, &text).map_err(|e| ProjectError(e.to_string()))?;
            let Some(options) = options else { continue };
            let settings = crate::settings::project_settings(&candidate, dir, options)?;
            return Ok(Project { pyproject: candidate, root: dir.to_path_buf(), settings });
        }
        Err(ProjectError(format!(
            "no [tool.patchgen] section found in any pyproject.toml from the current directory up. Add a section like:\n\n{SECTION_TEMPLATE}"
        )))
    }

    /// The directory holding the first segment of `package_prefix`.
    pub fn package_root(&self) -> PathBuf {
        let depth = self.settings.package_prefix.split('.').count();
        let mut p = self.settings.search_root.clone();
        for _ in 0..depth {
            if !p.pop() {
                break;
            }
        }
        p
    }

    /// `patches.<x>` → `<legacy_patches_prefix>.<x>`.
    pub fn normalize_module(&self, module: &str) -> String {
        match (&self.settings.legacy_patches_prefix, module.strip_prefix("patches.")) {
            (Some(prefix), Some(rest)) if !prefix.is_empty() => format!("{prefix}.{rest}"),
            _ => module.to_string(),
        }
    }

    /// Every `*_patch_gen_config.py` under `search_root` (names starting with
    /// `_` skipped), sorted by path components as Python's `sorted(rglob())`.
    pub fn discover(&self) -> Result<Vec<ConfigFile>, ProjectError> {
        let root = &self.settings.search_root;
        if !root.exists() {
            return Err(ProjectError(format!(
                "{}: [tool.patchgen] search_root `{}` does not exist",
                self.pyproject.display(),
                root.display()
            )));
        }
        let mut found: Vec<Vec<String>> = Vec::new();
        walk(root, &mut Vec::new(), &mut found);
        found.sort();
        Ok(found
            .into_iter()
            .map(|parts| {
                let mut path = root.clone();
                for p in &parts {
                    path.push(p);
                }
                let mut module_parts = vec![self.settings.package_prefix.clone()];
                let last = parts.len() - 1;
                for (i, p) in parts.iter().enumerate() {
                    module_parts.push(if i == last { p.trim_end_matches(".py").to_string() } else { p.clone() });
                }
                ConfigFile { module: module_parts.join("."), path }
            })
            .collect())
    }
}

/// `rglob("*_patch_gen_config.py")`, not following symlinked directories.
fn walk(dir: &Path, rel: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            rel.push(name);
            walk(&entry.path(), rel, out);
            rel.pop();
        } else if name.ends_with("_patch_gen_config.py") && !name.starts_with('_') && entry.path().is_file() {
            let mut parts = rel.clone();
            parts.push(name);
            out.push(parts);
        }
    }
}
