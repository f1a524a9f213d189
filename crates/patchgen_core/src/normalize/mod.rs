//! Normalisation with the `ruff` binary, exactly as the reference runs it:
//! `ruff check --fix --quiet [--isolated] --ignore E402,B007[,extra]`, then
//! `ruff format --quiet [--isolated]`, with the settings that govern the
//! generated file's real path.
//!
//! Two ways, same bytes:
//! - per file ([`Ruff::normalize`]): the text goes through stdin with
//!   `--stdin-filename` set to the real path; nothing touches the disk.
//!   Two processes per file.
//! - batched ([`Ruff::normalize_many`]): files whose settings provably do
//!   not depend on where the text sits are written into a mirror of their
//!   project in a temporary directory and normalised with one `ruff check`
//!   and one `ruff format` for all of them (see `batch.rs` for the argument
//!   and its guards); everything else, and any batch that ruff does not
//!   accept cleanly, goes per file.
//!
//! `docs/performance.md` has the measurements behind the choice.

mod batch;
pub mod inputs;
mod settings;
pub mod steps;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Codes the reference always ignores.
pub const DEFAULT_IGNORE: [&str; 2] = ["E402", "B007"];

/// The ruff version the reference (VeOmni) pins.
pub const PINNED_RUFF: &str = "0.13.2";

#[derive(Clone, Debug)]
pub struct Ruff {
    pub program: PathBuf,
    pub extra_ignore: Vec<String>,
    pub isolated: bool,
    /// The environment ruff is found in and reads (`PATH`, `HOME`,
    /// `XDG_*`, `RUFF_*`, `$VAR` in its settings; `PATCHGEN_RUFF_MODE`):
    /// the binary's snapshot, never the process's behind its back.
    pub env: crate::settings::Env,
}

/// Why ruff could not normalise a generated file (the file is the
/// caller's: `Failure::Ruff` names it).
#[derive(Debug, thiserror::Error)]
pub enum RuffError {
    #[error(
        "ruff not found (`{}`)\n  help: install the pinned version with `pip install ruff=={PINNED_RUFF}`, or point `--ruff` / `ruff` in [tool.patchgen] at the binary",
        program.display()
    )]
    NotFound { program: PathBuf },
    #[error("cannot run `{}`: {message}", program.display())]
    Spawn { program: PathBuf, message: String },
    #[error(
        "ruff {step} rejected the generated file (exit {}):\n{}\n  help: {}",
        code.map(|c| c.to_string()).unwrap_or_else(|| "signal".into()),
        diagnostics.trim_end(),
        rejected_help(*code, diagnostics)
    )]
    Rejected { step: &'static str, code: Option<i32>, diagnostics: String },
}

/// What to do about a rejection: ruff's findings (exit 1) are the
/// generated code's; a crash (killed by a signal, a panic, its stack
/// overflowing: exit 2 or none) is ruff's own.
fn rejected_help(code: Option<i32>, diagnostics: &str) -> &'static str {
    let crashed = code.is_none()
        || ["panicked", "Ruff crashed", "stack overflow", "has overflowed its stack"]
            .iter()
            .any(|w| diagnostics.contains(w));
    if crashed {
        "ruff itself crashed on the generated code (not a finding about it): a deeply nested expression in a replacement can do this; simplify it, or try another ruff version"
    } else {
        "the generated code uses a name nothing defines or imports? add it with `config.add_import(...)`, or fix the replacement source"
    }
}

/// How [`Ruff::normalize_many`] runs ruff (`crate::settings::ruff_mode`:
/// `PATCHGEN_RUFF_MODE=per-file` forces the per-file path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    PerFile,
    Batch,
}

/// Below this many files a batch saves nothing (it costs the same two
/// processes as one file, plus the mirror).
const MIN_BATCH: usize = 2;

/// At most this many files per ruff command line.
const MAX_BATCH: usize = 1000;

impl Ruff {
    fn ignore_list(&self) -> String {
        let mut ignore: Vec<&str> = DEFAULT_IGNORE.to_vec();
        ignore.extend(self.extra_ignore.iter().map(String::as_str));
        ignore.join(",")
    }

    fn command(&self, step: &str, target: &Path, cwd: Option<&Path>) -> Command {
        let mut cmd = Command::new(&self.program);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        cmd.arg(step);
        if step == "check" {
            cmd.arg("--fix");
        }
        cmd.arg("--quiet");
        // As in the batch: exclusions never skip a generated file (the
        // reference normalises a temporary file no exclusion matches).
        cmd.arg("--no-force-exclude");
        if self.isolated {
            cmd.arg("--isolated");
        }
        if step == "check" {
            cmd.arg("--ignore").arg(self.ignore_list());
        }
        cmd.arg("--stdin-filename").arg(target).arg("-");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    fn run(&self, step: &'static str, input: &str, target: &Path, cwd: Option<&Path>) -> Result<String, RuffError> {
        let mut child = self.command(step, target, cwd).spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                RuffError::NotFound { program: self.program.clone() }
            } else {
                RuffError::Spawn { program: self.program.clone(), message: e.to_string() }
            }
        })?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let input_owned = input.to_string();
        let writer = std::thread::spawn(move || stdin.write_all(input_owned.as_bytes()));
        let output = child
            .wait_with_output()
            .map_err(|e| RuffError::Spawn { program: self.program.clone(), message: e.to_string() })?;
        let _ = writer.join();
        if !output.status.success() {
            let mut diagnostics = String::from_utf8_lossy(&output.stderr).into_owned();
            if diagnostics.trim().is_empty() {
                diagnostics = String::from_utf8_lossy(&output.stdout).into_owned();
            }
            return Err(RuffError::Rejected { step, code: output.status.code(), diagnostics });
        }
        let text = String::from_utf8(output.stdout).map_err(|e| RuffError::Spawn {
            program: self.program.clone(),
            message: format!("non-UTF-8 output: {e}"),
        })?;
        Ok(patchgen_python::pytext::universal_newlines_owned(text))
    }

    /// `ruff check --fix --output-format json` of `raw` as if it were the
    /// file at `target`, with the settings [`Ruff::normalize`] uses: the
    /// fixed text and ruff's JSON list of what the fix left (rows and
    /// columns in the fixed text). For a caller that must see *which*
    /// findings made [`Ruff::normalize`] reject a text.
    pub fn check_findings(&self, raw: &str, target: &Path) -> Result<(String, String), RuffError> {
        let mut cmd = self.command("check", target, None);
        cmd.arg("--output-format").arg("json");
        let mut child =
            cmd.spawn().map_err(|e| RuffError::Spawn { program: self.program.clone(), message: e.to_string() })?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let input = raw.to_string();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let output = child
            .wait_with_output()
            .map_err(|e| RuffError::Spawn { program: self.program.clone(), message: e.to_string() })?;
        let _ = writer.join();
        let fixed = patchgen_python::pytext::universal_newlines(&String::from_utf8_lossy(&output.stdout)).into_owned();
        Ok((fixed, String::from_utf8_lossy(&output.stderr).into_owned()))
    }

    /// Fix then format `raw` as if it were the file at `target`.
    pub fn normalize(&self, raw: &str, target: &Path) -> Result<String, RuffError> {
        self.normalize_in(raw, target, None)
    }

    /// [`Ruff::normalize`] with ruff running in `cwd` (default: ours).
    fn normalize_in(&self, raw: &str, target: &Path, cwd: Option<&Path>) -> Result<String, RuffError> {
        let fixed = self.run("check", raw, target, cwd)?;
        self.run("format", &fixed, target, cwd)
    }

    /// Normalise many files, each as if it were at its target path (an
    /// absolute path); one result per item, in order, each exactly what
    /// [`Ruff::normalize`] returns for it. At most `jobs` files go through
    /// the per-file path at a time.
    pub fn normalize_many(&self, items: &[(&str, &Path)], jobs: usize) -> Vec<Result<String, RuffError>> {
        self.normalize_many_with(items, jobs, crate::settings::ruff_mode(&self.env))
    }

    /// [`Ruff::normalize_many`] with the mode given rather than read from
    /// `PATCHGEN_RUFF_MODE`.
    pub fn normalize_many_with(
        &self,
        items: &[(&str, &Path)],
        jobs: usize,
        mode: Mode,
    ) -> Vec<Result<String, RuffError>> {
        self.normalize_many_in(items, jobs, mode, None)
    }

    /// [`Ruff::normalize_many_with`] as if run from `cwd` (default: ours).
    fn normalize_many_in(
        &self,
        items: &[(&str, &Path)],
        jobs: usize,
        mode: Mode,
        cwd: Option<&Path>,
    ) -> Vec<Result<String, RuffError>> {
        let mut results: Vec<Option<Result<String, RuffError>>> = (0..items.len()).map(|_| None).collect();
        // Group the files that can be batched by the root their mirror shows.
        let mut groups: std::collections::BTreeMap<PathBuf, Vec<(usize, PathBuf)>> = Default::default();
        if mode == Mode::Batch && items.len() >= MIN_BATCH {
            let cwd = cwd.map(Path::to_path_buf).or_else(|| std::env::current_dir().ok());
            if let Some(cwd) = cwd {
                let mut placer = batch::Placer::new(self, &cwd);
                for (i, (_, target)) in items.iter().enumerate() {
                    if let Some(p) = placer.place(target) {
                        groups.entry(p.root).or_default().push((i, p.rel));
                    }
                }
            }
        }
        groups.retain(|_, files| files.len() >= MIN_BATCH);
        crate::timings::mark("placed");
        // One batch after the other: each keeps every core busy (ruff runs
        // `jobs` threads), and a command line stays well below the limit.
        for (root, files) in &groups {
            for files in files.chunks(MAX_BATCH) {
                let texts: Vec<(&Path, &str)> = files.iter().map(|(i, rel)| (rel.as_path(), items[*i].0)).collect();
                if let Ok(out) = self.normalize_batch(root, &texts, jobs) {
                    for ((i, _), text) in files.iter().zip(out) {
                        results[*i] = Some(Ok(text));
                    }
                }
            }
        }
        let rest: Vec<usize> = (0..items.len()).filter(|&i| results[i].is_none()).collect();
        for (i, r) in self.per_file(items, &rest, jobs, cwd) {
            results[i] = Some(r);
        }
        results.into_iter().map(|r| r.expect("every item normalised")).collect()
    }

    /// The per-file path for `items[i]`, `i` in `which`, on `jobs` threads.
    fn per_file(
        &self,
        items: &[(&str, &Path)],
        which: &[usize],
        jobs: usize,
        cwd: Option<&Path>,
    ) -> Vec<(usize, Result<String, RuffError>)> {
        if which.is_empty() {
            return Vec::new();
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let threads = jobs.clamp(1, which.len());
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(&i) = which.get(k) else { break };
                            done.push((i, self.normalize_in(items[i].0, items[i].1, cwd)));
                        }
                        done
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        })
    }

    /// `ruff --version`, for messages and `-v`.
    /// Whether the program can be started, found as `Command` finds it
    /// (the `PATH` search for a bare name), without starting it: a check's
    /// wall time should not wait for an extra process.
    pub fn is_available(&self) -> bool {
        use std::os::unix::fs::PermissionsExt;
        let runnable =
            |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if self.program.components().count() > 1 || self.program.is_absolute() {
            return runnable(&self.program);
        }
        match self.env.var_os("PATH") {
            Some(path) => std::env::split_paths(&path).any(|dir| runnable(&dir.join(&self.program))),
            None => self.version().is_some(),
        }
    }

    pub fn version(&self) -> Option<String> {
        let out = Command::new(&self.program).arg("--version").output().ok()?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}
