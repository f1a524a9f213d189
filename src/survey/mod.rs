//! `patchgen survey --from A --to B`: signature drift of every patch target
//! across an upstream pin bump (protocol step 0.3).
//!
//! `source` resolves the two upstreams, `modules` reads and parses their
//! modules once, `targets` surveys one config (with `signature` +
//! `compare` for contracts, `names` for F821-class names, `attrs` for
//! `self.<attr>`), and `report` renders text, markdown or JSON. Configs are
//! independent jobs, run in parallel and reported in discovery order.

pub mod attrs;
pub mod compare;
pub mod modules;
pub mod names;
pub mod report;
pub mod signature;
pub mod source;
pub mod targets;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use rayon::prelude::*;

use crate::pipeline::{Context, Failure};
use crate::project::Project;
use modules::Version;
use report::{ConfigReport, Report, VersionLabel};
use source::WheelCache;

/// Output format: the shared `text`, `json` and `github` (`docs/cli.md`),
/// and `markdown` for a pull-request description.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Github,
}

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
}

impl Options {
    pub fn new(from: &str, to: &str, project_dir: PathBuf) -> Options {
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
        }
    }
}

const EXAMPLES: &str = "\
Examples:
  patchgen survey --from 5.9.0 --to 5.16.1
      every config, both wheels from the cache (fetched with pip when missing)
  patchgen survey --from .venv/lib/python3.12/site-packages --to transformers-5.16.1-py3-none-any.whl
  patchgen survey --from 5.9.0 --to 5.16.1 --config veomni.models.transformers.qwen3.qwen3_gpu_patch_gen_config
  patchgen survey --from 5.9.0 --to 5.16.1 --format markdown > drift.md

Exit status: 0 nothing drifted, 1 something drifted (or a config failed), 2 usage error.
Version wheels are cached in ${PATCHGEN_CACHE:-<project root>/.cache}/wheels.";

/// Signature drift of every patch target between two upstream versions
///
/// Compare the parameter lists, decorators, bases, names and attributes
/// every patch target relies on between two upstream versions.
#[derive(Args, Debug, Clone)]
#[command(after_help = EXAMPLES)]
pub struct SurveyArgs {
    /// The current upstream: a directory holding the package, a .whl file, or a version number.
    #[arg(long, value_name = "A")]
    from: String,
    /// The upstream to move to (same forms as --from).
    #[arg(long, value_name = "B")]
    to: String,
    /// Survey only this config module (repeatable); default: every config discovered as --check does.
    #[arg(long = "config", value_name = "MODULE")]
    configs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// The PatchConfig variable in each config module.
    #[arg(long, value_name = "NAME", default_value = "config")]
    config_name: String,
    /// The distribution a version number names.
    #[arg(long, value_name = "NAME", default_value = "transformers")]
    package: String,
    /// Never run pip: version numbers must already be in the wheel cache.
    #[arg(long)]
    no_download: bool,
    /// Find the project from this directory instead of the working directory.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Parallel jobs (default: one per CPU).
    #[arg(short, long, value_name = "N")]
    jobs: Option<usize>,
    /// Text output: list unchanged targets and targets the configs add, too.
    #[arg(short, long)]
    verbose: bool,
}

/// A usage or project problem (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Stack for evaluation threads (as `patchgen --check` uses).
const STACK_SIZE: usize = 256 << 20;

/// Run a survey: every selected config against both upstream versions.
pub fn survey(opts: &Options) -> Result<Report, UsageError> {
    let project = Project::find(&opts.project_dir).map_err(|e| UsageError(e.to_string()))?;
    let cache = WheelCache {
        dir: opts.cache_dir.clone().unwrap_or_else(|| WheelCache::default_dir(&project.root)),
        package: opts.package.clone(),
        download: opts.download,
    };
    let resolve = |flag: &str, arg: &str| {
        source::resolve(arg, &opts.project_dir, &cache).map_err(|e| UsageError(format!("--{flag} {e}")))
    };
    let from = Version::new(resolve("from", &opts.from)?);
    let to = Version::new(resolve("to", &opts.to)?);
    let ctx = Context::new(project, &opts.project_dir, None);
    let modules: Vec<String> = if opts.configs.is_empty() {
        ctx.project.discover().map_err(|e| UsageError(e.to_string()))?.into_iter().map(|c| c.module).collect()
    } else {
        let modules: Vec<String> = opts.configs.iter().map(|m| ctx.project.normalize_module(m)).collect();
        if let Some(m) = modules.iter().find(|m| ctx.loader.find(m).is_none()) {
            return Err(UsageError(format!(
                "--config {m}: no such module under {}\n  help: `patchgen --list` shows the config modules",
                ctx.project.package_root().display()
            )));
        }
        modules
    };
    let explicit = !opts.configs.is_empty();
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(STACK_SIZE);
    if let Some(j) = opts.jobs.filter(|&j| j > 0) {
        pool = pool.num_threads(j);
    }
    let pool = pool.build().map_err(|e| UsageError(format!("cannot start worker threads: {e}")))?;
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
                        Err(e) => (Vec::new(), Some(e)),
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

/// `patchgen survey ARGS…` (the arguments after `survey`): prints the
/// report and returns the exit code.
pub fn run_cli(args: &[OsString]) -> i32 {
    let argv = [OsString::from("patchgen"), OsString::from("survey")].into_iter().chain(args.iter().cloned());
    match crate::cli::parse(argv) {
        Ok(crate::cli::Command::Survey(a)) => run(a).code(),
        Ok(_) => unreachable!("`survey` parses as the survey command"),
        Err(e) => crate::cli::print_clap_error(&e).code(),
    }
}

/// `patchgen survey`: run it and print the report.
pub fn run(cli: SurveyArgs) -> crate::cli::ExitStatus {
    use crate::cli::{ExitStatus, Printer};
    let mut printer = Printer::new(crate::cli::Format::Text);
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            let written = printer.err(&format!("patchgen survey: error: cannot read the working directory: {e}\n"));
            return printer.finish(written, ExitStatus::Error);
        }
    };
    // Paths are relative to the working directory, whatever --project says.
    let from_cwd = |arg: &str| {
        let p = cwd.join(arg);
        if p.exists() { p.to_string_lossy().into_owned() } else { arg.to_string() }
    };
    let (from, to) = (from_cwd(&cli.from), from_cwd(&cli.to));
    let project_dir = match cli.project {
        Some(p) if p.is_relative() => cwd.join(p),
        Some(p) => p,
        None => cwd,
    };
    let opts = Options {
        configs: cli.configs,
        config_name: cli.config_name,
        package: cli.package,
        download: !cli.no_download,
        jobs: cli.jobs,
        ..Options::new(&from, &to, project_dir)
    };
    match survey(&opts) {
        Ok(report) => {
            let markdown = cli.format == Format::Markdown;
            printer.format = match cli.format {
                Format::Text | Format::Markdown => crate::cli::Format::Text,
                Format::Json => crate::cli::Format::Json,
                Format::Github => crate::cli::Format::Github,
            };
            printer.print(&report::Output::new(&report, cli.verbose, markdown))
        }
        Err(e) => {
            let written = printer.err(&format!("patchgen survey: error: {e}\n"));
            printer.finish(written, ExitStatus::Error)
        }
    }
}
