//! The drift gate: compare what the configs produce with the checked-in
//! `.py`/`.diff` (the `.py` as text after newline normalisation, the
//! `.diff` after right-stripping every line; a missing file compares as
//! empty), and optionally rewrite only what drifted.

use std::path::{Path, PathBuf};

use crate::pipeline::{Generated, strip_trailing_ws};
use crate::pytext;

#[derive(Debug)]
pub enum FileStatus {
    UpToDate,
    /// The unified diff from the checked-in file to the expected one.
    Drift(String),
    Fixed,
}

#[derive(Debug)]
pub struct FileCheck {
    pub path: PathBuf,
    pub status: FileStatus,
}

/// Read a checked-in file as Python's `read_text` does (universal
/// newlines); missing → empty.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes)
                .map_err(|_| std::io::Error::other(format!("{} is not valid UTF-8", path.display())))?;
            Ok(pytext::universal_newlines(&text).into_owned())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
}

fn drift_diff(path: &Path, existing: &str, expected: &str) -> String {
    let shown = path.display().to_string();
    crate::diff::unified_diff(
        &pytext::splitlines_keepends(existing),
        &pytext::splitlines_keepends(expected),
        &format!("a/{shown}"),
        &format!("b/{shown}"),
        3,
    )
}

/// Compare one config's generated files with the checked-in ones; with
/// `fix`, rewrite (atomically) exactly the files that differ.
pub fn check_generated(generated: &Generated, fix: bool) -> std::io::Result<Vec<FileCheck>> {
    let mut out = Vec::new();
    if generated.py_is_expected {
        // Read and found equal while ruff ran (`generate_many_expecting`).
        out.push(FileCheck { path: generated.py_path.clone(), status: FileStatus::UpToDate });
    } else {
        let existing_py = read_text(&generated.py_path)?;
        out.push(compare(&generated.py_path, &existing_py, &generated.py, fix)?);
    }
    let existing_diff = strip_trailing_ws(&read_text(&generated.diff_path)?);
    out.push(compare(&generated.diff_path, &existing_diff, &generated.diff, fix)?);
    Ok(out)
}

fn compare(path: &Path, existing: &str, expected: &str, fix: bool) -> std::io::Result<FileCheck> {
    let status = if existing == expected {
        FileStatus::UpToDate
    } else if fix {
        crate::atomic::write(path, expected)?;
        FileStatus::Fixed
    } else {
        FileStatus::Drift(drift_diff(path, existing, expected))
    };
    Ok(FileCheck { path: path.to_path_buf(), status })
}
