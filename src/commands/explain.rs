//! `patchgen explain`: command-line glue (arguments, dispatch, printing)
//! over `patchgen_core::explain`.

use std::io;

use clap::Args;

use crate::args::{ConfigNameArg, FormatArg, ProjectArg, RunArgs};
use crate::printer::{ExitStatus, Printer, Report, fields};
use crate::session::{Fatal, Session};
use patchgen_core::explain::lines::{explain_at, parse_spec};
use patchgen_core::explain::report::{FilesReport, LineReport, explain_modules};
use patchgen_diagnostics::Diagnostic;

const EXPLAIN_EXAMPLES: &str = "\
Examples:
  patchgen explain                                          every hunk of every .diff, with its causes
  patchgen explain pkg.models.qwen3.qwen3_gpu_patch_gen_config
  patchgen explain pkg/models/qwen3/generated/patched_modeling_qwen3_gpu.py:120
  patchgen explain --format github                          one notice per hunk (pull request annotations)
  patchgen explain --format sarif                           the unexplained hunks (PG105), for code scanning";

/// Where each generated line and each .diff hunk comes from (patch, import, upstream, ruff)
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
#[command(after_help = EXPLAIN_EXAMPLES)]
pub struct ExplainArgs {
    /// GENERATED_FILE:LINE, or config modules [default: every discovered config]
    #[arg(value_name = "FILE:LINE | PATCH_MODULE")]
    pub targets: Vec<String>,
    #[command(flatten)]
    pub config_name: ConfigNameArg,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub project: ProjectArg,
    #[command(flatten)]
    pub format: FormatArg,
}

/// Whether `arg` names a line of a file (`x.py:12`) rather than a module
/// (`x.py:0` and `x.py:-1` too: refused then as lines, not looked up as modules).
fn is_line_spec(arg: &str) -> bool {
    arg.rsplit_once(':').is_some_and(|(file, line)| !file.is_empty() && line.parse::<i128>().is_ok())
}

pub fn run(args: &ExplainArgs) -> ExitStatus {
    let mut overrides = args.run.overrides(&args.format);
    overrides.no_cache = true;
    let base = std::env::current_dir().unwrap_or_default();
    let config_name = args.config_name.config_name.clone();
    match args.targets.as_slice() {
        [one] if is_line_spec(one) => {
            Session::run_pipeline("explain", &overrides, &args.project, Some(false), |ctx, _| {
                let (file, line) = parse_spec(one).map_err(|e| Fatal::plain("explain", e.to_string()))?;
                let answer =
                    explain_at(ctx, &file, line, &config_name).map_err(|e| Fatal::plain("explain", e.to_string()))?;
                Ok(Line(LineReport::of(answer, &base)))
            })
        }
        targets if targets.iter().any(|t| is_line_spec(t)) => {
            let fatal = Fatal::plain("explain", "give one FILE:LINE, or config modules, not both");
            Printer::new(args.format.format.unwrap_or_default()).print(&fatal)
        }
        targets => Session::run_pipeline("explain", &overrides, &args.project, Some(false), |ctx, _| {
            let modules: Vec<String> = if targets.is_empty() {
                ctx.project
                    .discover()
                    .map_err(|e| Fatal::plain("explain", e.to_string()))?
                    .into_iter()
                    .map(|c| c.module)
                    .collect()
            } else {
                targets.iter().map(|m| ctx.project.normalize_module(m)).collect()
            };
            let report = explain_modules(ctx, &modules, &config_name);
            let notices = report.notices(&base);
            let unexplained = unexplained(&report);
            Ok(Files { report, notices, unexplained, base: base.clone() })
        }),
    }
}

/// `explain FILE:LINE`.
struct Line(LineReport);

impl Report for Line {
    fn command(&self) -> &'static str {
        "explain"
    }
    fn diagnostics(&self) -> Vec<&Diagnostic> {
        Vec::new()
    }
    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(&self.0)
    }
    fn annotations(&self) -> Vec<&Diagnostic> {
        Vec::new()
    }
    fn text(&self, p: &mut Printer) -> io::Result<()> {
        p.out(&self.0.text)
    }
    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Success
    }
}

/// `explain [MODULE...]`.
struct Files {
    report: FilesReport,
    notices: Vec<Diagnostic>,
    /// The findings of `sarif` and `gitlab`: each unexplained hunk as lint's PG105 reports it.
    unexplained: Vec<Diagnostic>,
    base: std::path::PathBuf,
}

/// Each unexplained hunk as a PG105 finding, at the generated file's first changed line.
fn unexplained(report: &FilesReport) -> Vec<Diagnostic> {
    let Some(rule) = patchgen_lint::rule("PG105") else { return Vec::new() };
    let mut out = Vec::new();
    for f in &report.files {
        for h in f.hunks.iter().filter(|h| h.is_unexplained()) {
            let message =
                format!("{}: no patch, import, header or ruff rule accounts for this hunk of the .diff", h.header());
            let d = rule
                .diagnostic(message)
                .at(patchgen_diagnostics::Location::line(f.path.clone(), h.first_changed))
                .help("`patchgen explain` shows every hunk's causes; give the change a config line")
                .config(f.config.clone());
            out.push(d);
        }
    }
    out
}

impl Report for Files {
    fn command(&self) -> &'static str {
        "explain"
    }
    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.report.diagnostics.iter().collect()
    }
    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(&self.report)
    }
    fn annotations(&self) -> Vec<&Diagnostic> {
        self.report.diagnostics.iter().chain(&self.notices).collect()
    }
    fn findings(&self) -> Vec<&Diagnostic> {
        self.report.diagnostics.iter().chain(&self.unexplained).collect()
    }
    fn text(&self, p: &mut Printer) -> io::Result<()> {
        for d in &self.report.diagnostics {
            p.diagnostic(d)?;
        }
        p.out(&self.report.text(&self.base))
    }
    fn exit_status(&self) -> ExitStatus {
        ExitStatus::failure_if(!self.report.diagnostics.is_empty())
    }
}
