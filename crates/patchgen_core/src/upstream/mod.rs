//! Finding upstream modules without a Python interpreter, the way the
//! reference walks `sys.path`: `PYTHONPATH` entries, the active
//! virtualenv's site-packages, the project's `.venv`, then the working
//! directory. A wheel (zip) file is a valid entry.
//!
//! Every lookup also says what it depended on, as cache inputs
//! (`patchgen_cache`): for each entry tried before the one that has the
//! file, that it did not (a directory: no file at that path; a wheel: the
//! wheel's file identity, which stands for every member), and for the one
//! that has it, the bytes read (a directory) or the wheel's identity.

pub mod wheel;

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use patchgen_cache::{Input, Probe, probe};

/// One place modules are looked up.
pub enum Entry {
    Dir(PathBuf),
    Archive { path: PathBuf, names: OnceLock<Option<HashMap<String, usize>>> },
}

impl Entry {
    pub fn path(&self) -> &Path {
        match self {
            Entry::Dir(p) => p,
            Entry::Archive { path, .. } => path,
        }
    }
}

/// Where an upstream module was found and its text.
pub struct UpstreamSource {
    /// The file (or `archive!member`), for messages.
    pub origin: PathBuf,
    pub text: String,
    /// What finding and reading it depended on.
    pub inputs: Vec<Input>,
}

/// Why an upstream module cannot be read. `NotUtf8` and `Io` carry the
/// file (and line); `NotFound` has none to point at.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error(
        "upstream module `{module}` not found; searched:\n{}  help: {}",
        searched.iter().map(|s| format!("    {}\n", s.display())).collect::<String>(),
        UpstreamError::NOT_FOUND_HELP
    )]
    NotFound { module: String, searched: Vec<PathBuf> },
    #[error("{}:{line}: upstream file is not valid UTF-8", origin.display())]
    NotUtf8 { origin: PathBuf, line: usize },
    #[error("{}: {message}", origin.display())]
    Io { origin: PathBuf, message: String },
}

impl UpstreamError {
    /// What to do about [`UpstreamError::NotFound`].
    pub const NOT_FOUND_HELP: &str = "put the package on PYTHONPATH (a site-packages directory, an unpacked wheel or a .whl file), or activate the virtualenv that has it";
}

pub struct SearchPath {
    pub entries: Vec<Entry>,
    archives: Mutex<HashMap<PathBuf, ()>>,
    /// What every [`SearchPath::find_module`] so far depended on (see
    /// [`SearchPath::inputs`]).
    looked: Mutex<Vec<Input>>,
    /// Whether a file read is noted with the digest of its bytes (a cache
    /// input); off ([`SearchPath::drop_digests`]) for a search path no
    /// cache will ever read.
    digests: bool,
}

fn site_packages(venv: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        let Ok(rd) = std::fs::read_dir(venv.join(lib)) else { continue };
        let mut dirs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python")))
            .map(|p| p.join("site-packages"))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        out.extend(dirs);
    }
    let win = venv.join("Lib").join("site-packages");
    if win.is_dir() {
        out.push(win);
    }
    out
}

impl SearchPath {
    pub fn new(paths: Vec<PathBuf>) -> Self {
        let mut entries: Vec<Entry> = Vec::new();
        for p in paths {
            if entries.iter().any(|e| e.path() == p) {
                continue;
            }
            let is_archive = p.is_file() && p.extension().is_some_and(|e| e == "whl" || e == "zip");
            entries.push(if is_archive { Entry::Archive { path: p, names: OnceLock::new() } } else { Entry::Dir(p) });
        }
        SearchPath { entries, archives: Mutex::new(HashMap::new()), looked: Mutex::new(Vec::new()), digests: true }
    }

    /// This search path without the digests of the files it reads (their
    /// [`Input`]s are left out): for a run that no cache reads or writes,
    /// where hashing every upstream module costs ~1 % of a lint. Set it
    /// before the first read; [`SearchPath::inputs`] is incomplete after.
    pub fn drop_digests(&mut self) {
        self.digests = false;
    }

    /// The search path for a project: `PYTHONPATH` and `VIRTUAL_ENV` of
    /// `env`, the project's `.venv`, the working directory, then the
    /// project's package root (so a `source_module` inside the project
    /// itself is found from any subdirectory).
    pub fn from_env(env: &crate::settings::Env, project_root: &Path, cwd: &Path, package_root: &Path) -> Self {
        let mut paths = Vec::new();
        if let Some(pp) = env.var_os("PYTHONPATH") {
            for p in std::env::split_paths(&pp) {
                if !p.as_os_str().is_empty() {
                    paths.push(if p.is_absolute() { p } else { cwd.join(p) });
                }
            }
        }
        if let Some(venv) = env.var_os("VIRTUAL_ENV") {
            paths.extend(site_packages(Path::new(&venv)));
        }
        paths.extend(site_packages(&project_root.join(".venv")));
        paths.push(cwd.to_path_buf());
        paths.push(package_root.to_path_buf());
        SearchPath::new(paths)
    }

    fn archive_names(entry: &Entry) -> Option<&HashMap<String, usize>> {
        let Entry::Archive { path, names } = entry else { return None };
        names
            .get_or_init(|| {
                let file = File::open(path).ok()?;
                let zip = zip::ZipArchive::new(std::io::BufReader::new(file)).ok()?;
                let mut map = HashMap::new();
                for i in 0..zip.len() {
                    if let Some(Ok(name)) = zip.name_for_index(i) {
                        map.insert(name.to_string(), i);
                    }
                }
                Some(map)
            })
            .as_ref()
    }

    /// `rel` in `entry`, noting in `inputs` what the answer depended on.
    fn read_member(
        &self,
        entry: &Entry,
        rel: &str,
        inputs: &mut Vec<Input>,
    ) -> Option<Result<(PathBuf, Vec<u8>), UpstreamError>> {
        match entry {
            Entry::Dir(dir) => {
                let file = dir.join(rel);
                if !file.is_file() {
                    inputs.push(Input::exists("upstream search path entry", &file, false));
                    return None;
                }
                Some(
                    patchgen_cache::bounded::read(&file, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE)
                        .inspect(|b| {
                            if self.digests {
                                inputs.push(Input::content("upstream file", &file, b))
                            }
                        })
                        .map(|b| (file.clone(), b))
                        .map_err(|e| UpstreamError::Io { origin: file, message: e.to_string() }),
                )
            }
            Entry::Archive { path, .. } => {
                // The identity is taken before anything is read from the wheel.
                let identity = probe::identity(path);
                inputs.push(Input::new("wheel", Probe::Identity { path: path.clone() }, identity));
                let idx = *Self::archive_names(entry)?.get(rel)?;
                let _guard = self.archives.lock();
                let origin = PathBuf::from(format!("{}!{rel}", path.display()));
                let read = || -> std::io::Result<Vec<u8>> {
                    let file = File::open(path)?;
                    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(std::io::Error::other)?;
                    let mut member = zip.by_index(idx).map_err(std::io::Error::other)?;
                    let mut buf = Vec::new();
                    member.read_to_end(&mut buf)?;
                    Ok(buf)
                };
                Some(
                    read()
                        .map(|b| (origin.clone(), b))
                        .map_err(|e| UpstreamError::Io { origin, message: e.to_string() }),
                )
            }
        }
    }

    /// The first `<entry>/a/b/c.py` for module `a.b.c` (the reference looks
    /// for exactly that file, never a package's `__init__.py`).
    pub fn find_module(&self, module: &str) -> Result<UpstreamSource, UpstreamError> {
        let found = self.find_module_unnoted(module);
        let mut looked = self.looked.lock().expect("search path inputs");
        match &found {
            Ok(source) => looked.extend(source.inputs.iter().cloned()),
            Err(UpstreamError::NotFound { .. }) => looked.extend(self.not_found_inputs(module)),
            // An unreadable or undecodable module: an input that never matches.
            Err(e) => looked.push(Input::new(
                "upstream module (unreadable)",
                Probe::Value { name: format!("unreadable upstream {module}: {e}") },
                probe::digest_parts([b"unreadable".as_slice()]),
            )),
        }
        found
    }

    /// As cache inputs, what every [`SearchPath::find_module`] so far
    /// depended on (the files read, the places a module was not, the
    /// wheels' identities).
    pub fn inputs(&self) -> Vec<Input> {
        self.looked.lock().expect("search path inputs").clone()
    }

    /// What a lookup that found nothing depended on: every place it looked.
    fn not_found_inputs(&self, module: &str) -> Vec<Input> {
        let rel = format!("{}.py", module.replace('.', "/"));
        let mut inputs = Vec::new();
        for entry in &self.entries {
            match entry {
                Entry::Dir(dir) => inputs.push(Input::exists("upstream search path entry", &dir.join(&rel), false)),
                Entry::Archive { path, .. } => {
                    inputs.push(Input::new("wheel", Probe::Identity { path: path.clone() }, probe::identity(path)))
                }
            }
        }
        inputs
    }

    fn find_module_unnoted(&self, module: &str) -> Result<UpstreamSource, UpstreamError> {
        let rel = format!("{}.py", module.replace('.', "/"));
        let mut inputs = Vec::new();
        for entry in &self.entries {
            if let Some(found) = self.read_member(entry, &rel, &mut inputs) {
                let (origin, bytes) = found?;
                let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").map(|b| b.to_vec()).unwrap_or(bytes);
                return match String::from_utf8(bytes) {
                    Ok(text) => Ok(UpstreamSource { origin, text, inputs }),
                    Err(e) => {
                        let valid = e.utf8_error().valid_up_to();
                        let line = e.as_bytes()[..valid].iter().filter(|&&b| b == b'\n').count() + 1;
                        Err(UpstreamError::NotUtf8 { origin, line })
                    }
                };
            }
        }
        Err(UpstreamError::NotFound {
            module: module.to_string(),
            searched: self.entries.iter().map(|e| e.path().to_path_buf()).collect(),
        })
    }

    /// `transformers.__version__` of the first `transformers` package on the
    /// path, read from its `__init__.py`; `"unknown"` as the reference says
    /// when transformers cannot be imported.
    pub fn transformers_version(&self) -> String {
        self.transformers_version_inputs().0
    }

    /// [`SearchPath::transformers_version`] and what it depended on.
    pub fn transformers_version_inputs(&self) -> (String, Vec<Input>) {
        let mut inputs = Vec::new();
        for entry in &self.entries {
            match self.read_member(entry, "transformers/__init__.py", &mut inputs) {
                Some(Ok((_, bytes))) => {
                    let text = String::from_utf8_lossy(&bytes);
                    return (parse_version(&text).unwrap_or_else(|| "unknown".to_string()), inputs);
                }
                // Unreadable: the reference's import would fail too.
                Some(Err(UpstreamError::Io { origin, .. })) => {
                    inputs.push(Input::new(
                        "transformers package",
                        Probe::Content { path: origin },
                        probe::digest_parts([b"unreadable".as_slice()]),
                    ));
                }
                _ => {}
            }
        }
        ("unknown".to_string(), inputs)
    }

    /// The entries, each with its kind, as one text (a cache input: the
    /// search path decides where everything upstream is found).
    pub fn describe(&self) -> String {
        self.entries
            .iter()
            .map(|e| match e {
                Entry::Dir(p) => format!("dir {}\n", p.display()),
                Entry::Archive { path, .. } => format!("archive {}\n", path.display()),
            })
            .collect()
    }
}

/// The string assigned to `__version__` at module level.
pub fn parse_version(init: &str) -> Option<String> {
    for line in init.lines() {
        let Some(rest) = line.strip_prefix("__version__") else { continue };
        let rest = rest.trim_start();
        let Some(rest) = rest.strip_prefix('=') else { continue };
        let rest = rest.trim();
        let quote = rest.chars().next()?;
        if quote != '"' && quote != '\'' {
            continue;
        }
        let body = &rest[1..];
        let end = body.find(quote)?;
        return Some(body[..end].to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_version_assignments() {
        assert_eq!(parse_version("x = 1\n__version__ = \"5.9.0\"\n").as_deref(), Some("5.9.0"));
        assert_eq!(parse_version("__version__='1.2'").as_deref(), Some("1.2"));
        assert_eq!(parse_version("no version"), None);
    }
}
