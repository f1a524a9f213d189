//! Finding and parsing the project's own Python modules (configs and what
//! they import). Files are read and parsed once per process and shared by
//! every evaluation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::source::ParsedFile;

pub struct LoadedModule {
    pub file: Arc<ParsedFile>,
    pub is_package: bool,
}

#[derive(Debug, Clone)]
pub enum LoadError {
    Syntax { path: PathBuf, line: usize, message: String },
    Io { path: PathBuf, message: String },
}

/// Where evaluation finds modules. Only modules a loader knows are ever read.
pub trait ModuleLoader: Sync {
    /// Whether `module` is a project module this loader can read.
    fn exists(&self, module: &str) -> bool;
    fn load(&self, module: &str) -> Option<Result<LoadedModule, LoadError>>;
}

/// Modules found under the project's roots (the package root, then the
/// working directory), as `<root>/a/b.py` or `<root>/a/b/__init__.py`.
pub struct ProjectLoader {
    roots: Vec<PathBuf>,
    files: Mutex<HashMap<PathBuf, Result<Arc<ParsedFile>, LoadError>>>,
}

impl ProjectLoader {
    pub fn new(roots: Vec<PathBuf>) -> Self {
        let mut unique: Vec<PathBuf> = Vec::new();
        for r in roots {
            if !unique.contains(&r) {
                unique.push(r);
            }
        }
        ProjectLoader { roots: unique, files: Mutex::new(HashMap::new()) }
    }

    /// The file `module` lives in, and whether it is a package.
    pub fn find(&self, module: &str) -> Option<(PathBuf, bool)> {
        if module.is_empty() || module.split('.').any(|p| p.is_empty() || p.contains(['/', '\\'])) {
            return None;
        }
        let rel: PathBuf = module.split('.').collect();
        for root in &self.roots {
            let file = root.join(&rel).with_extension("py");
            if file.is_file() {
                return Some((file, false));
            }
            let init = root.join(&rel).join("__init__.py");
            if init.is_file() {
                return Some((init, true));
            }
        }
        None
    }

    /// Read and parse a file (cached).
    pub fn parse_file(&self, path: &Path) -> Result<Arc<ParsedFile>, LoadError> {
        if let Some(r) = self.files.lock().expect("loader cache").get(path) {
            return r.clone();
        }
        let result = read_python(path).and_then(|text| {
            ParsedFile::parse(path.to_path_buf(), &text).map(Arc::new).map_err(|e| LoadError::Syntax {
                path: path.to_path_buf(),
                line: e.line,
                message: e.message,
            })
        });
        self.files.lock().expect("loader cache").insert(path.to_path_buf(), result.clone());
        result
    }
}

/// A Python source file as text: UTF-8 (a BOM is dropped, as Python does).
pub fn read_python(path: &Path) -> Result<String, LoadError> {
    let bytes = std::fs::read(path).map_err(|e| LoadError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        LoadError::Io {
            path: path.to_path_buf(),
            message: format!(
                "line {line}: not valid UTF-8 (byte offset {offset}); patchgen reads Python sources as UTF-8"
            ),
        }
    })
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
                let parsed = ParsedFile::parse(path.clone(), text).map(Arc::new).map_err(|e| LoadError::Syntax {
                    path: path.clone(),
                    line: e.line,
                    message: e.message,
                });
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
