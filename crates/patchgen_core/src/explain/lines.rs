//! `patchgen explain FILE:LINE`: which config generates a file, and the
//! origin of one of its lines.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::Mapped;
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

/// The origin of line `line` (1-based) of the generated file `file`.
pub fn explain_line(ctx: &Context, file: &Path, line: usize, config_name: &str) -> Result<Origin, LineError> {
    let module = config_for(ctx, file, config_name)?;
    let mapped = Mapped::generate(ctx, &module, config_name)?;
    let lines = mapped.map.lines.len();
    mapped.resolver().line(line).ok_or(LineError::OutOfRange { path: file.to_path_buf(), line, lines })
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
