//! The drift gate: compare what the configs produce with the checked-in
//! `.py`/`.diff` (the `.py` as text after newline normalisation, the
//! `.diff` after right-stripping every line; a missing file compares as
//! empty), and optionally rewrite only what drifted.
//!
//! One tolerance the reference does not have: a `.diff` that differs only
//! in the newlines that end it is up to date (`FileCheck::final_newlines_only`),
//! because pre-commit's `end-of-file-fixer` turns the `\n\n` that ends a
//! `.diff` whose last line is blank into `\n`, and `--fix` would write
//! `\n\n` again. A drift that is reported carries, in words, what an
//! invisible difference is (`FileCheck::explanation`).

pub mod invisible;

use std::path::{Path, PathBuf};

use crate::pipeline::{Generated, strip_trailing_ws};
use patchgen_diagnostics::{Diagnostic, Location, codes};
use patchgen_python::pytext;

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
    /// A `.diff` up to date but for the newlines that end it (not rewritten
    /// by `--fix`).
    pub final_newlines_only: bool,
    /// With [`FileStatus::Drift`]: what the difference is, when a diff does
    /// not show it visibly (trailing whitespace, a final newline, CRLF).
    pub explanation: Option<String>,
}

/// Read a checked-in file as Python's `read_text` does (universal
/// newlines); missing → empty.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    match patchgen_cache::bounded::read(path, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes)
                .map_err(|_| std::io::Error::other(format!("{} is not valid UTF-8", path.display())))?;
            Ok(pytext::universal_newlines_owned(text))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
}

fn drift_diff(path: &Path, existing: &str, expected: &str) -> String {
    let shown = path.display().to_string();
    let (a, b) =
        (invisible::lines_marking_missing_newline(existing), invisible::lines_marking_missing_newline(expected));
    patchgen_python::diff::unified_diff(
        &a.iter().map(|l| l.as_ref()).collect::<Vec<_>>(),
        &b.iter().map(|l| l.as_ref()).collect::<Vec<_>>(),
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
        out.push(up_to_date(&generated.py_path));
    } else {
        let existing_py = read_text(&generated.py_path)?;
        out.push(compare(&generated.py_path, &existing_py, &generated.py, fix)?);
    }
    let existing_diff = strip_trailing_ws(&read_text(&generated.diff_path)?);
    out.push(if invisible::only_final_newlines(&existing_diff, &generated.diff) {
        FileCheck { final_newlines_only: true, ..up_to_date(&generated.diff_path) }
    } else {
        // A drift is shown without the final newlines, which are tolerated.
        let existing = invisible::with_final_newlines_of(&existing_diff, &generated.diff);
        compare(&generated.diff_path, &existing, &generated.diff, fix)?
    });
    Ok(out)
}

fn up_to_date(path: &Path) -> FileCheck {
    FileCheck { path: path.to_path_buf(), status: FileStatus::UpToDate, final_newlines_only: false, explanation: None }
}

fn compare(path: &Path, existing: &str, expected: &str, fix: bool) -> std::io::Result<FileCheck> {
    if existing == expected {
        return Ok(up_to_date(path));
    }
    if fix {
        crate::atomic::write(path, expected)?;
        return Ok(FileCheck { status: FileStatus::Fixed, ..up_to_date(path) });
    }
    Ok(FileCheck {
        status: FileStatus::Drift(drift_diff(path, existing, expected)),
        explanation: invisible::explain(existing, expected),
        ..up_to_date(path)
    })
}

/// The run's one note about `.diff` files found up to date but for their
/// final newlines (`files`, in report order): why, and how to stop the
/// pre-commit hooks from doing it. `None` when there are none.
pub fn final_newlines_note(project: &crate::project::Project, files: &[&Path]) -> Option<Diagnostic> {
    let first = files.first()?;
    let root = project.settings.search_root.strip_prefix(&project.root).unwrap_or(&project.settings.search_root);
    let root = root.to_string_lossy().replace('.', "\\.");
    let pattern = if root.is_empty() { "^(.*/)?generated/".to_string() } else { format!("^{root}/(.*/)?generated/") };
    let mut note = codes::DIFF_FINAL_NEWLINES
        .diagnostic(format!(
            "differs from the generated `.diff` only in the newlines at its end{}; that is not drift: patchgen, like \
             the reference, ends a `.diff` whose last line is blank with that blank line (`\\n\\n`), and \
             pre-commit's `end-of-file-fixer` removes it",
            match files.len() {
                1 => String::new(),
                2 => ", as 1 other `.diff` file does".to_string(),
                n => format!(", as {} other `.diff` files do", n - 1),
            }
        ))
        .at(Location::file(*first))
        .help(format!(
            "exclude the generated files from the `end-of-file-fixer` and `trailing-whitespace` hooks in \
         .pre-commit-config.yaml: `exclude: '{pattern}'` under each of them"
        ));
    for f in &files[1..] {
        note = note.related(Location::file(*f), "also");
    }
    Some(note)
}
