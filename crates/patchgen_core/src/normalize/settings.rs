//! Which ruff settings file governs a path, found exactly as ruff 0.13
//! finds it (`ruff_workspace::pyproject::{settings_toml, find_settings_toml}`):
//! in each directory from the file's own upwards, `.ruff.toml`, then
//! `ruff.toml`, then a `pyproject.toml` that has a `[tool.ruff]` table.
//!
//! Used only to decide whether a batch run in a mirror directory is
//! guaranteed to see the same settings as the real path (see `batch.rs`);
//! when anything is unusual the answer is "no" and ruff runs per file.

use std::path::{Component, Path, PathBuf};

/// The settings file in `dir` itself, if any. `Err` when a
/// `pyproject.toml` cannot be read or parsed (ruff would fail on it too).
pub fn settings_toml(dir: &Path) -> Result<Option<PathBuf>, ()> {
    for name in [".ruff.toml", "ruff.toml"] {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return Ok(Some(candidate));
        }
    }
    let pyproject = dir.join("pyproject.toml");
    if pyproject.is_file() {
        let text = std::fs::read_to_string(&pyproject).map_err(|_| ())?;
        let doc: toml::Table = text.parse().map_err(|_| ())?;
        if doc.get("tool").and_then(|t| t.get("ruff")).is_some() {
            return Ok(Some(pyproject));
        }
    }
    Ok(None)
}

/// The nearest settings file for `path` (a file or a directory): the
/// directory itself and then every ancestor.
pub fn find_settings_toml(path: &Path) -> Result<Option<PathBuf>, ()> {
    for dir in path.ancestors() {
        if let Some(found) = settings_toml(dir)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// `path` with `.` and `..` removed lexically, as ruff's `normalize_path`
/// (path-absolutize) does; `None` for a relative path or `..` above `/`.
pub fn lexical(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// Options whose values (or, for the per-file tables, keys) ruff reads as
/// paths or globs resolved against the settings file's directory. Looked
/// for at every level (`[tool.ruff]`, `lint`, `format`, deprecated
/// top-level lint options).
const PATH_KEYS: [&str; 9] = [
    "exclude",
    "extend-exclude",
    "include",
    "extend-include",
    "src",
    "per-file-ignores",
    "extend-per-file-ignores",
    "per-file-target-version",
    "cache-dir",
];

/// Whether the ruff configuration in `file` only refers to paths inside its
/// own directory, so that a view of that directory placed elsewhere
/// resolves every glob, `src` entry and exclusion to the same relative
/// place. Conservative: `extend` (another file, with its own directory)
/// and `namespace-packages` (package detection) are refused outright, and
/// a path or glob that is absolute, starts with `~`, expands a `$VARIABLE`
/// or climbs with `..` makes the answer `false`.
pub fn self_contained(file: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(file) else {
        return false;
    };
    let Ok(doc) = text.parse::<toml::Table>() else {
        return false;
    };
    let is_pyproject = file.file_name().is_some_and(|n| n == "pyproject.toml");
    let table = if is_pyproject {
        match doc.get("tool").and_then(|t| t.get("ruff")) {
            Some(toml::Value::Table(t)) => t.clone(),
            _ => return false,
        }
    } else {
        doc
    };
    table_ok(&table)
}

fn table_ok(table: &toml::Table) -> bool {
    table.iter().all(|(key, value)| {
        let key = key.replace('_', "-");
        if key == "extend" || key == "namespace-packages" {
            return false;
        }
        if PATH_KEYS.contains(&key.as_str()) {
            return paths_ok(value);
        }
        match value {
            toml::Value::Table(t) => table_ok(t),
            _ => true,
        }
    })
}

/// Every string in a path-valued option (for tables: every key, the globs
/// of `per-file-ignores`) is local.
fn paths_ok(value: &toml::Value) -> bool {
    match value {
        toml::Value::String(s) => local(s),
        toml::Value::Array(items) => items.iter().all(paths_ok),
        toml::Value::Table(t) => t.keys().all(|k| local(k)),
        _ => true,
    }
}

/// A string that, if ruff reads it as a path or glob, stays below the
/// directory it is resolved against.
fn local(s: &str) -> bool {
    let s = s.strip_prefix('!').unwrap_or(s);
    !(s.starts_with('/')
        || s.starts_with('\\')
        || s.starts_with('~')
        || s.contains('$')
        || s.contains(':')
        || s.contains('{')
        || s.contains(".."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalisation() {
        assert_eq!(lexical(Path::new("/a/./b/../c")), Some(PathBuf::from("/a/c")));
        assert_eq!(lexical(Path::new("a/b")), None);
        assert_eq!(lexical(Path::new("/..")), None);
    }

    #[test]
    fn local_strings() {
        for ok in ["veomni/**/generated/*.py", "__init__.py", "!*.ipynb", "src", ".", "E402", "py311"] {
            assert!(local(ok), "{ok}");
        }
        for bad in ["/abs/*.py", "~/x", "$HOME/x", "../other", "a/../../b", "C:\\x"] {
            assert!(!local(bad), "{bad}");
        }
    }

    #[test]
    fn discovery_order_and_guards() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("pyproject.toml"), "[project]\nname='x'\n").unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        assert_eq!(find_settings_toml(&root.join("a/b/f.py")).unwrap(), None);
        std::fs::write(root.join("pyproject.toml"), "[tool.ruff]\nline-length = 100\n").unwrap();
        assert_eq!(find_settings_toml(&root.join("a/b/f.py")).unwrap(), Some(root.join("pyproject.toml")));
        std::fs::write(root.join("ruff.toml"), "line-length = 90\n").unwrap();
        assert_eq!(find_settings_toml(&root.join("a/b/f.py")).unwrap(), Some(root.join("ruff.toml")));
        std::fs::write(root.join("a/.ruff.toml"), "[lint.per-file-ignores]\n\"generated/*.py\" = [\"F401\"]\n")
            .unwrap();
        assert_eq!(find_settings_toml(&root.join("a/b/f.py")).unwrap(), Some(root.join("a/.ruff.toml")));
        assert!(self_contained(&root.join("a/.ruff.toml")));
        assert!(self_contained(&root.join("pyproject.toml")));
        std::fs::write(root.join("ruff.toml"), "extend = \"base.toml\"\n").unwrap();
        assert!(!self_contained(&root.join("ruff.toml")));
        std::fs::write(root.join("ruff.toml"), "[lint.per-file-ignores]\n\"/abs/*.py\" = [\"F401\"]\n").unwrap();
        assert!(!self_contained(&root.join("ruff.toml")));
        std::fs::write(root.join("ruff.toml"), "src = [\"../lib\"]\n").unwrap();
        assert!(!self_contained(&root.join("ruff.toml")));
        std::fs::write(root.join("ruff.toml"), "namespace-packages = [\"a\"]\n").unwrap();
        assert!(!self_contained(&root.join("ruff.toml")));
        std::fs::write(root.join("ruff.toml"), "[lint]\ndummy-variable-rgx = \"^_$\"\nexclude = [\"~/x\"]\n").unwrap();
        assert!(!self_contained(&root.join("ruff.toml")));
        std::fs::write(root.join("ruff.toml"), "[lint]\ndummy-variable-rgx = \"^(_+|(_+[a-z]*))$\"\n").unwrap();
        assert!(self_contained(&root.join("ruff.toml")));
    }
}
