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
    /// `max-file-size` (ours): the largest file read, in bytes.
    pub max_file_size: Option<u64>,
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
pub enum ProjectError {
    /// No `pyproject.toml` with `[tool.patchgen]` from the start directory up.
    #[error(
        "no [tool.patchgen] section found in any pyproject.toml from the current directory up. Add a section like:\n\n{SECTION_TEMPLATE}"
    )]
    NoSection,
    /// No section, in a VeOmni tree from before `patchgen-pkg` (its generator's settings are built in).
    #[error(
        "no [tool.patchgen] section found in any pyproject.toml from the current directory up. This looks like a VeOmni tree from before patchgen-pkg ({}, whose settings are built in): add to {} the values it uses:\n\n{LEGACY_VEOMNI_SECTION}",
        generator.display(),
        pyproject.display()
    )]
    LegacyVeomni { generator: PathBuf, pyproject: PathBuf },
    /// A `pyproject.toml` that cannot be read.
    #[error("{}: cannot read: {source}", path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    /// `[tool.patchgen]` (or its sub-tables) is invalid.
    #[error(transparent)]
    Settings(#[from] crate::settings::SettingsError),
    /// `search_root` or `package_prefix` is missing.
    #[error(
        "{}: [tool.patchgen] is missing required key '{key}'. Both `search_root` and `package_prefix` are required.",
        pyproject.display()
    )]
    MissingKey { pyproject: PathBuf, key: &'static str },
    /// `search_root` names no directory.
    #[error("{}: [tool.patchgen] search_root `{}` does not exist", pyproject.display(), root.display())]
    NoSearchRoot { pyproject: PathBuf, root: PathBuf },
    /// `search_root` resolves (through `..` or a symlink) outside the
    /// pyproject's directory: `--fix` and `generate` would write there.
    #[error(
        "{}: [tool.patchgen] search_root resolves to {}, outside the project ({})\n  help: patchgen writes only inside the project; point search_root at a directory under it",
        pyproject.display(),
        resolved.display(),
        project.display()
    )]
    SearchRootOutside { pyproject: PathBuf, resolved: PathBuf, project: PathBuf },
}

pub const SECTION_TEMPLATE: &str = "  [tool.patchgen]\n  search_root = \"<dir containing *_patch_gen_config.py>\"\n  package_prefix = \"<dotted import prefix>\"\n";

/// The generator VeOmni kept in its own tree before `patchgen-pkg` (and the
/// forks made then still do); it had no `[tool.patchgen]`.
const LEGACY_VEOMNI_GENERATOR: &str = "veomni/patchgen/run_codegen.py";

/// The settings that generator has built in (`MODELS_DIR`, `PATCHES_PACKAGE`).
const LEGACY_VEOMNI_SECTION: &str = "  [tool.patchgen]\n  search_root = \"veomni/models/transformers\"\n  package_prefix = \"veomni.models.transformers\"\n  legacy_patches_prefix = \"veomni.models.transformers.qwen3.patches\"\n";

/// A discovered config file.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    pub module: String,
    pub path: PathBuf,
}

/// `Path.resolve()` (non-strict): canonical where the path exists.
/// Absolute (from the working directory), every existing prefix with its
/// symlinks resolved, then the rest with `.` and `..` applied as written.
pub fn resolve(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let abs = match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    };
    let mut out = PathBuf::new();
    for comp in abs.components() {
        match comp {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => {
                out.push(other.as_os_str());
                if let Ok(real) = out.canonicalize() {
                    out = real;
                }
            }
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
            let text =
                patchgen_cache::bounded::read_to_string(&candidate, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE)
                    .map_err(|source| ProjectError::Unreadable { path: candidate.clone(), source })?;
            let options = crate::settings::Options::from_pyproject(&candidate, &text)?;
            let Some(options) = options else { continue };
            let settings = crate::settings::project_settings(&candidate, dir, options)?;
            return Ok(Project { pyproject: candidate, root: dir.to_path_buf(), settings });
        }
        if let Some(root) = start.ancestors().find(|d| d.join(LEGACY_VEOMNI_GENERATOR).is_file()) {
            return Err(ProjectError::LegacyVeomni {
                generator: root.join(LEGACY_VEOMNI_GENERATOR),
                pyproject: root.join("pyproject.toml"),
            });
        }
        Err(ProjectError::NoSection)
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
            return Err(ProjectError::NoSearchRoot { pyproject: self.pyproject.clone(), root: root.clone() });
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
