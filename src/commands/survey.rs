//! `patchgen survey --from A --to B`: the arguments, and the survey
//! report printed through the one printer (`markdown` is survey's own
//! text form).

use std::path::PathBuf;

use patchgen_core::error::RunError;
use patchgen_core::survey::report::{self, Report as SurveyReport};
use patchgen_core::survey::{self, Options};
use patchgen_diagnostics::Diagnostic;

use crate::printer::{ExitStatus, Format, Printer, Report};
use crate::session::Session;

/// Output format: the shared `text`, `json`, `github`, `sarif` and
/// `gitlab` (`docs/cli.md`), and `markdown` for a pull-request description.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SurveyFormat {
    Text,
    Json,
    Markdown,
    Github,
    Sarif,
    Gitlab,
}

const EXAMPLES: &str = "\
Examples:
  patchgen survey --from 5.9.0 --to 5.16.1
      every config, both wheels from the cache (fetched with pip when missing)
  patchgen survey --from .venv/lib/python3.12/site-packages --to transformers-5.16.1-py3-none-any.whl
  patchgen survey --from 5.9.0 --to 5.16.1 veomni.models.transformers.qwen3.qwen3_gpu_patch_gen_config
  patchgen survey --from 5.9.0 --to 5.16.1 --format markdown > drift.md

Exit status: 0 nothing drifted, 1 something drifted (or a config failed), 2 usage error.
Version wheels are cached in ${PATCHGEN_CACHE:-<project root>/.cache}/wheels.";

/// Signature drift of every patch target between two upstream versions
///
/// Compare the parameter lists, decorators, bases, names and attributes
/// every patch target relies on between two upstream versions.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = EXAMPLES)]
pub struct SurveyArgs {
    /// The current upstream: a directory holding the package, a .whl file, or a version number.
    #[arg(long, value_name = "A")]
    pub from: String,
    /// The upstream to move to (same forms as --from).
    #[arg(long, value_name = "B")]
    pub to: String,
    /// Survey only these config modules [default: every config discovered as `check` does]
    #[arg(value_name = "MODULE")]
    pub modules: Vec<String>,
    /// The same, as a repeatable flag (the older spelling)
    #[arg(long = "config", value_name = "MODULE", hide = true)]
    pub configs: Vec<String>,
    /// Output format: text, json, github, sarif, gitlab, or markdown for a pull-request description [default: text; env: PATCHGEN_OUTPUT_FORMAT]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<SurveyFormat>,
    /// The PatchConfig variable in each config module.
    #[arg(short = 'c', long, value_name = "NAME", default_value = "config")]
    pub config_name: String,
    /// The distribution a version number names.
    #[arg(long, value_name = "NAME", default_value = "transformers")]
    pub package: String,
    /// Never run pip: version numbers must already be in the wheel cache.
    #[arg(long)]
    pub no_download: bool,
    /// Find the project from this directory instead of the working directory.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Parallel jobs (default: one per CPU).
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Text output: list unchanged targets and targets the configs add, too.
    #[arg(short, long)]
    pub verbose: bool,
}

/// `patchgen survey`: run it and print the report.
pub fn run(cli: SurveyArgs) -> ExitStatus {
    let markdown = cli.format == Some(SurveyFormat::Markdown);
    let shared = cli.format.map(|f| match f {
        SurveyFormat::Text | SurveyFormat::Markdown => Format::Text,
        SurveyFormat::Json => Format::Json,
        SurveyFormat::Github => Format::Github,
        SurveyFormat::Sarif => Format::Sarif,
        SurveyFormat::Gitlab => Format::Gitlab,
    });
    let session = match Session::start("survey", shared) {
        Ok(s) => s,
        Err(status) => return status,
    };
    let cwd = session.cwd.clone();
    // Paths are relative to the working directory, whatever --project says.
    let from_cwd = |arg: &str| {
        let p = cwd.join(arg);
        if p.exists() { p.to_string_lossy().into_owned() } else { arg.to_string() }
    };
    let (from, to) = (from_cwd(&cli.from), from_cwd(&cli.to));
    let project_dir = match cli.project {
        Some(p) if p.is_relative() => cwd.join(p),
        Some(p) => p,
        None => cwd.clone(),
    };
    let opts = Options {
        configs: cli.modules.into_iter().chain(cli.configs).collect(),
        config_name: cli.config_name,
        package: cli.package,
        download: !cli.no_download,
        jobs: cli.jobs,
        reporter: session.reporter(),
        ..Options::new(&from, &to, project_dir, session.env.clone())
    };
    let outcome: Result<SurveyReport, RunError> = survey::survey(&opts);
    let verbose = cli.verbose;
    session.finish_with(outcome.map(|r| Output::new(r, verbose, markdown)))
}

/// A survey as the printer writes it: `text` (grouped by config; `-v` adds
/// unchanged targets), `markdown` (a pull-request table), or the shared
/// `json` / `github` forms.
pub struct Output {
    pub report: SurveyReport,
    pub verbose: bool,
    pub markdown: bool,
    diagnostics: Vec<Diagnostic>,
}

impl Output {
    pub fn new(report: SurveyReport, verbose: bool, markdown: bool) -> Output {
        let diagnostics = report::diagnostics(&report);
        Output { report, verbose, markdown, diagnostics }
    }
}

impl Report for Output {
    fn command(&self) -> &'static str {
        "survey"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.diagnostics.iter().collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        report::json_fields(&self.report)
    }

    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        if !self.markdown {
            return p.out(&report::text(&self.report, self.verbose));
        }
        p.out(&report::markdown(&self.report))?;
        for (module, error) in self.report.errors() {
            p.err(&format!("patchgen survey: {module}: {error}\n"))?;
        }
        Ok(())
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::failure_if(self.report.exit_code() != 0)
    }
}
