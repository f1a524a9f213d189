//! What ruff's output for a file depends on besides the text, as cache
//! inputs (`crate::cache`). Conservative: anything ruff may read counts,
//! and a file that could appear and take effect counts by its absence.
//!
//! - The binary: the resolved path (a `Value`, so that a `PATH` change
//!   pointing elsewhere is seen) and the file's identity. The identity
//!   stands for the version: any reinstall or edit changes it (see
//!   `cache::probe`), and it costs one `stat` where `ruff --version`
//!   costs a process (~5 ms) on every warm check. A wrapper script is
//!   identified as the script: a script that only delegates to another
//!   binary hides that binary's changes.
//! - Settings: `.ruff.toml`, `ruff.toml` and `pyproject.toml` in every
//!   directory from the target's up to `/`, and from the working
//!   directory's (ruff's base settings) — present or absent; the files
//!   their `extend` chains name; the user-level configuration
//!   (`$XDG_CONFIG_HOME/ruff/`, `~/.config/ruff/`), which ruff uses when no
//!   project settings are found. Ancestors above the nearest settings file
//!   cannot change ruff's output; they count anyway (a `ruff.toml` added
//!   above the project misses, as the issue asks: simpler and safe).
//! - Package and first-party detection: whether `__init__.py` exists in
//!   the target's directory and each parent up to the first without one
//!   (ruff's package root); and, for every top-level module the text
//!   imports, whether `<root>/<name>` is a directory and `<root>/<name>.py`
//!   or `.pyi` a file, in each `src` root of each settings file (its
//!   directory, `<dir>/src`, and the `src` entries it names) and of the
//!   working directory: where isort looks for first-party modules.

use std::path::{Path, PathBuf};

use super::Ruff;
use crate::cache::{Input, Probe, Prober};

const SETTINGS_NAMES: [&str; 3] = [".ruff.toml", "ruff.toml", "pyproject.toml"];

/// At most this many `extend` hops are followed (ruff fails on a cycle).
const MAX_EXTEND: usize = 16;

impl Ruff {
    /// The program as `Command` runs it: a bare name searched on `PATH`,
    /// then made canonical (symlinks resolved).
    pub fn resolved_program(&self) -> Option<PathBuf> {
        let found = if self.program.components().count() > 1 || self.program.is_absolute() {
            Some(self.program.clone())
        } else {
            std::env::var_os("PATH")
                .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join(&self.program)).find(|p| p.is_file()))
        };
        found.map(|p| p.canonicalize().unwrap_or(p))
    }

    /// The binary's inputs: its resolved path (the value named
    /// `ruff binary path`, which the caller computes for the run with
    /// [`Ruff::resolved_program`]) and its identity.
    pub fn binary_inputs(&self, prober: &Prober) -> Vec<Input> {
        let mut out = vec![];
        let resolved = self.resolved_program();
        let shown = resolved.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        out.push(Input::value(RUFF_PATH, &shown));
        if let Some(path) = resolved {
            out.extend(prober.input("ruff binary", Probe::Identity { path }));
        }
        out
    }

    /// Everything ruff reads for a file at `target` (absolute), run from
    /// `cwd`, looked at through `prober`.
    pub fn settings_inputs(&self, text: &str, target: &Path, cwd: &Path, prober: &Prober) -> Vec<Input> {
        let mut out = Vec::new();
        let mut settings_dirs: Vec<PathBuf> = Vec::new();
        let target_dir = target.parent().unwrap_or(target);
        for start in [target_dir, cwd] {
            for dir in start.ancestors() {
                for name in SETTINGS_NAMES {
                    let path = dir.join(name);
                    if let Some(input) = prober.input("ruff settings", Probe::Content { path: path.clone() }) {
                        out.push(input);
                    } else {
                        // Unreadable now: record something that never matches.
                        out.push(Input::new("ruff settings", Probe::Content { path: path.clone() }, unreadable()));
                    }
                    if path.is_file() {
                        extend_chain(&path, prober, &mut out, &mut settings_dirs);
                    }
                }
            }
        }
        for dir in user_config_dirs() {
            for name in SETTINGS_NAMES {
                out.extend(prober.input("ruff user settings", Probe::Content { path: dir.join(name) }));
            }
        }
        for dir in target_dir.ancestors() {
            let init = dir.join("__init__.py");
            let input = prober.input("package marker", Probe::Exists { path: init.clone() });
            out.extend(input);
            if !init.is_file() {
                break;
            }
        }
        settings_dirs.push(cwd.to_path_buf());
        let names = imported_top_names(text);
        for dir in settings_dirs {
            for root in [dir.clone(), dir.join("src")] {
                for name in &names {
                    let base = root.join(name);
                    out.extend(prober.input("first-party package", Probe::IsDir { path: base.clone() }));
                    for ext in ["py", "pyi"] {
                        let file = base.with_extension(ext);
                        out.extend(prober.input("first-party module", Probe::Exists { path: file }));
                    }
                }
            }
        }
        dedup(&mut out);
        out
    }
}

/// The first segment of every absolute module a line of `text` imports
/// (`import a.b, c as d`, `from a.b import x`), wherever the line is: a
/// superset of what ruff's isort categorises.
pub fn imported_top_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let ident = |s: &str| -> Option<String> {
        let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        (end > 0).then(|| s[..end].to_string())
    };
    for line in text.lines() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix("from ") {
            if let Some(n) = ident(rest.trim_start()) {
                names.insert(n);
            }
        } else if let Some(rest) = line.strip_prefix("import ") {
            for part in rest.split(',') {
                if let Some(n) = ident(part.trim_start().trim_start_matches('(').trim_start()) {
                    names.insert(n);
                }
            }
        }
    }
    names
}

/// The name of the `Value` input for the resolved ruff binary path.
pub const RUFF_PATH: &str = "ruff binary path";

fn unreadable() -> crate::cache::Digest {
    crate::cache::probe::digest_parts([b"unreadable".as_slice()])
}

/// Follow `file`'s `extend` chain, recording each file and each settings
/// file's directory (for its `src` roots) and its `src` entries.
fn extend_chain(file: &Path, prober: &Prober, out: &mut Vec<Input>, dirs: &mut Vec<PathBuf>) {
    let mut current = file.to_path_buf();
    for _ in 0..MAX_EXTEND {
        let Some(table) = ruff_table(&current) else { return };
        let dir = current.parent().unwrap_or(Path::new("/")).to_path_buf();
        if !dirs.contains(&dir) {
            dirs.push(dir.clone());
        }
        if let Some(toml::Value::Array(src)) = table.get("src") {
            for s in src.iter().filter_map(|v| v.as_str()) {
                let p = dir.join(expand(s));
                if !dirs.contains(&p) {
                    dirs.push(p);
                }
            }
        }
        let Some(extend) = table.get("extend").and_then(|v| v.as_str()) else { return };
        let next = dir.join(expand(extend));
        let input =
            prober.input("ruff settings (extended)", Probe::Content { path: next.clone() }).unwrap_or_else(|| {
                Input::new("ruff settings (extended)", Probe::Content { path: next.clone() }, unreadable())
            });
        out.push(input);
        current = next;
    }
}

/// The ruff table of a settings file: the whole of a `ruff.toml`, the
/// `[tool.ruff]` of a `pyproject.toml`.
fn ruff_table(file: &Path) -> Option<toml::Table> {
    let doc: toml::Table = std::fs::read_to_string(file).ok()?.parse().ok()?;
    if file.file_name().is_some_and(|n| n == "pyproject.toml") {
        doc.get("tool")?.get("ruff")?.as_table().cloned()
    } else {
        Some(doc)
    }
}

/// `~` and `$VAR`/`${VAR}` expanded, as ruff expands paths in settings.
fn expand(s: &str) -> PathBuf {
    let mut out = String::new();
    let mut rest = s;
    if let Some(tail) = rest.strip_prefix('~')
        && (tail.is_empty() || tail.starts_with('/'))
    {
        out.push_str(&std::env::var("HOME").unwrap_or_default());
        rest = tail;
    }
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], &braced[end + 1..]),
                None => (braced, ""),
            }
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        out.push_str(&std::env::var(name).unwrap_or_default());
        rest = tail;
    }
    out.push_str(rest);
    PathBuf::from(out)
}

fn user_config_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
        dirs.push(PathBuf::from(x).join("ruff"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let d = PathBuf::from(home).join(".config").join("ruff");
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// Keep the first input of each probe.
pub fn dedup(inputs: &mut Vec<Input>) {
    let mut seen = std::collections::HashSet::new();
    inputs.retain(|i| seen.insert(i.probe.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn probes(inputs: &[Input]) -> Vec<String> {
        inputs
            .iter()
            .filter_map(|i| match &i.probe {
                Probe::Content { path } | Probe::Exists { path } | Probe::IsDir { path } | Probe::Identity { path } => {
                    Some(format!("{} {}", i.what, path.display()))
                }
                Probe::Value { .. } => None,
            })
            .collect()
    }

    #[test]
    fn settings_up_the_tree_extend_chains_packages_and_src_roots() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("proj/pkg/generated")).unwrap();
        std::fs::create_dir_all(root.join("shared")).unwrap();
        std::fs::write(
            root.join("proj/pyproject.toml"),
            "[tool.ruff]\nextend = \"../shared/base.toml\"\nsrc = [\"lib\"]\n",
        )
        .unwrap();
        std::fs::write(root.join("shared/base.toml"), "extend = \"deeper.toml\"\n").unwrap();
        std::fs::write(root.join("proj/pkg/__init__.py"), "").unwrap();
        std::fs::write(root.join("proj/pkg/generated/__init__.py"), "").unwrap();
        let ruff = Ruff { program: PathBuf::from("ruff"), extra_ignore: vec![], isolated: false };
        let prober = Prober::new(HashMap::new());
        let target = root.join("proj/pkg/generated/out.py");
        let inputs = ruff.settings_inputs("import os\nfrom mylib.sub import x\n", &target, &root.join("proj"), &prober);
        let seen = probes(&inputs);
        let has = |s: String| assert!(seen.contains(&s), "{s} not in {seen:#?}");
        for dir in ["proj/pkg/generated", "proj/pkg", "proj", ""] {
            for name in SETTINGS_NAMES {
                has(format!("ruff settings {}", root.join(dir).join(name).display()));
            }
        }
        has(format!("ruff settings {}", Path::new("/").join("ruff.toml").display()));
        has(format!("ruff settings (extended) {}", root.join("proj/../shared/base.toml").display()));
        has(format!("ruff settings (extended) {}", root.join("proj/../shared/deeper.toml").display()));
        has(format!("package marker {}", root.join("proj/pkg/generated/__init__.py").display()));
        has(format!("package marker {}", root.join("proj/pkg/__init__.py").display()));
        has(format!("package marker {}", root.join("proj/__init__.py").display()));
        assert!(!seen.contains(&format!("package marker {}", root.join("__init__.py").display())));
        for r in ["proj", "proj/src", "proj/lib", "proj/lib/src", "proj/../shared"] {
            has(format!("first-party package {}", root.join(r).join("mylib").display()));
            has(format!("first-party module {}", root.join(r).join("os.pyi").display()));
        }
        // Each probe once.
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seen.len());
        // Adding a ruff.toml in a parent directory changes an input.
        std::fs::write(root.join("ruff.toml"), "line-length = 60\n").unwrap();
        let fresh = Prober::new(HashMap::new());
        let (input, change) = fresh.first_change(&inputs).unwrap();
        assert_eq!((input.what.as_str(), change), ("ruff settings", crate::cache::Change::Appeared));
    }

    #[test]
    fn imported_names() {
        let text = "import os, sys as system\nfrom a.b import (\n    c,\n)\nfrom . import rel\n    import torch.nn\n# from comment import x\nx = 'import no'\n";
        let names: Vec<String> = imported_top_names(text).into_iter().collect();
        assert_eq!(names, ["a", "os", "sys", "torch"]);
    }

    #[test]
    fn expands_home_and_variables() {
        let home = std::env::var("HOME").unwrap_or_default();
        assert_eq!(expand("~/x.toml"), PathBuf::from(format!("{home}/x.toml")));
        assert_eq!(expand("a/${HOME}/b"), PathBuf::from(format!("a/{home}/b")));
        assert_eq!(expand("plain.toml"), PathBuf::from("plain.toml"));
    }
}
