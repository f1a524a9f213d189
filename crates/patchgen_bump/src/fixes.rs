//! The mechanical fixes a bump needs, made by `patchgen lint --fix`
//! (`patchgen_lint::fix`) on the ported configs, at the new upstream,
//! before regeneration: a target removed upstream that reappears under
//! another name is retargeted (PG101), stale `drop_import_names` entries
//! go (PG107), post-import placeholders that now shadow upstream
//! definitions go (PG108), auto_docstring entries are written (PG303), the
//! `__init__` override of a composite model that bypasses the auto classes
//! is written (PG306).
//!
//! Unsafe fixes among them are applied too (a bump's diff is reviewed as a
//! whole); `lint --fix`'s own safety net holds: a config that evaluated
//! and generated before the fixes and no longer does gets its files back
//! as they were. A config still holding conflict markers does not
//! evaluate, so it gets no fix until its conflicts are resolved (rerun
//! `patchgen lint --fix --unsafe-fixes --upstream V` then).
//!
//! Not a bump fix: PG106's attribute rename (the nearest name the new
//! class sets is a suggestion to review, not a mechanical change).

use std::path::{Path, PathBuf};

use patchgen_core::error::RunError;
use patchgen_core::survey::modules::Version;
use patchgen_lint::fix::{self, Mode, Selection};

use crate::Options;

/// The rules whose fixes a bump applies.
pub const RULES: [&str; 5] = ["PG101", "PG107", "PG108", "PG303", "PG306"];

/// One fix applied to a config: the rule's code and the config line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub code: String,
    pub line: usize,
}

/// The fixes applied to a file (a config, or a module a config imports).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub path: PathBuf,
    pub fix: Fix,
}

/// Apply the bump's fixes to `modules`' configs (and the files they read)
/// at the new upstream `to`, writing the files changed.
pub fn apply(opts: &Options, modules: &[String], to: &Version) -> Result<Vec<Applied>, RunError> {
    let args = patchgen_lint::run::Options {
        modules: modules.to_vec(),
        select: Some(RULES.iter().map(|c| c.to_string()).collect()),
        upstream: Some(to.upstream.location.display().to_string()),
        config_name: opts.config_name.clone(),
        project: Some(opts.project_dir.clone()),
        no_download: true,
        jobs: opts.jobs,
        no_cache: true,
        unsafe_fixes: true,
        env: opts.env.clone(),
        reporter: opts.reporter.clone(),
        ..Default::default()
    };
    let report = fix::run(&args, &opts.project_dir, Mode::Write, Selection::SafeAndUnsafe)?;
    Ok(report
        .fixed
        .map(|f| f.applied)
        .unwrap_or_default()
        .into_iter()
        .map(|a| Applied { path: a.path, fix: Fix { code: a.code, line: a.line } })
        .collect())
}

/// Whether `a` and `b` name the same file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    a == b || patchgen_core::project::resolve(a) == patchgen_core::project::resolve(b)
}
