//! Normalising many files with two ruff processes instead of two per file.
//!
//! ruff can only batch files that are on disk, and what it does to a file
//! depends on where the file is: the nearest settings file, globs in
//! `per-file-ignores`/`exclude`/`per-file-target-version` (matched against
//! the absolute path and the basename, anchored at the settings file's
//! directory), `src` (first-party modules are found by looking for them on
//! disk), and the package root (`__init__.py` files up the tree). The
//! checked-in file at the real path must not be touched (`--check` leaves
//! the tree unchanged), so the batch runs in a *mirror*: a temporary
//! directory `M` that shows the same tree as the settings file's directory
//! `P`, with the generated texts in place of the real targets:
//!
//! - every directory from `P` down to a target's directory is a real
//!   directory in `M`, and every other entry in it is a symlink to the
//!   entry in `P`;
//! - each target is a regular file at the same relative place, holding the
//!   un-normalised text (with the real file's permission bits, if it exists).
//!
//! So for every relative path `x`, `M/x` exists (as the same kind of thing,
//! with the same content) exactly when `P/x` does, except the targets; ruff
//! does not resolve symlinks, so it sees `M` as the project root, and every
//! glob, `src` entry and package lookup resolves relative to `M` exactly as
//! it does relative to `P`. ruff runs with `M` as its working directory and
//! `--no-cache` (a cache would otherwise be written through the
//! `.ruff_cache` symlink into the real tree). Nothing is written outside
//! `M`. Where `M` lives (`temp_dir`: tmpfs if there is one) cannot change
//! the result: ruff never looks above `M`, because the settings file is
//! found at `M`'s top and the guards below keep package detection and
//! every path inside `M`.
//!
//! Files on ruff's command line get the settings of their nearest settings
//! file, the base settings (`force-exclude`) come from the working
//! directory's, and `--stdin-filename` takes both from the nearest settings
//! file of the given path: the same file, under the first guard below.
//!
//! A file is batched only when all of this holds (otherwise it goes through
//! the per-file `--stdin-filename` path, which is always exact):
//! - not `--isolated`: the nearest settings file for the target, `C`, is
//!   the same as for the working directory (so ruff's base settings, which
//!   decide `force-exclude`, are the same file), and `C` is self-contained
//!   (`settings::self_contained`: no `extend`, no `namespace-packages`, no
//!   absolute, `~`, `$VAR` or `..` paths); `P` is `C`'s directory;
//! - `--isolated`: `P` is the working directory and the target is inside it;
//! - `P` holds no `__init__.py` (package detection would climb above it);
//! - the directories from `P` to the target are directories (or missing).
//!
//! If either ruff step exits with anything but success (a rejected file,
//! remaining diagnostics, a crash) the whole batch is redone per file, so
//! errors and their messages are exactly those of the per-file path.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Ruff;
use super::settings;

/// Where one target goes in a batch.
pub struct Placement {
    /// Directory whose view the mirror reproduces.
    pub root: PathBuf,
    /// The target relative to `root`.
    pub rel: PathBuf,
}

/// Decides, file by file, whether a target can be normalised in a mirror of
/// some root, and where; remembers what it found per directory.
pub struct Placer<'a> {
    ruff: &'a Ruff,
    cwd: PathBuf,
    /// The settings file for the working directory (not `--isolated`).
    cwd_settings: Option<PathBuf>,
    nearest: BTreeMap<PathBuf, Option<PathBuf>>,
    contained: BTreeMap<PathBuf, bool>,
}

impl<'a> Placer<'a> {
    /// `cwd` is the directory ruff would run in for the per-file path.
    pub fn new(ruff: &'a Ruff, cwd: &Path) -> Self {
        let cwd_settings = if ruff.isolated { None } else { settings::find_settings_toml(cwd).ok().flatten() };
        Placer { ruff, cwd: cwd.to_path_buf(), cwd_settings, nearest: BTreeMap::new(), contained: BTreeMap::new() }
    }

    /// `settings::find_settings_toml(dir)`, sharing the work between
    /// directories (`None` also when a `pyproject.toml` is unreadable).
    fn nearest(&mut self, dir: &Path) -> Option<PathBuf> {
        if let Some(found) = self.nearest.get(dir) {
            return found.clone();
        }
        let found = match settings::settings_toml(dir) {
            Ok(Some(file)) => Some(file),
            Ok(None) => dir.parent().and_then(|parent| self.nearest(parent)),
            Err(()) => None,
        };
        self.nearest.insert(dir.to_path_buf(), found.clone());
        found
    }

    pub fn place(&mut self, target: &Path) -> Option<Placement> {
        let target = settings::lexical(target)?;
        let dir = target.parent()?;
        let root = if self.ruff.isolated {
            settings::lexical(&self.cwd)?
        } else {
            let nearest = self.nearest(dir)?;
            if self.cwd_settings.as_ref() != Some(&nearest) {
                return None;
            }
            let contained =
                *self.contained.entry(nearest.clone()).or_insert_with(|| settings::self_contained(&nearest));
            if !contained {
                return None;
            }
            nearest.parent()?.to_path_buf()
        };
        let rel = target.strip_prefix(&root).ok()?.to_path_buf();
        if rel.as_os_str().is_empty() || root.join("__init__.py").exists() {
            return None;
        }
        // Every directory on the way down must be a directory (or not exist yet).
        let mut walk = root.clone();
        let parts: Vec<_> = rel.components().collect();
        for part in &parts[..parts.len() - 1] {
            walk.push(part);
            if walk.exists() && !walk.is_dir() {
                return None;
            }
        }
        if target.is_dir() {
            return None;
        }
        Some(Placement { root, rel })
    }
}

/// A mirror of `root` holding `files` (relative path → text).
struct Mirror {
    dir: tempfile::TempDir,
}

impl Mirror {
    fn build(root: &Path, files: &[(&Path, &str)], env: &crate::settings::Env) -> std::io::Result<Mirror> {
        let dir = temp_dir(env)?;
        let top = dir.path();
        // Directories that must be real in the mirror, and the entries of
        // each that are ours (sub-directories on a path, or targets).
        let mut own: BTreeMap<PathBuf, BTreeSet<OsString>> = BTreeMap::new();
        own.entry(PathBuf::new()).or_default();
        for (rel, _) in files {
            let mut parent = PathBuf::new();
            for part in rel.components() {
                own.entry(parent.clone()).or_default().insert(part.as_os_str().to_os_string());
                parent.push(part);
            }
        }
        let targets: BTreeSet<&Path> = files.iter().map(|(rel, _)| *rel).collect();
        for (rel_dir, mine) in &own {
            if targets.contains(rel_dir.as_path()) {
                continue;
            }
            let image = top.join(rel_dir);
            std::fs::create_dir_all(&image)?;
            let real = root.join(rel_dir);
            let Ok(entries) = std::fs::read_dir(&real) else {
                continue;
            };
            for entry in entries {
                let entry = entry?;
                let name = entry.file_name();
                if mine.contains(&name) {
                    continue;
                }
                symlink(&entry.path(), &image.join(&name))?;
            }
        }
        for (rel, text) in files {
            let path = top.join(rel);
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            // The real file's permission bits (rules such as EXE002 look
            // at them), kept writable for ruff.
            #[cfg(unix)]
            if let Ok(meta) = std::fs::metadata(root.join(rel)) {
                use std::os::unix::fs::PermissionsExt;
                let mode = meta.permissions().mode() | 0o600;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
            }
        }
        Ok(Mirror { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A fresh private directory, preferably in memory: creating and removing
/// a few hundred entries on a disk file system can cost more than ruff
/// itself (ext4 mounted with `discard` takes milliseconds per removed
/// directory). `$XDG_RUNTIME_DIR` (a per-user tmpfs), then `/dev/shm`, then
/// the system temporary directory; where the mirror lives does not change
/// what ruff sees (it never looks above the mirror).
///
/// The directory is removed when dropped, also when a panic unwinds. A
/// process killed outright (ctrl-c) cannot remove it, so its name carries
/// the process id and later runs remove mirrors whose process is gone.
fn temp_dir(env: &crate::settings::Env) -> std::io::Result<tempfile::TempDir> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if cfg!(target_os = "linux") {
        if let Some(run) = env.var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
            && run.is_absolute()
        {
            candidates.push(run);
        }
        candidates.push(PathBuf::from("/dev/shm"));
    }
    candidates.push(std::env::temp_dir());
    let prefix = format!("{MIRROR_PREFIX}{}-", std::process::id());
    let mut last = None;
    for base in candidates.iter().filter(|b| b.is_dir()) {
        match tempfile::Builder::new().prefix(&prefix).tempdir_in(base) {
            Ok(dir) => {
                sweep_once(base);
                return Ok(dir);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary directory")))
}

const MIRROR_PREFIX: &str = "patchgen-ruff-";

/// Remove mirrors left in `base` by processes that no longer exist (Linux,
/// where `/proc` says which do), once per run.
fn sweep_once(base: &Path) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| sweep(base));
}

fn sweep(base: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) =
                name.to_str().and_then(|n| n.strip_prefix(MIRROR_PREFIX)).and_then(|rest| rest.split('-').next())
            else {
                continue;
            };
            let Ok(pid) = pid.parse::<u32>() else {
                continue;
            };
            let stale = pid != std::process::id()
                && !Path::new("/proc").join(pid.to_string()).exists()
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > std::time::Duration::from_secs(60)));
            if stale && entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

#[cfg(unix)]
fn symlink(original: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(original, link)
}

#[cfg(windows)]
fn symlink(original: &Path, link: &Path) -> std::io::Result<()> {
    if original.is_dir() {
        std::os::windows::fs::symlink_dir(original, link)
    } else {
        std::os::windows::fs::symlink_file(original, link)
    }
}

/// Why a batch did not produce results (the caller redoes it per file).
#[derive(Debug)]
pub struct BatchFailed(pub String);

impl Ruff {
    fn batch_command(&self, step: &str, cwd: &Path, files: &[PathBuf], jobs: usize) -> Command {
        let mut cmd = Command::new(&self.program);
        // ruff's threads: as many as ours (`--jobs`), the default being the
        // same number ruff would pick.
        cmd.env("RAYON_NUM_THREADS", jobs.max(1).to_string());
        cmd.arg(step);
        if step == "check" {
            cmd.arg("--fix");
        }
        cmd.arg("--quiet").arg("--no-cache");
        // The reference normalises a temporary file that no exclusion can
        // match: a project excluding generated/ from ruff still gets them
        // normalised.
        cmd.arg("--no-force-exclude");
        if self.isolated {
            cmd.arg("--isolated");
        }
        if step == "check" {
            cmd.arg("--ignore").arg(self.ignore_list());
        }
        cmd.arg("--");
        cmd.args(files);
        cmd.current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    /// Fix and format `files` (relative path → raw text) in one mirror of
    /// `root`, ruff using `jobs` threads; the normalised texts in order.
    pub fn normalize_batch(
        &self,
        root: &Path,
        files: &[(&Path, &str)],
        jobs: usize,
    ) -> Result<Vec<String>, BatchFailed> {
        let fail = |what: &str, e: &dyn std::fmt::Display| BatchFailed(format!("{what}: {e}"));
        let mirror = Mirror::build(root, files, &self.env).map_err(|e| fail("cannot build the mirror", &e))?;
        crate::timings::mark("mirror built");
        let paths: Vec<PathBuf> = files.iter().map(|(rel, _)| mirror.path().join(rel)).collect();
        for step in ["check", "format"] {
            let out = self.batch_command(step, mirror.path(), &paths, jobs).output().map_err(|e| fail(step, &e))?;
            if !out.status.success() {
                return Err(BatchFailed(format!("ruff {step} exited with {}", out.status)));
            }
            crate::timings::mark(if step == "check" { "ruff check" } else { "ruff format" });
        }
        let mut results = Vec::with_capacity(paths.len());
        for p in &paths {
            let bytes = std::fs::read(p).map_err(|e| fail("cannot read back", &e))?;
            let text = String::from_utf8(bytes).map_err(|e| fail("non-UTF-8 output", &e))?;
            results.push(patchgen_python::pytext::universal_newlines_owned(text));
        }
        drop(mirror);
        crate::timings::mark("read back, mirror removed");
        Ok(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_mirrors_are_swept() {
        if !Path::new("/proc/self").exists() {
            return;
        }
        let base = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let make = |name: &str, age: std::time::SystemTime| {
            let d = base.path().join(name);
            std::fs::create_dir_all(d.join("sub")).unwrap();
            std::os::unix::fs::symlink(base.path().join("keep"), d.join("link")).unwrap();
            std::fs::File::open(&d).unwrap().set_modified(age).unwrap();
            d
        };
        std::fs::create_dir(base.path().join("keep")).unwrap();
        let dead_old = make("patchgen-ruff-999999999-abc", old);
        let dead_new = make("patchgen-ruff-999999998-abc", std::time::SystemTime::now());
        let alive = make(&format!("patchgen-ruff-{}-abc", std::process::id()), old);
        let other = make("something-else", old);
        sweep(base.path());
        assert!(!dead_old.exists());
        assert!(dead_new.exists() && alive.exists() && other.exists());
        assert!(base.path().join("keep").is_dir(), "links are removed, not followed");
    }

    #[test]
    fn mirror_shows_the_same_tree() {
        let real = tempfile::tempdir().unwrap();
        let root = real.path();
        std::fs::create_dir_all(root.join("pkg/sub/generated")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("pyproject.toml"), "[tool.ruff]\n").unwrap();
        std::fs::write(root.join("pkg/__init__.py"), "").unwrap();
        std::fs::write(root.join("pkg/sub/__init__.py"), "").unwrap();
        std::fs::write(root.join("pkg/sub/generated/out.py"), "old\n").unwrap();
        std::fs::write(root.join("pkg/sub/generated/out.diff"), "d\n").unwrap();
        let rel = Path::new("pkg/sub/generated/out.py");
        let m = Mirror::build(root, &[(rel, "new\n")], &crate::settings::Env::default()).unwrap();
        let top = m.path();
        assert!(std::fs::symlink_metadata(top.join("pyproject.toml")).unwrap().file_type().is_symlink());
        assert!(std::fs::symlink_metadata(top.join("other")).unwrap().file_type().is_symlink());
        for d in ["pkg", "pkg/sub", "pkg/sub/generated"] {
            assert!(std::fs::symlink_metadata(top.join(d)).unwrap().is_dir(), "{d}");
        }
        assert!(top.join("pkg/__init__.py").is_file());
        assert!(top.join("pkg/sub/generated/out.diff").is_file());
        assert_eq!(std::fs::read_to_string(top.join(rel)).unwrap(), "new\n");
        assert!(!std::fs::symlink_metadata(top.join(rel)).unwrap().file_type().is_symlink());
        let top = top.to_path_buf();
        drop(m);
        assert!(!top.exists());
        // The real tree is untouched.
        assert_eq!(std::fs::read_to_string(root.join(rel)).unwrap(), "old\n");
        assert!(root.join("other").is_dir());
    }
}
