//! What every command does first ([`Session`]): read the environment once,
//! decide the output format, know the working directory; for the pipeline
//! commands also find the project, resolve the settings, check that ruff
//! runs, start the worker pool; and the report of a command that could not
//! start ([`Fatal`], exit 2).

use std::io;
use std::path::PathBuf;

use serde::Serialize;

use crate::args::ProjectArg;
use crate::printer::{ExitStatus, Format, Printer, Report, fields};
use patchgen_core::error::RunError;
use patchgen_core::normalize::RuffError;
use patchgen_core::pipeline::Context;
use patchgen_core::progress::Reporter;
use patchgen_core::project::Project;
use patchgen_core::settings::{self, Env, Overrides, Resolved};
use patchgen_diagnostics::{Diagnostic, codes};

/// A command that could not run: a usage, settings or project problem
/// (`PGE009`, exit 2), or a run that could not finish (`PGE010`, exit 1).
#[derive(Debug, Serialize)]
pub struct Fatal {
    #[serde(skip)]
    command: &'static str,
    /// The message (the diagnostic's message in JSON).
    error: String,
    /// How text output introduces it.
    #[serde(skip)]
    form: TextForm,
    #[serde(skip)]
    status: ExitStatus,
    #[serde(skip)]
    diagnostic: Box<Diagnostic>,
}

/// The first words of a fatal error in text output.
#[derive(Clone, Copy, Debug)]
enum TextForm {
    /// `patchgen <command>: error: …` (the commands beyond the reference's).
    Named,
    /// `patchgen: error: …` (the pipeline commands, as the reference prints).
    Error,
    /// `patchgen: …` (see [`Fatal::plain`]).
    Plain,
}

impl Fatal {
    /// A pipeline command that cannot start or run: `patchgen: error: <message>`.
    pub fn new(command: &'static str, message: impl Into<String>) -> Fatal {
        Fatal::legacy(command, message.into(), TextForm::Error)
    }

    /// A pipeline command's error printed as it always was, without the
    /// `error:` word: `patchgen: <message>` (project and discovery errors,
    /// which start with the file they are about; `explain`'s).
    pub fn plain(command: &'static str, message: impl Into<String>) -> Fatal {
        Fatal::legacy(command, message.into(), TextForm::Plain)
    }

    fn legacy(command: &'static str, error: String, form: TextForm) -> Fatal {
        let diagnostic = Box::new(codes::PROJECT_ERROR.diagnostic(error.clone()));
        Fatal { command, error, form, status: ExitStatus::Error, diagnostic }
    }

    /// A command's typed error, printed as `patchgen <command>: error: <message>`.
    pub fn of(command: &'static str, e: &RunError) -> Fatal {
        let code = if e.is_usage() { codes::PROJECT_ERROR } else { codes::COMMAND_FAILED };
        let mut diagnostic = code.diagnostic(e.message());
        if let Some(at) = e.location() {
            diagnostic = diagnostic.at(at);
        }
        Fatal {
            command,
            error: e.message(),
            form: TextForm::Named,
            status: e.exit_status(),
            diagnostic: Box::new(diagnostic),
        }
    }
}

impl Report for Fatal {
    fn command(&self) -> &'static str {
        self.command
    }
    fn diagnostics(&self) -> Vec<&Diagnostic> {
        vec![&self.diagnostic]
    }
    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(self)
    }
    fn text(&self, p: &mut Printer) -> io::Result<()> {
        match self.form {
            TextForm::Named => p.err(&format!("patchgen {}: error: {}\n", self.command, self.error)),
            TextForm::Error => p.err(&format!("patchgen: error: {}\n", self.error)),
            TextForm::Plain => p.err(&format!("patchgen: {}\n", self.error)),
        }
    }
    /// No finding: the error is the report's failure.
    fn findings(&self) -> Vec<&Diagnostic> {
        Vec::new()
    }
    fn failure(&self) -> Option<&str> {
        Some(&self.error)
    }
    fn exit_status(&self) -> ExitStatus {
        self.status
    }
}

/// `Err(status)`, printed in text, when `format` is a findings report
/// (`sarif`, `gitlab`) and `command` reports no findings: such a command
/// refuses before it runs (exit 2) rather than write an empty report.
/// `flag` tells whether the format came from `--format` (else
/// `PATCHGEN_OUTPUT_FORMAT`).
fn refuse_report_format(command: &'static str, format: Format, flag: bool) -> Result<(), ExitStatus> {
    if !format.is_findings_report() || crate::printer::FINDINGS_COMMANDS.contains(&command) {
        return Ok(());
    }
    let given = if flag {
        format!("--format {}", format.as_str())
    } else {
        format!("PATCHGEN_OUTPUT_FORMAT={}", format.as_str())
    };
    let message = format!(
        "{given}: `patchgen {command}` reports no findings; sarif and gitlab reports are written by {} (use text or json here)",
        crate::printer::FINDINGS_COMMANDS.join(", ")
    );
    let fatal = Fatal::of(command, &RunError::usage(message));
    Err(Printer::new(Format::Text).print(&fatal))
}

/// A started command. Every command starts here, the same way: the
/// environment is read once ([`Env::capture`]; libraries get it as a
/// value), the output format is decided (the flag, else
/// `PATCHGEN_OUTPUT_FORMAT`), and the working directory is known.
/// Commands on the pipeline ([`Session::start_in_project`]) then find the
/// project and resolve the settings; the others find the project
/// themselves where they need one (`--project`). Whatever a command
/// returns, report or error, is printed in that format; a command that
/// cannot start prints its [`Fatal`] report and returns its status.
pub struct Session {
    pub command: &'static str,
    pub cwd: PathBuf,
    /// The process environment, read once.
    pub env: Env,
    pub printer: Printer,
    /// The settings (pipeline commands).
    settings: Option<Resolved>,
    project: Option<Project>,
}

impl Session {
    /// Start a command that finds its project itself, or needs none
    /// (`survey`, `lint`, `moe`, `reference`, `new`, `rule`). Errors read
    /// `patchgen <command>: error: …`.
    pub fn start(command: &'static str, format: Option<Format>) -> Result<Session, ExitStatus> {
        Session::begin(command, format, |e| Fatal::of(command, &e))
    }

    /// Start a command on the pipeline (`generate`, `check`, `list`,
    /// `clean`, `explain`): also find the project from the working
    /// directory and resolve the settings. Errors read `patchgen: error: …`
    /// as the reference's.
    pub fn start_in_project(
        command: &'static str,
        overrides: &Overrides,
        project: &ProjectArg,
    ) -> Result<Session, ExitStatus> {
        let mut session = Session::begin(command, overrides.format, |e| Fatal::new(command, e.to_string()))?;
        let fail = |session: Session, fatal: Fatal| {
            let early_format = settings::early_format(overrides.format, &session.env);
            Err(Printer::new(early_format).print(&fatal))
        };
        let project_dir = project.project.as_ref().map_or_else(|| session.cwd.clone(), |d| session.cwd.join(d));
        let project = match Project::find(&project_dir) {
            Ok(p) => p,
            Err(e) => return fail(session, Fatal::plain(command, e.to_string())),
        };
        let resolved = match Resolved::resolve(overrides, &session.env, &project) {
            Ok(s) => s,
            Err(e) => return fail(session, Fatal::new(command, e.to_string())),
        };
        session.printer = Printer::new(resolved.format);
        session.settings = Some(resolved);
        session.project = Some(project);
        Ok(session)
    }

    /// The common start: the environment, the format, the working
    /// directory; `fatal` words a failure.
    fn begin(
        command: &'static str,
        format: Option<Format>,
        fatal: impl Fn(RunError) -> Fatal,
    ) -> Result<Session, ExitStatus> {
        let env = Env::capture();
        // The format is known before the project is: errors use it too.
        let early_format = settings::early_format(format, &env);
        let fail = |e: RunError| Err(Printer::new(early_format).print(&fatal(e)));
        // An invalid PATCHGEN_OUTPUT_FORMAT first: every later error is printed in that format.
        let flag = format.is_some();
        let format = match settings::output_format(format, &env) {
            Ok(f) => f,
            Err(e) => return fail(RunError::Settings(e)),
        };
        refuse_report_format(command, format, flag)?;
        let cwd = match std::env::current_dir() {
            Ok(d) => d,
            Err(e) => return fail(RunError::usage(format!("cannot read the working directory: {e}"))),
        };
        Ok(Session { command, cwd, env, printer: Printer::new(format), settings: None, project: None })
    }

    /// Where a library's progress goes: a bar and notes on stderr when it
    /// is a terminal (notes always).
    pub fn reporter(&self) -> Reporter {
        Reporter::new(crate::progress::Terminal::on_stderr())
    }

    /// Print the report, or the error as a [`Fatal`] report; how the process ends.
    pub fn finish_with<R: Report>(mut self, outcome: Result<R, RunError>) -> ExitStatus {
        match outcome {
            Ok(report) => self.printer.print(&report),
            Err(e) => self.printer.print(&Fatal::of(self.command, &e)),
        }
    }

    /// The settings ([`Session::start_in_project`]).
    pub fn settings(&self) -> &Resolved {
        self.settings.as_ref().expect("a pipeline session has settings")
    }

    /// The project (until [`Session::context`] takes it).
    pub fn project(&self) -> &Project {
        self.project.as_ref().expect("the project is in the context now")
    }

    /// The pipeline context (once per session).
    pub fn context(&mut self) -> Context {
        let project = self.project.take().expect("one context per session");
        let mut ctx = Context::with_ruff(project, &self.cwd, self.settings().ruff.clone());
        ctx.loader.set_max_file_size(self.settings().max_file_size);
        ctx
    }

    /// Fail (printed, exit 2) unless ruff runs; with `verbose`, say which ruff.
    pub fn preflight_ruff(&mut self, command: &'static str, ctx: &Context, verbose: bool) -> Result<(), ExitStatus> {
        let found = if verbose {
            match ctx.ruff.version() {
                Some(v) => {
                    let line = format!("using {v} ({})\n", ctx.ruff.program.display());
                    let _ = self.printer.err(&line);
                    true
                }
                None => false,
            }
        } else {
            ctx.ruff.is_available()
        };
        if found {
            return Ok(());
        }
        let msg = RuffError::NotFound { program: ctx.ruff.program.clone() }.to_string();
        Err(self.printer.print(&Fatal::new(command, msg)))
    }

    /// The usual shape of a command on the pipeline: start a session, make
    /// the context, check that ruff runs (`ruff`: `Some(verbose)`; `None`
    /// for commands that never run it), run `body` on the worker pool and
    /// print what it returns.
    pub fn run_pipeline<R: Report + Send>(
        command: &'static str,
        overrides: &Overrides,
        project: &ProjectArg,
        ruff: Option<bool>,
        body: impl FnOnce(&Context, &Resolved) -> Result<R, Fatal> + Send,
    ) -> ExitStatus {
        let mut session = match Session::start_in_project(command, overrides, project) {
            Ok(s) => s,
            Err(status) => return status,
        };
        let ctx = session.context();
        if let Some(verbose) = ruff
            && let Err(status) = session.preflight_ruff(command, &ctx, verbose)
        {
            return status;
        }
        let settings = session.settings();
        let pool = match patchgen_core::workers::pool(settings.jobs) {
            Ok(p) => p,
            Err(e) => return session.finish(&Fatal::new(command, e.message())),
        };
        let report = pool.install(|| body(&ctx, settings));
        let status = match report {
            Ok(r) => session.finish(&r),
            Err(fatal) => session.finish(&fatal),
        };
        // The process exits next: freeing every syntax tree one by one would
        // only cost time (~5 % of a check's generation).
        std::mem::forget(ctx);
        status
    }

    /// Print `report` and end the session.
    pub fn finish(mut self, report: &dyn Report) -> ExitStatus {
        self.printer.print(report)
    }
}

/// The result cache of a pipeline command: `Ok(None)` with `--no-cache`
/// (`PATCHGEN_NO_CACHE`), `Err(why)` when it cannot be used (the command
/// then runs without it).
pub fn open_cache(ctx: &Context, settings: &Resolved) -> Result<Option<patchgen_cache::Cache>, String> {
    if settings.no_cache {
        return Ok(None);
    }
    patchgen_cache::Cache::open(&settings.cache_path(&ctx.cwd, &ctx.project.root)).map(Some).map_err(|e| e.to_string())
}
