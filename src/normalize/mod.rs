//! Normalisation with the `ruff` binary, exactly as the reference runs it:
//! `ruff check --fix --quiet [--isolated] --ignore E402,B007[,extra]`, then
//! `ruff format --quiet [--isolated]`. The text goes through stdin with
//! `--stdin-filename` set to the generated file's real path, so ruff applies
//! the settings that govern that path (and nothing in `TMPDIR` can change
//! the result), and nothing is written to disk.

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
}

#[derive(Debug)]
pub enum RuffError {
    NotFound { program: PathBuf },
    Spawn { program: PathBuf, message: String },
    Rejected { step: &'static str, code: Option<i32>, diagnostics: String },
}

impl std::fmt::Display for RuffError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuffError::NotFound { program } => write!(
                f,
                "ruff not found (`{}`)\n  help: install the pinned version with `pip install ruff=={PINNED_RUFF}`, or point `--ruff` / `ruff` in [tool.patchgen] at the binary",
                program.display()
            ),
            RuffError::Spawn { program, message } => write!(f, "cannot run `{}`: {message}", program.display()),
            RuffError::Rejected { step, code, diagnostics } => {
                write!(
                    f,
                    "ruff {step} rejected the generated file (exit {}):\n{}",
                    code.map(|c| c.to_string()).unwrap_or_else(|| "signal".into()),
                    diagnostics.trim_end()
                )?;
                write!(f, "\n  help: the generated code uses a name nothing defines or imports? add it with `config.add_import(...)`, or fix the replacement source")
            }
        }
    }
}

impl Ruff {
    fn command(&self, step: &str, target: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg(step);
        if step == "check" {
            cmd.arg("--fix");
        }
        cmd.arg("--quiet");
        if self.isolated {
            cmd.arg("--isolated");
        }
        if step == "check" {
            let mut ignore: Vec<&str> = DEFAULT_IGNORE.to_vec();
            ignore.extend(self.extra_ignore.iter().map(String::as_str));
            cmd.arg("--ignore").arg(ignore.join(","));
        }
        cmd.arg("--stdin-filename").arg(target).arg("-");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    fn run(&self, step: &'static str, input: &str, target: &Path) -> Result<String, RuffError> {
        let mut child = self.command(step, target).spawn().map_err(|e| {
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
        let text = String::from_utf8(output.stdout)
            .map_err(|e| RuffError::Spawn { program: self.program.clone(), message: format!("non-UTF-8 output: {e}") })?;
        Ok(crate::pytext::universal_newlines(&text).into_owned())
    }

    /// Fix then format `raw` as if it were the file at `target`.
    pub fn normalize(&self, raw: &str, target: &Path) -> Result<String, RuffError> {
        let fixed = self.run("check", raw, target)?;
        self.run("format", &fixed, target)
    }

    /// `ruff --version`, for messages and `-v`.
    pub fn version(&self) -> Option<String> {
        let out = Command::new(&self.program).arg("--version").output().ok()?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}
