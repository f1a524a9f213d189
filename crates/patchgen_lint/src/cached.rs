//! `lint` through the result cache (`patchgen_cache`): one entry per run,
//! keyed `"lint"` with the arguments that change the report; its payload
//! is the report (findings, errors, counts). Cross-config rules make the
//! report a function of every config together, so a run is answered whole
//! or computed whole.
//!
//! Inputs (everything lint's rules read):
//! - recorded before the run (so a file edited while lint runs makes the
//!   entry unstorable): the project's `pyproject.toml` (lint settings,
//!   `[tool.patchgen]`, the pin);
//! - recorded as they are read (the digest of the bytes read): every
//!   project file the loader read and every module lookup's answer; every
//!   upstream module looked up on the search path (each config's own and
//!   those rules parse: configurations, bases, `auto_docstring`), with the
//!   places it was not found and the wheels' identities; the files rules
//!   read directly (checked-in generated files, toy configs and their
//!   directories' listings);
//! - the run's values (patchgen's build, the search path, `[tool.patchgen]`
//!   settings, ruff's identity: shared with `check`).

use std::path::Path;

use super::context::Shared;
use super::run::{LintReport, Options};
use patchgen_cache::{Cache, Input, Inputs, Key, Probe, Prober};
use patchgen_core::pipeline::Context;
use patchgen_core::project::Project;
use patchgen_core::settings::{LintOptions, Resolved};
use patchgen_core::upstream::SearchPath;

/// The cache lint uses: `Ok(None)` with `--no-cache` or
/// `PATCHGEN_NO_CACHE`; `Err(why)` when it cannot be opened (lint then
/// runs without it). The directory as for `check`: `PATCHGEN_CACHE_DIR`,
/// else `[tool.patchgen] cache-dir`, else `.patchgen_cache/` in the project.
pub fn open(settings: &Resolved, project: &Project, cwd: &Path) -> std::io::Result<Option<Cache>> {
    if settings.no_cache {
        return Ok(None);
    }
    Cache::open(&settings.cache_path(cwd, &project.root)).map(Some)
}

/// The key of a lint run: every argument that changes the report, and the
/// effective rule settings (flags, `PATCHGEN_LINT_*` and `[tool.patchgen.lint]`
/// resolved: an environment variable changes the key, not only the file).
pub fn key(args: &Options, lint: &LintOptions, modules: &[String], project_dir: &Path) -> Key {
    let parts = [
        format!("{modules:?}"),
        format!("explicit {}", !args.modules.is_empty()),
        format!("lint {lint:?}"),
        format!("upstream {:?}", args.upstream),
        format!("config {}", args.config_name),
        format!("project {}", project_dir.display()),
        // The report's shape and the rule table: entries of a build with
        // other rules, or findings without fixes, are misses.
        format!("report 2, rules {}", super::rules::RULES.iter().map(|r| r.code).collect::<Vec<_>>().join(",")),
    ];
    Key::new("lint", parts)
}

/// What is recorded before the run (see the module doc); `upstream`: the
/// search path lint's upstream modules come from (what decides the version
/// label is read again here: a change between the two reads, microseconds
/// apart, would go unseen).
pub fn before(pipeline: &Context, upstream: &SearchPath, prober: &Prober) -> Vec<Input> {
    let mut out: Vec<Input> = prober
        .input("pyproject.toml", Probe::Content { path: pipeline.project.pyproject.clone() })
        .into_iter()
        .collect();
    out.extend(upstream.transformers_version_inputs().1);
    out
}

/// The inputs of a finished run: `before`, then what the run read.
pub fn inputs(before: Vec<Input>, shared: &Shared) -> Inputs {
    let mut own = before;
    own.extend(shared.pipeline.loader.inputs());
    own.extend(shared.pipeline.search.inputs());
    own.extend(shared.upstream.upstream.search.inputs());
    own.extend(shared.reads.lock().expect("lint reads").iter().cloned());
    patchgen_core::normalize::inputs::dedup(&mut own);
    Inputs { own, shared: vec![shared.pipeline.run_inputs().clone()] }
}

/// Store `report` (the next run with the same inputs reuses it); `Err`
/// says why not.
pub fn store(
    cache: &Cache,
    key: &Key,
    inputs: &Inputs,
    report: &LintReport,
    pipeline: &Context,
) -> Result<(), patchgen_cache::NotStored> {
    let prober = pipeline.fresh_prober(cache);
    let stored = cache.store(key, inputs, report, &prober);
    cache.save_files();
    stored
}
