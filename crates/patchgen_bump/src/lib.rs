//! `patchgen bump --to V`: move a project's upstream pin, carrying upstream's
//! changes into every patch, then regenerate and report what is left.
//!
//! The stages, one module each:
//! - `pin`: the version the checked-in headers name (`--from`'s default);
//! - `worktree`: refuse a git work tree with uncommitted changes (as
//!   `cargo fix` does) unless allowed;
//! - `select`: every `override_method` / `replace_function` /
//!   `replace_class` registration of every config, its target in both
//!   upstreams, and which registration merges a patch function several
//!   configs share (the one in the config that defines it);
//! - `splice`: the three-way port of each patch (`patchgen_core::port`)
//!   written back over exactly the patch's own lines of its config;
//! - `fixes`: the mechanical fixes of `lint --fix` (retarget, stale drops,
//!   shadowing placeholders, docstring entries, the `__init__` override),
//!   applied at the new upstream before regeneration;
//! - `regenerate`: every config generated against the new upstream, its
//!   files written when they changed, and lint at the new pin;
//! - `report`: the per-config, per-target outcome (text, JSON, markdown).
//!
//! A library: it reads and writes the project's files (atomically) and
//! runs `git status` and ruff, but never prints and never reads the
//! environment behind the settings' back.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod fixes;
pub mod pin;
pub mod regenerate;
pub mod report;
pub mod select;
pub mod splice;
pub mod worktree;

use std::path::PathBuf;
use std::time::Instant;

use patchgen_core::error::RunError;
use patchgen_core::pipeline::Context;
use patchgen_core::progress::Reporter;
use patchgen_core::project::Project;
use patchgen_core::settings::Env;
use patchgen_core::survey::modules::Version;
use patchgen_core::survey::source::{self, WheelCache};
use patchgen_python::merge::Labels;

pub use report::{BumpReport, ConfigBump, Generation, Status, TargetBump};

/// What `bump` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Write the configs and the regenerated files.
    Write,
    /// Write nothing; the report carries the unified diff of the configs.
    Diff,
}

/// What becomes of a hunk the patch and upstream both changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConflictStyle {
    /// Written into the config in git's diff3 form.
    Markers,
    /// The patch's lines stay; the conflict is only listed.
    Leave,
}

/// Everything a bump needs; the CLI's arguments, parsed once.
#[derive(Clone, Debug)]
pub struct Options {
    /// The current upstream; `None`: the version the checked-in headers name.
    pub from: Option<String>,
    pub to: String,
    /// Config modules to bump; empty: every discovered config.
    pub configs: Vec<String>,
    pub config_name: String,
    pub project_dir: PathBuf,
    pub cache_dir: Option<PathBuf>,
    pub package: String,
    pub download: bool,
    pub jobs: Option<usize>,
    pub allow_dirty: bool,
    pub mode: Mode,
    pub conflicts: ConflictStyle,
    /// Regenerate every config against the new upstream (and lint it).
    pub regenerate: bool,
    /// Apply `lint --fix`'s bump fixes (`fixes::RULES`) before regenerating.
    pub fix: bool,
    pub ruff: Option<PathBuf>,
    /// Write the three texts of every merge into this directory (for a
    /// comparison with `git merge-file`; `--dump-merges`, hidden).
    pub dump_merges: Option<PathBuf>,
    /// The environment (the binary's snapshot): settings, the search path, ruff's.
    pub env: Env,
    /// Told when a version is fetched.
    pub reporter: Reporter,
}

impl Options {
    /// `patchgen lint`'s options for `modules` at the new upstream `to`,
    /// with this bump's project, environment and reporter.
    pub fn lint_options(&self, modules: &[String], to: &Version) -> patchgen_lint::run::Options {
        patchgen_lint::run::Options {
            modules: modules.to_vec(),
            upstream: Some(to.upstream.location.display().to_string()),
            config_name: self.config_name.clone(),
            project: Some(self.project_dir.clone()),
            no_download: true,
            jobs: self.jobs,
            no_cache: true,
            env: self.env.clone(),
            reporter: self.reporter.clone(),
            ..Default::default()
        }
    }

    pub fn new(to: &str, project_dir: PathBuf, env: Env) -> Options {
        Options {
            from: None,
            to: to.to_string(),
            configs: Vec::new(),
            config_name: "config".into(),
            project_dir,
            cache_dir: None,
            package: "transformers".into(),
            download: true,
            jobs: None,
            allow_dirty: false,
            mode: Mode::Write,
            conflicts: ConflictStyle::Markers,
            regenerate: true,
            fix: true,
            ruff: None,
            dump_merges: None,
            env,
            reporter: Reporter::default(),
        }
    }
}

/// Run a bump.
pub fn bump(opts: &Options) -> Result<BumpReport, RunError> {
    let started = Instant::now();
    let project = Project::find(&opts.project_dir).map_err(|e| RunError::Usage(e.to_string()))?;
    if opts.mode == Mode::Write && !opts.allow_dirty {
        worktree::require_clean(&project.root)?;
    }
    let cache = WheelCache {
        dir: opts.cache_dir.clone().unwrap_or_else(|| WheelCache::default_dir(&opts.env, &project.root)),
        package: opts.package.clone(),
        download: opts.download,
        reporter: opts.reporter.clone(),
    };
    let ctx = Context::new(project.clone(), &opts.project_dir, opts.ruff.clone(), &opts.env);
    let modules = select::modules(&ctx, &opts.configs)?;
    let from_arg = match &opts.from {
        Some(f) => f.clone(),
        None => pin::from_headers(&ctx, &modules, &opts.config_name)?,
    };
    let resolve = |flag: &str, arg: &str| {
        source::resolve(arg, &opts.project_dir, &cache).map_err(|e| RunError::Usage(format!("--{flag} {e}")))
    };
    let from = Version::new(resolve("from", &from_arg)?);
    let to = Version::new(resolve("to", &opts.to)?);
    let (from_label, to_label) = (from.upstream.version.clone(), to.upstream.version.clone());
    let (base, theirs) = (format!("{} {from_label}", opts.package), format!("{} {to_label}", opts.package));
    let pool = patchgen_core::workers::pool(opts.jobs)?;
    let selection = pool.install(|| select::select(&ctx, &modules, &opts.config_name, &from, &to));
    let style = match opts.conflicts {
        ConflictStyle::Markers => Some(Labels { ours: "config", base: &base, theirs: &theirs }),
        ConflictStyle::Leave => None,
    };
    let spliced = pool.install(|| splice::splice(&selection, style, opts.dump_merges.as_deref()));
    let mut report = BumpReport::new(&from, &to, &selection, &spliced);
    report.package = opts.package.clone();
    report.diff = match opts.mode {
        Mode::Diff => Some(splice::diff(&spliced, &project.root)),
        Mode::Write => {
            splice::write(&spliced).map_err(|e| RunError::Failed(e.to_string()))?;
            None
        }
    };
    report.port_seconds = started.elapsed().as_secs_f64();
    // `--from V --to V` is a no-op: no fix of the pin's own findings either.
    if opts.fix && opts.regenerate && opts.mode == Mode::Write && from_label != to_label {
        report.record_fixes(fixes::apply(opts, &modules, &to)?);
    }
    if opts.regenerate && opts.mode == Mode::Write {
        let regenerated = Instant::now();
        // A fresh context: the configs on disk changed.
        let fresh = || Context::new(project.clone(), &opts.project_dir, opts.ruff.clone(), &opts.env);
        regenerate::regenerate(fresh(), &to, &modules, opts, from_label == to_label, &mut report, &pool)?;
        // Names the patches relied on the old upstream module to import:
        // imported by the config itself, they get their `add_import`, and
        // the configs are generated once more.
        if opts.fix && from_label != to_label && fixes::add_missing_imports(&mut report, &opts.config_name)? {
            regenerate::regenerate(fresh(), &to, &modules, opts, false, &mut report, &pool)?;
        }
        report.regenerate_seconds = Some(regenerated.elapsed().as_secs_f64());
    }
    Ok(report)
}
