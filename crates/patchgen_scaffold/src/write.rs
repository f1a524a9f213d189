//! Phase 5 of `new`: write the plan — after refusing to overwrite anything
//! in the model's directory (its files, its generated `.py`/`.diff`), and
//! leaving an existing toy config outside it alone (said in a warning).
//! Python files are normalised by the project's ruff first, all in one
//! batch; each file is written atomically; then the test-table rows.

use std::path::Path;

use crate::report::{BackendPlan, PlannedFile, Report};
use crate::{NewError, test_rows};

/// Refuse a plan that would overwrite a file of the model's package or its
/// generated files; drop (with a warning) a planned file that exists
/// outside it.
pub(crate) fn refuse_overwrites(
    model: &str,
    model_dir: &Path,
    files: &mut Vec<PlannedFile>,
    plans: &[BackendPlan],
    warnings: &mut Vec<String>,
) -> Result<(), NewError> {
    let never =
        |p: &Path| NewError::usage(format!("{}: already exists; `patchgen new` never overwrites a file", p.display()));
    if model_dir.exists()
        && let Some(f) = files.iter().find(|f| f.path.starts_with(model_dir) && f.path.exists())
    {
        return Err(never(&f.path));
    }
    // The toy config lives outside the model directory: an existing one is
    // kept (and said), the model's own files still written.
    files.retain(|f| {
        let keep = !f.path.exists();
        if !keep {
            warnings.push(format!("{}: already exists, not overwritten", f.path.display()));
        }
        keep
    });
    for p in plans {
        for ext in ["py", "diff"] {
            let g = model_dir.join("generated").join(format!("patched_modeling_{model}_{}.{ext}", p.backend));
            if g.exists() {
                return Err(never(&g));
            }
        }
    }
    Ok(())
}

/// Normalise the Python files as the project's ruff would (one batch), then
/// write every file and the test-table rows.
pub(crate) fn write(ruff: &patchgen_core::normalize::Ruff, report: &mut Report) -> Result<(), NewError> {
    let py: Vec<usize> = (0..report.files.len())
        .filter(|&i| report.files[i].path.extension().is_some_and(|e| e == "py") && !report.files[i].text.is_empty())
        .collect();
    let items: Vec<(&str, &Path)> =
        py.iter().map(|&i| (report.files[i].text.as_str(), report.files[i].path.as_path())).collect();
    let normalised = ruff.normalize_many(&items, 2);
    for (i, r) in py.into_iter().zip(normalised) {
        match r {
            Ok(t) => report.files[i].text = t,
            Err(e) => report.warnings.push(format!("{}: ruff: {e}", report.files[i].path.display())),
        }
    }
    for f in &report.files {
        patchgen_core::atomic::write(&f.path, &f.text)
            .map_err(|e| NewError::failed(format!("{}: cannot write: {e}", f.path.display())))?;
    }
    if let Some(rows) = &report.test_rows {
        test_rows::write_all(rows).map_err(|e| NewError::failed(format!("test tables: cannot write: {e}")))?;
    }
    Ok(())
}
