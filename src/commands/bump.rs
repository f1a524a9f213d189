//! `patchgen bump --to V`: the arguments, the bump (`patchgen_bump`), and
//! its report printed through the one printer; `--report FILE` writes the
//! markdown for the pull request.

use std::path::PathBuf;

use patchgen_bump::report::{self, BumpReport};
use patchgen_bump::{ConflictStyle, Mode, Options};
use patchgen_core::error::RunError;
use patchgen_diagnostics::Diagnostic;

use crate::printer::{ExitStatus, Format, Printer, Report};
use crate::session::Session;

/// What `--conflicts` does with a hunk both the patch and upstream changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ConflictsArg {
    /// Write git's diff3 markers into the config.
    Markers,
    /// Keep the patch's lines and only list the conflict.
    Leave,
}

const EXAMPLES: &str = "\
Examples:
  patchgen bump --to 5.16.1
      from the version the generated headers name; writes the configs and regenerates
  patchgen bump --from 5.9.0 --to 5.16.1 --diff
      the configs' unified diff; writes nothing
  patchgen bump --to 5.16.1 --conflicts=leave --report bump.md

Exit status: 0 everything carried and regenerated, 1 conflicts or failures remain, 2 usage error
(a dirty work tree without --allow-dirty, a version that cannot be fetched).";

/// Move the upstream pin: carry upstream's changes into every patch, regenerate, report
///
/// A three-way merge of (old upstream target, the patch in its config, new
/// upstream target) for every override_method, replace_function and
/// replace_class whose target changed; conflicts are written with git's
/// diff3 markers (or left, with --conflicts=leave) and listed.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = EXAMPLES)]
pub struct BumpArgs {
    /// The upstream to move to: a version number, a .whl file, or a directory holding the package.
    #[arg(long, value_name = "V")]
    pub to: String,
    /// The current upstream (same forms) [default: the version the generated files' headers name]
    #[arg(long, value_name = "V")]
    pub from: Option<String>,
    /// Bump only these config modules [default: every discovered config]
    #[arg(value_name = "MODULE")]
    pub modules: Vec<String>,
    /// Run on a git work tree with uncommitted changes.
    #[arg(long)]
    pub allow_dirty: bool,
    /// Print the unified diff of the configs it would write; write nothing.
    #[arg(long)]
    pub diff: bool,
    /// What to do with a conflict: write markers into the config, or leave the patch's lines.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "markers")]
    pub conflicts: ConflictsArg,
    /// Also write the report as markdown (for the pull request and the upgrade notes).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Port the configs only: neither fix, regenerate nor lint.
    #[arg(long)]
    pub no_regenerate: bool,
    /// Do not apply the bump's fixes: lint --fix's PG101, PG107, PG108, PG303, PG306, and the add_import of a name the config imports (F821)
    #[arg(long)]
    pub no_fix: bool,
    /// Write the three texts of every merge here (N.base, N.ours, N.theirs), to compare with `git merge-file`.
    #[arg(long, value_name = "DIR", hide = true)]
    pub dump_merges: Option<PathBuf>,
    /// Output format [default: text; env: PATCHGEN_OUTPUT_FORMAT]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
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
}

/// `patchgen bump`: run it and print the report.
pub fn run(cli: &BumpArgs) -> ExitStatus {
    let session = match Session::start("bump", cli.format) {
        Ok(s) => s,
        Err(status) => return status,
    };
    let cwd = session.cwd.clone();
    let from_cwd = |arg: &str| {
        let p = cwd.join(arg);
        if p.exists() { p.to_string_lossy().into_owned() } else { arg.to_string() }
    };
    let project_dir = match &cli.project {
        Some(p) if p.is_relative() => cwd.join(p),
        Some(p) => p.clone(),
        None => cwd.clone(),
    };
    let opts = Options {
        from: cli.from.as_deref().map(from_cwd),
        configs: cli.modules.clone(),
        config_name: cli.config_name.clone(),
        package: cli.package.clone(),
        download: !cli.no_download,
        jobs: cli.jobs,
        allow_dirty: cli.allow_dirty,
        mode: if cli.diff { Mode::Diff } else { Mode::Write },
        conflicts: match cli.conflicts {
            ConflictsArg::Markers => ConflictStyle::Markers,
            ConflictsArg::Leave => ConflictStyle::Leave,
        },
        regenerate: !cli.no_regenerate,
        fix: !cli.no_fix,
        dump_merges: cli.dump_merges.as_ref().map(|d| cwd.join(d)),
        reporter: session.reporter(),
        ..Options::new(&from_cwd(&cli.to), project_dir, session.env.clone())
    };
    let outcome = patchgen_bump::bump(&opts).and_then(|r| {
        if let Some(path) = &cli.report {
            let path = cwd.join(path);
            patchgen_core::atomic::write(&path, &report::markdown(&r))
                .map_err(|e| RunError::Failed(format!("--report {}: {e}", path.display())))?;
        }
        Ok(Output::new(r))
    });
    session.finish_with(outcome)
}

/// A bump as the printer writes it.
pub struct Output {
    pub report: BumpReport,
    diagnostics: Vec<Diagnostic>,
}

impl Output {
    pub fn new(report: BumpReport) -> Output {
        let diagnostics = report::diagnostics(&report);
        Output { report, diagnostics }
    }
}

impl Report for Output {
    fn command(&self) -> &'static str {
        "bump"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.diagnostics.iter().collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        report::json_fields(&self.report)
    }

    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        p.out(&report::text(&self.report))
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::failure_if(self.report.exit_code() != 0)
    }
}
