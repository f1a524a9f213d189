//! Finding and parsing the project's own Python modules (configs and what
//! they import). Files are read and parsed once per process and shared by
//! every evaluation. A [`Recording`] loader notes every lookup and read an
//! evaluation makes, as cache inputs (`patchgen_cache`). An [`Overlay`]
//! (an editor's unsaved buffers, `patchgen server`) is read instead of the
//! files at its paths, and makes a module exist before it is saved.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use patchgen_cache::{Digest, Input};
use patchgen_python::pysource::ParsedFile;

pub struct LoadedModule {
    pub file: Arc<ParsedFile>,
    pub is_package: bool,
}

#[derive(Debug, Clone)]
pub enum LoadError {
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
    Io {
        path: PathBuf,
        message: String,
    },
    /// The file holds a conflict marker `patchgen bump` (or git) wrote, at this 1-based line.
    Conflict {
        path: PathBuf,
        line: usize,
    },
}

/// Where evaluation finds modules. Only modules a loader knows are ever read.
pub trait ModuleLoader: Sync {
    /// Whether `module` is a project module this loader can read.
    fn exists(&self, module: &str) -> bool;
    fn load(&self, module: &str) -> Option<Result<LoadedModule, LoadError>>;
}

/// A file read and parsed, with the bytes read (digested on demand).
type Loaded = Result<(Arc<ParsedFile>, Arc<ReadBytes>), LoadError>;

/// The bytes a file was parsed from and their digest, computed the first
/// time a cache asks (a run without a cache never hashes them).
#[derive(Debug)]
pub struct ReadBytes {
    bytes: Vec<u8>,
    digest: std::sync::OnceLock<Digest>,
}

impl ReadBytes {
    fn digest(&self) -> Digest {
        *self.digest.get_or_init(|| patchgen_cache::probe::content_digest(&self.bytes))
    }
}

/// Texts read instead of the files at their paths: an editor's unsaved
/// buffers. Paths are kept as given and matched as given or resolved
/// (symlinks followed), so a buffer opened through a link still counts.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    files: HashMap<PathBuf, Arc<str>>,
}

impl Overlay {
    /// Read `text` instead of the file at `path`.
    pub fn insert(&mut self, path: PathBuf, text: impl Into<Arc<str>>) {
        let text = text.into();
        if let Ok(resolved) = path.canonicalize()
            && resolved != path
        {
            self.files.insert(resolved, text.clone());
        }
        self.files.insert(path, text);
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The buffer held for `path`, if any.
    pub fn get(&self, path: &Path) -> Option<&str> {
        if self.files.is_empty() {
            return None;
        }
        if let Some(t) = self.files.get(path) {
            return Some(t);
        }
        let resolved = path.canonicalize().ok()?;
        self.files.get(&resolved).map(|t| &**t)
    }

    /// The paths held (as inserted, and resolved where that differs).
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.keys().map(PathBuf::as_path)
    }
}

/// Modules found under the project's roots (the package root, then the
/// working directory), as `<root>/a/b.py` or `<root>/a/b/__init__.py`.
pub struct ProjectLoader {
    roots: Vec<PathBuf>,
    /// Buffers read instead of the files on disk.
    overlay: Overlay,
    /// Each file read, parsed, with the bytes read.
    files: Mutex<HashMap<PathBuf, Loaded>>,
    /// Each path [`ProjectLoader::find`] looked at, and whether a file was
    /// there.
    looked: Mutex<HashMap<PathBuf, bool>>,
    /// Larger files are refused before they are read (`max-file-size`).
    max_file_size: u64,
}

impl ProjectLoader {
    pub fn new(roots: Vec<PathBuf>) -> Self {
        Self::with_overlay(roots, Overlay::default())
    }

    /// A loader that reads `overlay`'s texts instead of the files at its paths.
    pub fn with_overlay(roots: Vec<PathBuf>, overlay: Overlay) -> Self {
        let mut unique: Vec<PathBuf> = Vec::new();
        for r in roots {
            if !unique.contains(&r) {
                unique.push(r);
            }
        }
        ProjectLoader {
            roots: unique,
            overlay,
            files: Mutex::new(HashMap::new()),
            looked: Mutex::new(HashMap::new()),
            max_file_size: patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE,
        }
    }

    /// Refuse files over `bytes` (the `max-file-size` setting).
    pub fn set_max_file_size(&mut self, bytes: u64) {
        self.max_file_size = bytes;
    }

    /// The roots modules are found under, in order.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The files read so far (each once, sorted), overlay buffers included.
    pub fn files_read(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.files.lock().expect("loader cache").keys().cloned().collect();
        out.sort();
        out
    }

    /// The file `module` lives in, and whether it is a package.
    pub fn find(&self, module: &str) -> Option<(PathBuf, bool)> {
        let mut looked = Vec::new();
        let found = self.find_probing(module, &mut |p, there| looked.push((p.to_path_buf(), there)));
        self.looked.lock().expect("loader lookups").extend(looked);
        found
    }

    /// As cache inputs, everything this loader has looked up and read so
    /// far: each file read (the digest of the bytes read; a file that could
    /// not be read or parsed never matches) and each lookup's answer.
    pub fn inputs(&self) -> Vec<Input> {
        let mut out: Vec<Input> = Vec::new();
        for (path, loaded) in self.files.lock().expect("loader cache").iter() {
            let probe = patchgen_cache::Probe::Content { path: path.clone() };
            let digest = match loaded {
                Ok((_, read)) => read.digest(),
                Err(_) => patchgen_cache::probe::digest_parts([b"unreadable".as_slice()]),
            };
            out.push(Input::new("project file", probe, digest));
        }
        for (path, there) in self.looked.lock().expect("loader lookups").iter() {
            out.push(Input::exists("project module lookup", path, *there));
        }
        out.sort_by(|a, b| a.probe.path().cmp(&b.probe.path()));
        out
    }

    /// [`ProjectLoader::find`], telling `probe` each path it looks at and
    /// whether a file is there.
    fn find_probing(&self, module: &str, probe: &mut dyn FnMut(&Path, bool)) -> Option<(PathBuf, bool)> {
        if module.is_empty() || module.split('.').any(|p| p.is_empty() || p.contains(['/', '\\'])) {
            return None;
        }
        let rel: PathBuf = module.split('.').collect();
        for root in &self.roots {
            let file = root.join(&rel).with_extension("py");
            let found = self.overlay.get(&file).is_some() || file.is_file();
            probe(&file, found);
            if found {
                return Some((file, false));
            }
            let init = root.join(&rel).join("__init__.py");
            let found = self.overlay.get(&init).is_some() || init.is_file();
            probe(&init, found);
            if found {
                return Some((init, true));
            }
        }
        None
    }

    /// Read and parse a file (cached).
    pub fn parse_file(&self, path: &Path) -> Result<Arc<ParsedFile>, LoadError> {
        self.parse_file_read(path).map(|(file, _)| file)
    }

    /// [`ProjectLoader::parse_file`] and the digest of the bytes it read.
    fn parse_file_digest(&self, path: &Path) -> Result<(Arc<ParsedFile>, Digest), LoadError> {
        self.parse_file_read(path).map(|(file, read)| (file, read.digest()))
    }

    /// [`ProjectLoader::parse_file`] and the bytes it read.
    fn parse_file_read(&self, path: &Path) -> Loaded {
        if let Some(r) = self.files.lock().expect("loader cache").get(path) {
            return r.clone();
        }
        let read = match self.overlay.get(path) {
            Some(text) => Ok(text.as_bytes().to_vec()),
            None => patchgen_cache::bounded::read(path, self.max_file_size),
        };
        let result =
            read.map_err(|e| LoadError::Io { path: path.to_path_buf(), message: e.to_string() }).and_then(|bytes| {
                let text = decode_python(path, &bytes)?;
                if let Some(line) = patchgen_python::merge::first_marker(&text) {
                    return Err(LoadError::Conflict { path: path.to_path_buf(), line });
                }
                let read = Arc::new(ReadBytes { bytes, digest: std::sync::OnceLock::new() });
                ParsedFile::parse(path.to_path_buf(), &text)
                    .map(|file| (Arc::new(file), read))
                    .map_err(|e| LoadError::Syntax { path: path.to_path_buf(), line: e.line, message: e.message })
            });
        self.files.lock().expect("loader cache").insert(path.to_path_buf(), result.clone());
        result
    }
}

/// A Python source file as text: UTF-8 (a BOM is dropped, as Python does).
pub fn read_python(path: &Path) -> Result<String, LoadError> {
    let bytes = patchgen_cache::bounded::read(path, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE)
        .map_err(|e| LoadError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    decode_python(path, &bytes)
}

fn decode_python(path: &Path, bytes: &[u8]) -> Result<String, LoadError> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let text = String::from_utf8(bytes.to_vec()).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        LoadError::Io {
            path: path.to_path_buf(),
            message: format!(
                "line {line}: not valid UTF-8 (byte offset {offset}); patchgen reads Python sources as UTF-8"
            ),
        }
    })?;
    // Python refuses them too ("source code cannot contain null bytes").
    if let Some(offset) = text.bytes().position(|b| b == 0) {
        let line = text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        return Err(LoadError::Io {
            path: path.to_path_buf(),
            message: format!("line {line}: a NUL byte (byte offset {offset}); Python source cannot contain null bytes"),
        });
    }
    Ok(text)
}

impl ModuleLoader for ProjectLoader {
    fn exists(&self, module: &str) -> bool {
        self.find(module).is_some()
    }

    fn load(&self, module: &str) -> Option<Result<LoadedModule, LoadError>> {
        let (path, is_package) = self.find(module)?;
        Some(self.parse_file(&path).map(|file| LoadedModule { file, is_package }))
    }
}

/// A [`ProjectLoader`] that notes, as cache inputs, every path it looks
/// at for a module (and whether a file was there) and the bytes of every
/// file it hands out: exactly what one evaluation depended on.
pub struct Recording<'a> {
    inner: &'a ProjectLoader,
    inputs: Mutex<Vec<Input>>,
}

impl<'a> Recording<'a> {
    pub fn new(inner: &'a ProjectLoader) -> Self {
        Recording { inner, inputs: Mutex::new(Vec::new()) }
    }

    /// What was looked at and read, in order.
    pub fn into_inputs(self) -> Vec<Input> {
        self.inputs.into_inner().expect("recording")
    }

    fn find(&self, module: &str) -> Option<(PathBuf, bool)> {
        let mut inputs = self.inputs.lock().expect("recording");
        self.inner
            .find_probing(module, &mut |path, found| inputs.push(Input::exists("project module lookup", path, found)))
    }
}

impl ModuleLoader for Recording<'_> {
    fn exists(&self, module: &str) -> bool {
        self.find(module).is_some()
    }

    fn load(&self, module: &str) -> Option<Result<LoadedModule, LoadError>> {
        let (path, is_package) = self.find(module)?;
        Some(self.inner.parse_file_digest(&path).map(|(file, digest)| {
            let probe = patchgen_cache::Probe::Content { path: path.clone() };
            self.inputs.lock().expect("recording").push(Input::new("project module", probe, digest));
            LoadedModule { file, is_package }
        }))
    }
}

/// Modules held in memory (`module name → source`), for tests and fuzzing.
pub struct MemoryLoader {
    modules: HashMap<String, (PathBuf, Result<Arc<ParsedFile>, LoadError>)>,
}

impl MemoryLoader {
    pub fn new<'a>(modules: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let modules = modules
            .into_iter()
            .map(|(name, text)| {
                let path = PathBuf::from(format!("{}.py", name.replace('.', "/")));
                let parsed = match patchgen_python::merge::first_marker(text) {
                    Some(line) => Err(LoadError::Conflict { path: path.clone(), line }),
                    None => ParsedFile::parse(path.clone(), text).map(Arc::new).map_err(|e| LoadError::Syntax {
                        path: path.clone(),
                        line: e.line,
                        message: e.message,
                    }),
                };
                (name.to_string(), (path, parsed))
            })
            .collect();
        MemoryLoader { modules }
    }
}

impl ModuleLoader for MemoryLoader {
    fn exists(&self, module: &str) -> bool {
        self.modules.contains_key(module)
    }

    fn load(&self, module: &str) -> Option<Result<LoadedModule, LoadError>> {
        let (_, parsed) = self.modules.get(module)?;
        Some(parsed.clone().map(|file| LoadedModule { file, is_package: false }))
    }
}
