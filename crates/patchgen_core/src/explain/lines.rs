//! `patchgen explain FILE:LINE`: which config generates a file, and the
//! origin of one of its lines — or, for a line of a checked-in file that
//! differs from what its config generates, that it is a hand edit (and
//! what the config generates there); for a line of a `.diff`, its hunk
//! with the hunk's causes.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::buffer::{Compared, LineVerdict, Region, diff_hunk_at};
use super::{Hunk, Mapped};
use crate::pipeline::{Context, Failure, default_output_dir};
use crate::provenance::map::Origin;

/// Why a line cannot be explained.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error(
        "`{spec}` is not FILE:LINE\n  help: name a generated file and a 1-based line, e.g. `generated/patched_modeling_qwen3.py:120`"
    )]
    Spec { spec: String },
    #[error(
        "{}: no config generates this file\n  help: `patchgen list` shows the configs; pass a generated `.py` (its `target_file` in `<config dir>/generated/`)",
        path.display()
    )]
    NotGenerated { path: PathBuf },
    #[error("{}:{line}: the generated file has {lines} lines", path.display())]
    OutOfRange { path: PathBuf, line: usize, lines: usize },
    #[error(
        "{}:{line}: this line is in the .diff's `---`/`+++` header\n  help: name a line of a hunk (from its `@@` line on)",
        path.display()
    )]
    DiffHeader { path: PathBuf, line: usize },
    #[error(
        "{}:{line}: the checked-in .diff differs from what the config generates (hunk `{found}`, generated `{generated}`)\n  help: run `patchgen check --fix`, then explain the line again",
        path.display()
    )]
    DiffDrift { path: PathBuf, line: usize, found: String, generated: String },
    #[error("{}: cannot read it: {error}\n  help: generate it with `patchgen generate --all --diff`", path.display())]
    Read { path: PathBuf, error: std::io::Error },
    #[error("{0}")]
    Failure(#[from] Failure),
    #[error("{0}")]
    Project(String),
}

/// `FILE:LINE` split at its last colon.
pub fn parse_spec(spec: &str) -> Result<(PathBuf, usize), LineError> {
    let bad = || LineError::Spec { spec: spec.to_string() };
    let (file, line) = spec.rsplit_once(':').ok_or_else(bad)?;
    let line: usize = line.parse().map_err(|_| bad())?;
    if file.is_empty() || line == 0 {
        return Err(bad());
    }
    Ok((PathBuf::from(file), line))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => crate::project::resolve(a) == crate::project::resolve(b),
    }
}

/// The config module that generates `file`.
pub fn config_for(ctx: &Context, file: &Path, config_name: &str) -> Result<String, LineError> {
    let configs = ctx.project.discover().map_err(|e| LineError::Project(e.to_string()))?;
    let found = configs.par_iter().find_first(|c| match ctx.evaluate(&c.module, config_name) {
        Ok((plan, path, _)) => same_file(&default_output_dir(&path).join(&plan.target_file), file),
        Err(_) => false,
    });
    found.map(|c| c.module.clone()).ok_or_else(|| LineError::NotGenerated { path: file.to_path_buf() })
}

/// The origin of line `line` (1-based) of the file the config generates
/// as `file` (what it generates, not what is on disk).
pub fn explain_line(ctx: &Context, file: &Path, line: usize, config_name: &str) -> Result<Origin, LineError> {
    let module = config_for(ctx, file, config_name)?;
    let mapped = Mapped::generate(ctx, &module, config_name)?;
    let lines = mapped.map.lines.len();
    mapped.resolver().line(line).ok_or(LineError::OutOfRange { path: file.to_path_buf(), line, lines })
}

/// What one line of a generated file or of its `.diff` is.
#[derive(Clone, Debug)]
pub enum LineAnswer {
    /// A line the config generates (of the file on disk, or of what the
    /// config generates when there is no file yet).
    Origin(Origin),
    /// A line of the checked-in file that differs from what the config generates.
    HandEdit { line: usize, region: Region },
    /// A line of a `.diff`: its hunk, with the hunk's causes.
    Hunk(Hunk),
}

/// `explain FILE:LINE`: line `line` (1-based) of `file` as it is on disk
/// — a generated `.py` (compared with what its config generates) or its
/// `.diff` (the hunk the line belongs to).
pub fn explain_at(ctx: &Context, file: &Path, line: usize, config_name: &str) -> Result<LineAnswer, LineError> {
    if file.extension().is_some_and(|e| e == "diff") {
        return explain_diff_line(ctx, file, line, config_name);
    }
    let module = config_for(ctx, file, config_name)?;
    let mapped = Mapped::generate(ctx, &module, config_name)?;
    let Ok(held) = std::fs::read_to_string(file) else {
        let lines = mapped.map.lines.len();
        let origin =
            mapped.resolver().line(line).ok_or(LineError::OutOfRange { path: file.to_path_buf(), line, lines })?;
        return Ok(LineAnswer::Origin(origin));
    };
    let compared = Compared::new(&mapped, &held);
    match compared.line(&mapped, line) {
        Some(LineVerdict::Generated { line: g, origin }) => {
            let lines = mapped.map.lines.len();
            origin.map(LineAnswer::Origin).ok_or(LineError::OutOfRange { path: file.to_path_buf(), line: g, lines })
        }
        Some(LineVerdict::HandEdit(region)) => Ok(LineAnswer::HandEdit { line, region }),
        None => Err(LineError::OutOfRange {
            path: file.to_path_buf(),
            line,
            lines: patchgen_python::pytext::splitlines(&held).len(),
        }),
    }
}

/// `explain X.diff:LINE`: the hunk of the checked-in `.diff` that holds the line.
fn explain_diff_line(ctx: &Context, file: &Path, line: usize, config_name: &str) -> Result<LineAnswer, LineError> {
    let py = file.with_extension("py");
    let module = config_for(ctx, &py, config_name).map_err(|e| match e {
        LineError::NotGenerated { .. } => LineError::NotGenerated { path: file.to_path_buf() },
        e => e,
    })?;
    let mapped = Mapped::generate(ctx, &module, config_name)?;
    let hunks = mapped.explain().hunks;
    let diff = std::fs::read_to_string(file).map_err(|error| LineError::Read { path: file.to_path_buf(), error })?;
    let total = patchgen_python::pytext::splitlines(&diff).len();
    if line > total {
        return Err(LineError::OutOfRange { path: file.to_path_buf(), line, lines: total });
    }
    let index = diff_hunk_at(&diff, line).ok_or(LineError::DiffHeader { path: file.to_path_buf(), line })?;
    let found = patchgen_python::pytext::splitlines(&diff)
        .into_iter()
        .filter(|l| l.starts_with("@@ "))
        .nth(index)
        .unwrap_or_default()
        .trim_end()
        .to_string();
    match hunks.into_iter().nth(index) {
        Some(h) if h.header() == found => Ok(LineAnswer::Hunk(h)),
        other => Err(LineError::DiffDrift {
            path: file.to_path_buf(),
            line,
            found,
            generated: other.map(|h| h.header()).unwrap_or_else(|| "no such hunk".to_string()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_is_file_colon_line() {
        assert_eq!(parse_spec("a/b.py:12").unwrap(), (PathBuf::from("a/b.py"), 12));
        assert!(parse_spec("a/b.py").is_err());
        assert!(parse_spec("a/b.py:0").is_err());
        assert!(parse_spec("a/b.py:x").is_err());
    }
}
