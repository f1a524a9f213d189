//! `patchgen survey --from A --to B`: signature drift of every patch target
//! across an upstream pin bump (protocol step 0.3).
//!
//! `source` resolves the two upstreams, `modules` reads and parses their
//! modules once, `targets` surveys one config (with `signature` +
//! `compare` for contracts, `body` for the code itself, `names` for F821-class names, `attrs` for
//! `self.<attr>`), and `report` renders text, markdown or JSON. Configs are
//! independent jobs, run in parallel and reported in discovery order.

pub mod attrs;
pub mod body;
pub mod compare;
pub mod modules;
pub mod names;
pub mod report;
pub mod reuse;
pub mod signature;
pub mod source;
pub mod targets;

use std::path::PathBuf;

use rayon::prelude::*;

use crate::error::RunError;
use crate::pipeline::{Context, Failure};
use crate::project::Project;
use crate::settings::Env;
use modules::Version;
use report::{ConfigReport, Report, VersionLabel};
use source::WheelCache;

/// Everything a survey needs; the CLI's arguments, parsed once.
#[derive(Clone, Debug)]
pub struct Options {
    pub from: String,
    pub to: String,
    /// Config modules to survey; empty: every discovered config.
    pub configs: Vec<String>,
    /// The config variable (`config`).
    pub config_name: String,
    /// The directory the project is found from (and relative paths resolved against).
    pub project_dir: PathBuf,
    /// Where version wheels are cached; `None`: `${PATCHGEN_CACHE:-<project root>/.cache}/wheels`.
    pub cache_dir: Option<PathBuf>,
    /// The distribution a version number refers to.
    pub package: String,
    /// Fetch missing version wheels with pip.
    pub download: bool,
    pub jobs: Option<usize>,
    /// The environment (`PATCHGEN_CACHE`, `PATCHGEN_RUFF*`, the Python search path).
    pub env: Env,
    /// Told when a version is fetched.
    pub reporter: crate::progress::Reporter,
}

impl Options {
    pub fn new(from: &str, to: &str, project_dir: PathBuf, env: Env) -> Options {
        Options {
            from: from.to_string(),
            to: to.to_string(),
            configs: Vec::new(),
            config_name: "config".into(),
            project_dir,
            cache_dir: None,
            package: "transformers".into(),
            download: true,
            jobs: None,
            env,
            reporter: Default::default(),
        }
    }
}

/// Run a survey: every selected config against both upstream versions.
pub fn survey(opts: &Options) -> Result<Report, RunError> {
    let project = Project::find(&opts.project_dir)?;
    let cache = WheelCache {
        dir: opts.cache_dir.clone().unwrap_or_else(|| WheelCache::default_dir(&opts.env, &project.root)),
        package: opts.package.clone(),
        download: opts.download,
        reporter: opts.reporter.clone(),
    };
    let resolve = |flag: &'static str, arg: &str| {
        source::resolve(arg, &opts.project_dir, &cache).map_err(|source| RunError::Upstream { flag, source })
    };
    let from = Version::new(resolve("from", &opts.from)?);
    let to = Version::new(resolve("to", &opts.to)?);
    let ctx = Context::new(project, &opts.project_dir, None, &opts.env);
    let modules = ctx.select_modules(&opts.configs, "--config ")?;
    let explicit = !opts.configs.is_empty();
    let pool = crate::workers::pool(opts.jobs)?;
    let configs: Vec<Option<ConfigReport>> = pool.install(|| {
        modules
            .par_iter()
            .map(|m| match ctx.evaluate(m, &opts.config_name) {
                Err(Failure::NotAConfig { .. }) if !explicit => None,
                Err(f) => Some(ConfigReport {
                    module: m.clone(),
                    source_module: String::new(),
                    findings: Vec::new(),
                    error: Some(f.to_string()),
                    failure: Some(f.diagnostic(m)),
                }),
                Ok((plan, _, _)) => {
                    let (findings, error) = match targets::survey(&plan, &from, &to) {
                        Ok(f) => (f, None),
                        Err(e) => (Vec::new(), Some(e.to_string())),
                    };
                    Some(ConfigReport {
                        module: m.clone(),
                        source_module: plan.source_module.clone(),
                        findings,
                        error,
                        failure: None,
                    })
                }
            })
            .collect()
    });
    let label = |v: &Version| VersionLabel {
        version: v.upstream.version.clone(),
        location: v.upstream.location.display().to_string(),
    };
    Ok(Report {
        package: opts.package.clone(),
        from: label(&from),
        to: label(&to),
        configs: configs.into_iter().flatten().collect(),
    })
}
