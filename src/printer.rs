//! The one writer of a command's output. A command returns a [`Report`];
//! [`Printer::print`] writes it in the chosen [`Format`]:
//!
//! - `text`: the report's own [`Report::text`] (through [`Printer::out`] /
//!   [`Printer::err`] and [`Printer::diagnostic`], which renders one
//!   diagnostic like ruff's full format);
//! - `json`: one document on stdout, `{"version": 1, "command": …,
//!   "diagnostics": [...], …the report's own fields}` (`docs/json.md`);
//! - `github`: one workflow command per diagnostic on stdout;
//! - `sarif`, `gitlab`: one code-scanning report of the report's
//!   [`Report::findings`] on stdout (`docs/reports.md`); only the commands
//!   in [`FINDINGS_COMMANDS`] accept them (the others refuse before they run).
//!
//! A closed stdout (`patchgen check | head -1`) stops the printing quietly
//! and the process exits 0: what was printed was printed.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use serde::Serialize;

use crate::output::Style;
use patchgen_diagnostics::render::{self, Sources};
pub use patchgen_diagnostics::{Diagnostic, ExitStatus, Format};

/// What a command returns: printed by [`Printer::print`], never by the command.
pub trait Report {
    /// The command's name in the JSON document (`"check"`).
    fn command(&self) -> &'static str;
    /// The diagnostics, in the order they are reported.
    fn diagnostics(&self) -> Vec<&Diagnostic>;
    /// The command-specific fields of the JSON document (a JSON object).
    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value>;
    /// What `--format github` annotates: by default every diagnostic; a
    /// command may leave out what its text form hides (notes without `-v`).
    fn annotations(&self) -> Vec<&Diagnostic> {
        self.diagnostics()
    }
    /// What the `sarif` and `gitlab` reports hold: by default what
    /// `github` annotates.
    fn findings(&self) -> Vec<&Diagnostic> {
        self.annotations()
    }
    /// The error of a command that could not run: a `sarif` report records
    /// it as an unsuccessful invocation, a `gitlab` one is empty.
    fn failure(&self) -> Option<&str> {
        None
    }
    /// The human form.
    fn text(&self, p: &mut Printer) -> io::Result<()>;
    fn exit_status(&self) -> ExitStatus;
}

/// The commands whose reports are findings, and so the only ones that
/// write `sarif` and `gitlab` reports (`docs/reports.md`).
pub const FINDINGS_COMMANDS: [&str; 4] = ["check", "lint", "survey", "explain"];

/// A report without diagnostics whose text is one rendered string and whose
/// JSON fields are its serde form (`reference`, `new`): implementing this
/// implements [`Report`].
pub trait PlainReport: Serialize {
    /// The command's name in the JSON document.
    const COMMAND: &'static str;
    /// The human form.
    fn render(&self) -> String;
    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Success
    }
}

impl<T: PlainReport> Report for T {
    fn command(&self) -> &'static str {
        T::COMMAND
    }
    fn diagnostics(&self) -> Vec<&Diagnostic> {
        Vec::new()
    }
    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(self)
    }
    fn text(&self, p: &mut Printer) -> io::Result<()> {
        p.out(&self.render())
    }
    fn exit_status(&self) -> ExitStatus {
        PlainReport::exit_status(self)
    }
}

pub use patchgen_diagnostics::render::json_fields as fields;

/// Owns stdout and stderr for one run.
pub struct Printer {
    pub style: Style,
    pub format: Format,
    /// Diagnostics are rendered with colour (stderr is a terminal, no `NO_COLOR`).
    err_color: bool,
    /// Paths in `github` output are made relative to this directory.
    base: PathBuf,
    sources: Sources,
    stdout: io::BufWriter<io::Stdout>,
}

pub use patchgen_diagnostics::render::JSON_VERSION;

impl Printer {
    pub fn new(format: Format) -> Printer {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Printer {
            style: Style::detect(),
            format,
            err_color: !no_color && io::stderr().is_terminal(),
            base: std::env::current_dir().unwrap_or_default(),
            sources: Sources::default(),
            stdout: io::BufWriter::new(io::stdout()),
        }
    }

    /// Write `s` to stdout.
    pub fn out(&mut self, s: &str) -> io::Result<()> {
        self.stdout.write_all(s.as_bytes())
    }

    /// Write `s` to stderr (stdout flushed first, so the two interleave as written).
    pub fn err(&mut self, s: &str) -> io::Result<()> {
        self.stdout.flush()?;
        // A closed stderr is no reason to stop.
        let _ = io::stderr().write_all(s.as_bytes());
        Ok(())
    }

    /// Flush stdout.
    pub fn flush(&mut self) -> io::Result<()> {
        self.stdout.flush()
    }

    /// One diagnostic, rendered as text on stderr.
    pub fn diagnostic(&mut self, d: &Diagnostic) -> io::Result<()> {
        let s = render::text(d, &mut self.sources, self.err_color, &self.base);
        self.err(&s)
    }

    /// Print a report; returns how the process should end.
    pub fn print(&mut self, report: &dyn Report) -> ExitStatus {
        let result = match self.format {
            Format::Text => report.text(self),
            Format::Json => self.json(report),
            Format::Github => self.github(report),
            Format::Sarif => self.sarif(report),
            Format::Gitlab => self.gitlab(report),
        };
        let written = result.and_then(|()| self.stdout.flush());
        self.finish(written, report.exit_status())
    }

    /// `status`, unless writing failed: a broken pipe is a quiet success;
    /// any other write error is reported.
    pub fn finish(&mut self, written: io::Result<()>, status: ExitStatus) -> ExitStatus {
        match written {
            Ok(()) => status,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitStatus::Success,
            Err(e) => {
                let _ = writeln!(io::stderr(), "patchgen: error: cannot write the output: {e}");
                ExitStatus::Error
            }
        }
    }

    fn json(&mut self, report: &dyn Report) -> io::Result<()> {
        self.out(&json_document(report))
    }

    fn sarif(&mut self, report: &dyn Report) -> io::Result<()> {
        let docs = patchgen_core::settings::docs_url(&patchgen_core::settings::Env::capture());
        let rule = |d: &Diagnostic| patchgen_lint::catalogue::rule_info(d, docs.as_deref());
        let tool = render::Tool { name: "patchgen", version: env!("CARGO_PKG_VERSION") };
        let text = render::sarif(&report.findings(), &rule, report.failure(), &tool, &self.base, &mut self.sources);
        self.out(&text)
    }

    fn gitlab(&mut self, report: &dyn Report) -> io::Result<()> {
        if let Some(error) = report.failure() {
            self.err(&format!("patchgen {}: error: {error}\n", report.command()))?;
        }
        let text = render::gitlab(&report.findings(), &self.base, &mut self.sources);
        self.out(&text)
    }

    fn github(&mut self, report: &dyn Report) -> io::Result<()> {
        for d in report.annotations() {
            let line = render::github(d, &self.base);
            self.out(&line)?;
        }
        Ok(())
    }
}

/// The one JSON document every command writes (`docs/json.md`), pretty,
/// ending in a newline.
pub fn json_document(report: &dyn Report) -> String {
    render::json_document(report.command(), &report.diagnostics(), report.json_fields())
}
