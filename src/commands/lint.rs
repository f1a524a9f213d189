//! `patchgen lint [MODULE...]`: the arguments, and `patchgen_lint`'s
//! report printed through the one printer (findings with their source
//! excerpt on stderr, the summary on stdout; `--statistics`; `json`;
//! `github`). Exit codes: 0 clean, 1 findings, 2 usage or project errors.

use std::path::PathBuf;

use patchgen_core::progress::Reporter;
use patchgen_core::settings::Env;
use patchgen_diagnostics::Diagnostic;
use patchgen_lint::fix::{Mode, Selection};
use patchgen_lint::{LintReport, Options, render_statistics};

use crate::printer::{ExitStatus, Format, Printer, Report, fields};
use crate::session::Session;

const EXAMPLES: &str = "\
Examples:
  patchgen lint                                 every config, default rules
  patchgen lint pkg.models.qwen3.qwen3_gpu_patch_gen_config
  patchgen lint --select PG1,PG2 --ignore PG203
  patchgen lint --upstream 5.16.1               preview a pin bump (wheel cached as `survey` caches it)
  patchgen lint --format github                 annotations in GitHub Actions
  patchgen lint --fix                           apply the safe fixes (--unsafe-fixes: the unsafe ones too)
  patchgen lint --diff                          show what --fix would write
  patchgen lint --add-noqa                      suppress every current finding on its line (a baseline)
  patchgen rule PG101                           what a rule checks and why

Suppress a finding with `# noqa: PG101` on the config line it points at, or with
per-file-ignores in [tool.patchgen.lint].
Exit status: 0 clean, 1 findings, 2 usage or project error.";

/// Check patch configs for the protocol's silent pitfalls (statically; no ruff, no torch).
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = EXAMPLES)]
pub struct LintArgs {
    /// Config modules to lint (default: every discovered config).
    #[arg(value_name = "MODULE")]
    pub modules: Vec<String>,
    /// Rules to run instead of the defaults: codes, prefixes (PG1) or ALL; comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    pub select: Option<Vec<String>>,
    /// Rules to add to the selection.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    pub extend_select: Vec<String>,
    /// Rules to leave out.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    pub ignore: Vec<String>,
    /// Lint against another upstream: a directory, a .whl file or a version number.
    #[arg(long, value_name = "DIR|WHEEL|VERSION")]
    pub upstream: Option<String>,
    /// Output format [default: text; env: PATCHGEN_OUTPUT_FORMAT]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Print how often each rule fired instead of the findings.
    #[arg(long)]
    pub statistics: bool,
    /// The PatchConfig variable in each config module.
    #[arg(short = 'c', long, value_name = "NAME", default_value = "config")]
    pub config_name: String,
    /// Find the project from this directory instead of the working directory.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Never run pip for --upstream VERSION (the wheel must be cached).
    #[arg(long)]
    pub no_download: bool,
    /// Parallel jobs (default: one per CPU).
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Neither read nor write the result cache (also PATCHGEN_NO_CACHE=1).
    #[arg(long)]
    pub no_cache: bool,
    /// Say whether the result came from the cache (and, if not, why).
    #[arg(short, long)]
    pub verbose: bool,
    /// Apply the safe fixes, lint again until none applies, write the files.
    #[arg(long, conflicts_with = "add_noqa")]
    pub fix: bool,
    /// Also apply unsafe fixes (with --fix or --diff; alone: count them as fixable).
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Print the unified diff the fixes would make instead of writing it (implies --fix).
    #[arg(long, conflicts_with = "add_noqa")]
    pub diff: bool,
    /// Write `# noqa: CODE` on the line of every current finding (a baseline to lint from).
    #[arg(long)]
    pub add_noqa: bool,
}

impl LintArgs {
    /// The library's options, in `env`, progress to `reporter`.
    pub fn options(&self, env: Env, reporter: Reporter) -> Options {
        Options {
            modules: self.modules.clone(),
            select: self.select.clone(),
            extend_select: self.extend_select.clone(),
            ignore: self.ignore.clone(),
            upstream: self.upstream.clone(),
            config_name: self.config_name.clone(),
            project: self.project.clone(),
            no_download: self.no_download,
            jobs: self.jobs,
            no_cache: self.no_cache,
            verbose: self.verbose,
            unsafe_fixes: self.unsafe_fixes,
            env,
            reporter,
        }
    }
}

/// `patchgen lint`: lint from the working directory and print the report.
pub fn run(args: &LintArgs) -> ExitStatus {
    let session = match Session::start("lint", args.format) {
        Ok(s) => s,
        Err(status) => return status,
    };
    let options = args.options(session.env.clone(), session.reporter());
    let mode = if args.add_noqa {
        Some(Mode::AddNoqa)
    } else if args.diff {
        Some(Mode::Diff)
    } else if args.fix {
        Some(Mode::Write)
    } else {
        None
    };
    let outcome = match mode {
        Some(mode) => patchgen_lint::fix::run(&options, &session.cwd, mode, Selection::new(args.unsafe_fixes)),
        None => patchgen_lint::lint(&options, &session.cwd),
    };
    if args.statistics { session.finish_with(outcome.map(Statistics)) } else { session.finish_with(outcome) }
}

impl Report for LintReport {
    fn command(&self) -> &'static str {
        "lint"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.errors.iter().chain(&self.diagnostics).collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = fields(self);
        m.remove("diagnostics");
        m.remove("errors");
        m
    }

    /// Each finding with its source excerpt (the shared renderer, on
    /// stderr), then the summary line on stdout.
    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        if let Some(note) = &self.cache_note {
            let label = p.style.dim("cache:");
            p.err(&format!("{label} {note}\n"))?;
        }
        match &self.fixed {
            // `--diff`: the diffs, not the findings.
            Some(f) if f.mode == Mode::Diff => {
                for d in &self.errors {
                    p.diagnostic(d)?;
                }
                for file in &f.files {
                    p.out(&file.diff)?;
                }
            }
            _ => {
                for d in self.errors.iter().chain(&self.diagnostics) {
                    p.diagnostic(d)?;
                }
            }
        }
        p.out(patchgen_lint::run::summary(self).as_str())
    }

    fn exit_status(&self) -> ExitStatus {
        match self.exit_code() {
            0 => ExitStatus::Success,
            1 => ExitStatus::Failure,
            _ => ExitStatus::Error,
        }
    }
}

/// `lint --statistics`: how often each rule fired, instead of the findings.
struct Statistics(LintReport);

impl Report for Statistics {
    fn command(&self) -> &'static str {
        "lint"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.0.diagnostics()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        self.0.json_fields()
    }

    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        p.out(&render_statistics(&self.0))
    }

    fn exit_status(&self) -> ExitStatus {
        self.0.exit_status()
    }
}
