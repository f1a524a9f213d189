//! What ruff's output for a file depends on besides the text, as cache
//! inputs (`patchgen_cache`). Conservative: anything ruff may read counts,
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
use crate::settings::Env;
use patchgen_cache::{Input, Probe, Prober};

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
            self.env
                .var_os("PATH")
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
        out.push(Input::value(RUFF_ENV, &ruff_environment(&self.env)));
        if let Some(path) = resolved {
            if !is_native_executable(&path) {
                // A wrapper (a shell script, a shim) exec'ing another binary:
                // its identity does not cover that binary, so its version is
                // asked on every run (one process, only for wrappers).
                out.push(Input::value(RUFF_WRAPPED_VERSION, &self.version_output(&path)));
            }
            out.extend(prober.input("ruff binary", Probe::Identity { path }));
        }
        out
    }

    /// What `<path> --version` prints (or why it could not run).
    fn version_output(&self, path: &Path) -> String {
        match std::process::Command::new(path).arg("--version").stdin(std::process::Stdio::null()).output() {
            Ok(o) => format!(
                "{} {} {}",
                o.status,
                String::from_utf8_lossy(&o.stdout).trim(),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("cannot run: {e}"),
        }
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
                        extend_chain(&path, prober, &mut out, &mut settings_dirs, &self.env);
                    }
                }
            }
        }
        for dir in user_config_dirs(&self.env) {
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
    // Only lines holding `from ` or `import ` can match: found with memmem
    // instead of walking every line of a generated module.
    let bytes = text.as_bytes();
    let mut starts = std::collections::BTreeSet::new();
    for needle in ["from ", "import "] {
        for hit in memchr::memmem::find_iter(bytes, needle) {
            starts.insert(memchr::memrchr(b'\n', &bytes[..hit]).map_or(0, |i| i + 1));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for start in starts {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(text.len(), |i| start + i);
        let line = &text[start..end];
        import_line_top_names(line.strip_suffix('\r').unwrap_or(line), &mut names);
    }
    names
}

/// [`imported_top_names`] of one line (as `str::lines` gives it).
fn import_line_top_names(line: &str, names: &mut std::collections::BTreeSet<String>) {
    let ident = |s: &str| -> Option<String> {
        let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        (end > 0).then(|| s[..end].to_string())
    };
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

/// The name of the `Value` input for the resolved ruff binary path.
pub const RUFF_PATH: &str = "ruff binary path";
/// The name of the `Value` input for the `RUFF_*` environment variables.
pub const RUFF_ENV: &str = "RUFF_* environment variables";
/// The name of the `Value` input for a wrapper's `--version` output.
pub const RUFF_WRAPPED_VERSION: &str = "ruff --version (wrapper script)";

/// Every environment variable whose name starts with `RUFF_` (ruff reads
/// several: `RUFF_OUTPUT_FORMAT`, `RUFF_CACHE_DIR`, `RUFF_NO_CACHE`, …;
/// all of them count, so a new one is not missed), sorted, one per line.
fn ruff_environment(env: &Env) -> String {
    let mut vars: Vec<String> = env.with_prefix_lossy("RUFF_").map(|(k, v)| format!("{k}={v}")).collect();
    vars.sort();
    vars.join("\n")
}

/// Whether `path` starts as a native executable does (ELF, Mach-O, a fat
/// Mach-O, PE): anything else (`#!` scripts above all) is a wrapper.
fn is_native_executable(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic));
    if read.is_err() {
        return false;
    }
    let le = u32::from_le_bytes(magic);
    magic == *b"\x7fELF"
        || magic.starts_with(b"MZ")
        || [0xfeed_face, 0xfeed_facf, 0xcefa_edfe, 0xcffa_edfe, 0xcafe_babe, 0xbeba_feca].contains(&le)
}

fn unreadable() -> patchgen_cache::Digest {
    patchgen_cache::probe::digest_parts([b"unreadable".as_slice()])
}

/// Follow `file`'s `extend` chain, recording each file and each settings
/// file's directory (for its `src` roots) and its `src` entries.
fn extend_chain(file: &Path, prober: &Prober, out: &mut Vec<Input>, dirs: &mut Vec<PathBuf>, env: &Env) {
    let mut current = file.to_path_buf();
    for _ in 0..MAX_EXTEND {
        let Some(table) = ruff_table(&current) else { return };
        let dir = current.parent().unwrap_or(Path::new("/")).to_path_buf();
        if !dirs.contains(&dir) {
            dirs.push(dir.clone());
        }
        if let Some(toml::Value::Array(src)) = table.get("src") {
            for s in src.iter().filter_map(|v| v.as_str()) {
                let p = dir.join(expand(s, env));
                let found = if s.contains(['*', '?', '[']) { src_glob(&p, prober, out) } else { vec![p] };
                for p in found {
                    if !dirs.contains(&p) {
                        dirs.push(p);
                    }
                }
            }
        }
        let Some(extend) = table.get("extend").and_then(|v| v.as_str()) else { return };
        let next = dir.join(expand(extend, env));
        let input =
            prober.input("ruff settings (extended)", Probe::Content { path: next.clone() }).unwrap_or_else(|| {
                Input::new("ruff settings (extended)", Probe::Content { path: next.clone() }, unreadable())
            });
        out.push(input);
        current = next;
    }
}

/// The directories a `src` glob names now (ruff expands `*`, `?`, `[…]`
/// and `**` in `src`). Every directory listed on the way counts by its
/// identity (an entry added or removed changes its times), so a new match
/// is seen. `*` and `?` in a component are understood; `**` and `[…]` are
/// not: such a pattern is recorded as an input that never matches (those
/// configs are never answered from the cache).
fn src_glob(pattern: &Path, prober: &Prober, out: &mut Vec<Input>) -> Vec<PathBuf> {
    let mut current = vec![PathBuf::new()];
    for comp in pattern.components() {
        let part = comp.as_os_str().to_string_lossy();
        if part.contains("**") || part.contains('[') {
            let probe = Probe::Value { name: format!("unsupported ruff src glob {}", pattern.display()) };
            out.push(Input::new("ruff src glob (not cached)", probe, unreadable()));
            return vec![];
        }
        if !part.contains(['*', '?']) {
            current.iter_mut().for_each(|d| d.push(comp));
            continue;
        }
        let mut next = Vec::new();
        for d in &current {
            out.extend(prober.input("ruff src glob directory", Probe::Identity { path: d.clone() }));
            let Ok(listing) = std::fs::read_dir(d) else { continue };
            let mut names: Vec<_> = listing.flatten().map(|e| e.file_name()).collect();
            names.sort();
            for name in names {
                if wildcard_match(part.as_bytes(), name.to_string_lossy().as_bytes()) {
                    next.push(d.join(name));
                }
            }
        }
        current = next;
    }
    current.into_iter().filter(|d| d.is_dir()).collect()
}

/// Whether `name` matches `pattern` with `*` (any run) and `?` (one byte);
/// a leading `.` is matched only literally, as in glob.
fn wildcard_match(pattern: &[u8], name: &[u8]) -> bool {
    if name.first() == Some(&b'.') && pattern.first() != Some(&b'.') {
        return false;
    }
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some((b'?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    go(pattern, name)
}

/// The ruff table of a settings file: the whole of a `ruff.toml`, the
/// `[tool.ruff]` of a `pyproject.toml`.
/// Parsed once per file and process (every config of a project finds the
/// same settings files): a file changed during the run is still caught, as
/// its content is an input whose digest `Cache::store` checks again.
fn ruff_table(file: &Path) -> Option<std::sync::Arc<toml::Table>> {
    type Tables = std::collections::HashMap<PathBuf, Option<std::sync::Arc<toml::Table>>>;
    static TABLES: std::sync::OnceLock<std::sync::Mutex<Tables>> = std::sync::OnceLock::new();
    let tables = TABLES.get_or_init(Default::default);
    if let Some(t) = tables.lock().unwrap_or_else(|e| e.into_inner()).get(file) {
        return t.clone();
    }
    let parse = || -> Option<toml::Table> {
        let doc: toml::Table = std::fs::read_to_string(file).ok()?.parse().ok()?;
        if file.file_name().is_some_and(|n| n == "pyproject.toml") {
            doc.get("tool")?.get("ruff")?.as_table().cloned()
        } else {
            Some(doc)
        }
    };
    let table = parse().map(std::sync::Arc::new);
    tables.lock().unwrap_or_else(|e| e.into_inner()).insert(file.to_path_buf(), table.clone());
    table
}

/// `~` and `$VAR`/`${VAR}` expanded, as ruff expands paths in settings.
fn expand(s: &str, env: &Env) -> PathBuf {
    let mut out = String::new();
    let mut rest = s;
    if let Some(tail) = rest.strip_prefix('~')
        && (tail.is_empty() || tail.starts_with('/'))
    {
        out.push_str(env.var("HOME").unwrap_or_default());
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
        out.push_str(env.var(name).unwrap_or_default());
        rest = tail;
    }
    out.push_str(rest);
    PathBuf::from(out)
}

fn user_config_dirs(env: &Env) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(x) = env.var_os("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
        dirs.push(PathBuf::from(x).join("ruff"));
    }
    if let Some(home) = env.var_os("HOME").filter(|h| !h.is_empty()) {
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

    proptest::proptest! {
        /// The memmem search finds what scanning every line finds.
        #[test]
        fn imported_top_names_equals_a_scan_of_every_line(
            lines in proptest::collection::vec(
                proptest::string::string_regex("[ \t]{0,3}(from |import |fro|impor)?[(, a-z_.\\r]{0,12}( import [a-z, ]{0,6})?").unwrap(),
                0..12,
            ),
            crlf in proptest::prelude::any::<bool>(),
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            let mut every = std::collections::BTreeSet::new();
            for line in text.lines() {
                import_line_top_names(line, &mut every);
            }
            proptest::prop_assert_eq!(imported_top_names(&text), every);
        }
    }

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
        let ruff = Ruff { program: PathBuf::from("ruff"), extra_ignore: vec![], isolated: false, env: Env::capture() };
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
        assert_eq!((input.what.as_str(), change), ("ruff settings", patchgen_cache::Change::Appeared));
    }

    #[test]
    fn src_globs_are_expanded_and_their_directories_watched() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("libs/a")).unwrap();
        std::fs::create_dir_all(root.join("libs/b")).unwrap();
        std::fs::create_dir_all(root.join("libs/.hidden")).unwrap();
        std::fs::write(root.join("libs/notadir"), "").unwrap();
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::write(root.join("pyproject.toml"), "[tool.ruff]\nsrc = [\"libs/*\", \"odd/[ab]\"]\n").unwrap();
        let ruff = Ruff { program: PathBuf::from("ruff"), extra_ignore: vec![], isolated: false, env: Env::capture() };
        let target = root.join("pkg/out.py");
        let inputs = ruff.settings_inputs("import torch\n", &target, &root, &Prober::new(HashMap::new()));
        let seen = probes(&inputs);
        for r in ["libs/a", "libs/b"] {
            assert!(
                seen.contains(&format!("first-party package {}", root.join(r).join("torch").display())),
                "{seen:#?}"
            );
        }
        assert!(!seen.iter().any(|s| s.contains(".hidden") || s.contains("notadir/")), "{seen:#?}");
        assert!(seen.contains(&format!("ruff src glob directory {}", root.join("libs").display())));
        // `[…]` is not understood: an input that never matches.
        assert!(inputs.iter().any(|i| i.what == "ruff src glob (not cached)"));
        let only_star: Vec<Input> = inputs.into_iter().filter(|i| i.what != "ruff src glob (not cached)").collect();
        assert_eq!(Prober::new(HashMap::new()).first_change(&only_star), None);
        // A new matching directory changes the listing's identity.
        std::thread::sleep(std::time::Duration::from_millis(30));
        std::fs::create_dir_all(root.join("libs/c")).unwrap();
        let (input, _) = Prober::new(HashMap::new()).first_change(&only_star).unwrap();
        assert_eq!(input.what, "ruff src glob directory");
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match(b"*", b"abc"));
        assert!(wildcard_match(b"a?c*", b"abcdef"));
        assert!(!wildcard_match(b"a?c", b"ac"));
        assert!(!wildcard_match(b"*", b".hidden"));
        assert!(wildcard_match(b".*", b".hidden"));
    }

    #[test]
    fn a_wrapper_script_is_asked_its_version_a_binary_is_not() {
        let d = tempfile::tempdir().unwrap();
        let script = d.path().join("ruff");
        std::fs::write(&script, "#!/bin/sh\necho 'ruff 1.2.3'\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let wrapped = Ruff { program: script, extra_ignore: vec![], isolated: false, env: Env::capture() };
        let inputs = wrapped.binary_inputs(&Prober::new(HashMap::new()));
        let version = inputs.iter().find(|i| i.what == RUFF_WRAPPED_VERSION).expect("version asked");
        assert_eq!(version.digest, Input::value("", "exit status: 0 ruff 1.2.3 ").digest);
        assert!(inputs.iter().any(|i| i.what == RUFF_ENV));
        let native = Ruff {
            program: std::env::current_exe().unwrap(),
            extra_ignore: vec![],
            isolated: false,
            env: Env::capture(),
        };
        let inputs = native.binary_inputs(&Prober::new(HashMap::new()));
        assert!(!inputs.iter().any(|i| i.what == RUFF_WRAPPED_VERSION));
    }

    #[test]
    fn imported_names() {
        let text = "import os, sys as system\nfrom a.b import (\n    c,\n)\nfrom . import rel\n    import torch.nn\n# from comment import x\nx = 'import no'\n";
        let names: Vec<String> = imported_top_names(text).into_iter().collect();
        assert_eq!(names, ["a", "os", "sys", "torch"]);
    }

    #[test]
    fn expands_home_and_variables() {
        let env = Env::from_pairs([("HOME", "/home/u"), ("SUB", "s")]);
        let home = "/home/u";
        assert_eq!(expand("$SUB/${MISSING}x", &env), PathBuf::from("s/x"));
        assert_eq!(expand("~/x.toml", &env), PathBuf::from(format!("{home}/x.toml")));
        assert_eq!(expand("a/${HOME}/b", &env), PathBuf::from(format!("a/{home}/b")));
        assert_eq!(expand("plain.toml", &env), PathBuf::from("plain.toml"));
    }
}
