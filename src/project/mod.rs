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
}

#[derive(Clone, Debug)]
pub struct Project {
    pub pyproject: PathBuf,
    pub root: PathBuf,
    pub settings: Settings,
    /// Non-fatal findings about the section (unknown keys).
    pub warnings: Vec<String>,
}

/// A usage or project-configuration problem (exit code 2).
#[derive(Debug)]
pub struct ProjectError(pub String);

impl std::fmt::Display for ProjectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub const SECTION_TEMPLATE: &str = "  [tool.patchgen]\n  search_root = \"<dir containing *_patch_gen_config.py>\"\n  package_prefix = \"<dotted import prefix>\"\n";

const KNOWN_KEYS: [&str; 7] = ["search_root", "package_prefix", "legacy_patches_prefix", "ruff_extra_ignore", "ruff_isolated", "ruff", "lint"];

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
            let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
                let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1).unwrap_or(0);
                ProjectError(format!("{}:{line}: invalid TOML: {}", candidate.display(), e.message()))
            })?;
            let Some(section) = doc.get("tool").and_then(|t| t.get("patchgen")) else { continue };
            let Some(section) = section.as_table() else {
                return Err(ProjectError(format!("{}: [tool.patchgen] must be a table", candidate.display())));
            };
            let settings = Self::settings(&candidate, dir, section)?;
            let warnings = section
                .keys()
                .filter(|k| !KNOWN_KEYS.contains(&k.as_str()))
                .map(|k| format!("{}: [tool.patchgen] has an unknown key `{k}` (known: {}); it is ignored", candidate.display(), KNOWN_KEYS.join(", ")))
                .collect();
            return Ok(Project { pyproject: candidate, root: dir.to_path_buf(), settings, warnings });
        }
        Err(ProjectError(format!(
            "no [tool.patchgen] section found in any pyproject.toml from the current directory up. Add a section like:\n\n{SECTION_TEMPLATE}"
        )))
    }

    fn settings(pyproject: &Path, root: &Path, section: &toml::Table) -> Result<Settings, ProjectError> {
        let err = |msg: String| ProjectError(format!("{}: [tool.patchgen] {msg}", pyproject.display()));
        let string = |key: &str| -> Result<Option<String>, ProjectError> {
            match section.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(err(format!("`{key}` must be a string"))),
            }
        };
        let (Some(search_root), Some(package_prefix)) = (string("search_root")?, string("package_prefix")?) else {
            let missing = if section.contains_key("search_root") { "package_prefix" } else { "search_root" };
            return Err(err(format!(
                "is missing required key '{missing}'. Both `search_root` and `package_prefix` are required."
            )));
        };
        let ruff_extra_ignore = match section.get("ruff_extra_ignore") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(|| err("`ruff_extra_ignore` must be a list of strings".into())))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(err("`ruff_extra_ignore` must be a list of strings".into())),
        };
        let ruff_isolated = match section.get("ruff_isolated") {
            None => false,
            Some(toml::Value::Boolean(b)) => *b,
            Some(_) => return Err(err("`ruff_isolated` must be true or false".into())),
        };
        let ruff = string("ruff")?.map(|r| {
            let p = PathBuf::from(&r);
            if r.contains('/') && p.is_relative() { root.join(p) } else { p }
        });
        Ok(Settings {
            search_root: resolve(&root.join(search_root)),
            package_prefix,
            legacy_patches_prefix: string("legacy_patches_prefix")?,
            ruff_extra_ignore,
            ruff_isolated,
            ruff,
        })
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
