//! `--from` / `--to`: where an upstream version is. A directory holding the
//! package (an unpacked wheel, a site-packages), a wheel file, or a version
//! number: then the wheel is taken from the local cache
//! (`<cache>/wheels/<package>-<version>-*.whl`) or, when missing, fetched
//! into it with `python3 -m pip download --no-deps`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::upstream::{SearchPath, parse_version};

/// A resolved upstream version.
pub struct Upstream {
    /// The argument as given.
    pub arg: String,
    /// The package's `__version__` (else the version in the wheel's file
    /// name, else the directory's name).
    pub version: String,
    /// The directory or wheel modules are read from.
    pub location: PathBuf,
    pub search: SearchPath,
}

/// Where version numbers are looked up and fetched.
#[derive(Clone, Debug)]
pub struct WheelCache {
    /// `<cache>/wheels`.
    pub dir: PathBuf,
    /// The distribution to fetch (`transformers`).
    pub package: String,
    /// Run pip when a version is not cached.
    pub download: bool,
    /// Told when pip runs (it can take a while).
    pub reporter: crate::progress::Reporter,
}

impl WheelCache {
    /// `${PATCHGEN_CACHE:-<project root>/.cache}/wheels` (`PATCHGEN_CACHE` of `env`).
    pub fn default_dir(env: &crate::settings::Env, project_root: &Path) -> PathBuf {
        crate::settings::wheel_cache_dir(env, project_root)
    }

    /// The cached wheel of `version`, if any (the first in name order).
    pub fn find(&self, version: &str) -> Option<PathBuf> {
        let prefix = format!("{}-{}-", wheel_name(&self.package), version).to_lowercase();
        let mut found: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy().to_lowercase();
                    n.starts_with(&prefix) && n.ends_with(".whl")
                })
            })
            .collect();
        found.sort();
        found.into_iter().next()
    }

    /// The cached wheel, fetched first when missing.
    pub fn wheel(&self, version: &str) -> Result<PathBuf, SourceError> {
        if let Some(w) = self.find(version) {
            return Ok(w);
        }
        let requirement = format!("{}=={version}", self.package);
        if !self.download {
            return Err(SourceError::NotCached { requirement, dir: self.dir.clone() });
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| SourceError::CacheDir { dir: self.dir.clone(), source })?;
        self.reporter.note(&format!("fetching {requirement} into {} (pip download)", self.dir.display()));
        let output = Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", &requirement, "-d"])
            .arg(&self.dir)
            .output()
            .map_err(|source| SourceError::NoPip { source })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr).trim_end().to_string();
            return Err(SourceError::PipFailed { requirement, stderr });
        }
        self.find(version).ok_or_else(|| SourceError::NotDownloaded { requirement, dir: self.dir.clone() })
    }
}

/// Why an upstream argument (`--from`, `--to`, `--upstream`) or a version's
/// wheel cannot be had (a usage error: the message says what to pass instead).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(
        "no wheel of {requirement} in {}\n  help: drop --no-download to fetch it with pip, or pass a directory or .whl file",
        dir.display()
    )]
    NotCached { requirement: String, dir: PathBuf },
    #[error("{}: cannot create the wheel cache: {source}", dir.display())]
    CacheDir { dir: PathBuf, source: std::io::Error },
    #[error(
        "cannot run `python3 -m pip download`: {source}\n  help: install python3 with pip, or pass a directory or .whl file"
    )]
    NoPip { source: std::io::Error },
    #[error(
        "`python3 -m pip download --no-deps {requirement}` failed:\n{stderr}\n  help: check the version number, or pass a directory or .whl file"
    )]
    PipFailed { requirement: String, stderr: String },
    #[error("pip downloaded {requirement} but no wheel of it is in {}", dir.display())]
    NotDownloaded { requirement: String, dir: PathBuf },
    #[error("{arg}: not a directory or a .whl file")]
    NotAWheel { arg: String },
    #[error(
        "{arg}: no such file or directory\n  help: pass a directory holding the `{package}` package, a .whl file or a version number"
    )]
    Missing { arg: String, package: String },
}

/// The distribution name as wheel file names spell it.
fn wheel_name(package: &str) -> String {
    package.replace(['-', '.'], "_")
}

/// A version number rather than a path: digits first, then only the
/// characters PEP 440 versions use.
fn looks_like_version(arg: &str) -> bool {
    arg.starts_with(|c: char| c.is_ascii_digit())
        && arg.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!' | '-' | '_'))
}

/// Resolve one `--from`/`--to` argument; `Err` is a usage error.
pub fn resolve(arg: &str, cwd: &Path, cache: &WheelCache) -> Result<Upstream, SourceError> {
    let path = cwd.join(arg);
    let (location, file_version) = if path.exists() {
        if path.is_file() {
            if !path.extension().is_some_and(|e| e == "whl" || e == "zip") {
                return Err(SourceError::NotAWheel { arg: arg.to_string() });
            }
            let v = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.split('-').nth(1)).map(str::to_string);
            (path, v)
        } else {
            (package_parent(&path, &cache.package), None)
        }
    } else if looks_like_version(arg) {
        (cache.wheel(arg)?, Some(arg.to_string()))
    } else {
        return Err(SourceError::Missing { arg: arg.to_string(), package: cache.package.clone() });
    };
    let search = SearchPath::new(vec![location.clone()]);
    let init = format!("{}.__init__", cache.package);
    let version =
        search.find_module(&init).ok().and_then(|s| parse_version(&s.text)).or(file_version).unwrap_or_else(|| {
            location.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| arg.to_string())
        });
    Ok(Upstream { arg: arg.to_string(), version, location, search })
}

/// A directory that is the package itself (`.../site-packages/transformers`)
/// stands for the directory holding it.
fn package_parent(dir: &Path, package: &str) -> PathBuf {
    let top = package.split('.').next().unwrap_or(package);
    let is_package =
        !dir.join(top).is_dir() && dir.join("__init__.py").is_file() && dir.file_name().is_some_and(|n| n == top);
    match dir.parent() {
        Some(parent) if is_package => parent.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_paths() {
        assert!(looks_like_version("5.16.1"));
        assert!(looks_like_version("5.0.0rc1"));
        assert!(!looks_like_version("old"));
        assert!(!looks_like_version("./5.9"));
    }

    #[test]
    fn cache_lookup_matches_name_and_version() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["toy_lib-1.0-py3-none-any.whl", "toy_lib-1.0.1-py3-none-any.whl", "other-1.0-py3-none-any.whl"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let cache = WheelCache {
            dir: dir.path().to_path_buf(),
            package: "toy-lib".into(),
            download: false,
            reporter: Default::default(),
        };
        assert_eq!(cache.find("1.0").unwrap().file_name().unwrap(), "toy_lib-1.0-py3-none-any.whl");
        assert!(cache.find("2.0").is_none());
        assert!(cache.wheel("2.0").unwrap_err().to_string().contains("no wheel of toy-lib==2.0"));
    }
}
