//! `patchgen check` (the reference's `--check [--fix]`): the drift gate.
//! Every config is generated in memory (in parallel, ruff batched) and
//! compared with its checked-in files; with `--fix` exactly the files that
//! differ are rewritten. Returns a [`CheckReport`].

use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::args::CheckArgs;
use crate::printer::{ExitStatus, Printer, Report, fields};
use crate::session::{Fatal, Session, open_cache};
use patchgen_core::check::{FileCheck, FileStatus, check_generated};
use patchgen_core::pipeline::cached::{Compare, Expected, Note, Produced};
use patchgen_core::pipeline::{Context, Failure, Generated};
use patchgen_diagnostics::{Diagnostic, Location, Severity, codes};

/// One checked file, as the JSON document shows it.
#[derive(Debug, Serialize)]
pub struct FileRow {
    pub path: PathBuf,
    /// `ok`, `drift` or `fixed`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// With `drift`: the difference in words when a diff does not show it
    /// (final newlines, trailing whitespace, CRLF).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// With `ok`: a `.diff` that differs only in the newlines that end it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub final_newlines_only: bool,
}

/// One config's outcome.
#[derive(Debug, Serialize)]
pub struct CheckRow {
    pub module: String,
    /// `ok`, `drift`, `error` or `skipped`.
    pub status: &'static str,
    #[serde(serialize_with = "four_decimals")]
    pub seconds: f64,
    /// `file:line: message` of each warning (kept from the first JSON
    /// schema; the same findings are in the top-level `diagnostics`).
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<FileRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip)]
    py_path: Option<PathBuf>,
    /// The upstream module of a skipped optional config.
    #[serde(skip)]
    skipped: Option<String>,
    /// Warnings and notes, the failure, the drifted files.
    #[serde(skip)]
    diagnostics: Vec<Diagnostic>,
    /// What the result cache did (printed with `-v`).
    #[serde(skip)]
    cache: Note,
}

fn four_decimals<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((v * 10000.0).round() / 10000.0)
}

/// The report of `check`.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub configs: Vec<CheckRow>,
    #[serde(skip)]
    fix: bool,
    #[serde(skip)]
    verbose: bool,
    /// The run's notes (one at most: `.diff` files up to date but for their
    /// final newlines, `check::final_newlines_note`).
    #[serde(skip)]
    notes: Vec<Diagnostic>,
}

pub fn run(args: &CheckArgs) -> ExitStatus {
    let overrides = args.run.overrides(&args.format);
    Session::run_pipeline("check", &overrides, &args.project, Some(args.verbose), |ctx, settings| {
        check(ctx, args, open_cache(ctx, settings))
    })
}

/// A config's outcome before its files are compared.
enum Outcome {
    Done(Box<Generated>),
    /// Answered by the cache: the checked-in files are the expected ones.
    Cached(Box<Expected>),
    /// Evaluates fine but has no `config` PatchConfig: the reference skips it.
    NotAConfig,
    /// `optional=True` with its upstream module missing.
    Skipped(String),
    Failed(Failure),
}

/// Generate every selected config and compare (or fix) its files; with a
/// cache, configs it answers are neither generated nor compared again.
pub fn check(
    ctx: &Context,
    args: &CheckArgs,
    cache: Result<Option<patchgen_cache::Cache>, String>,
) -> Result<CheckReport, Fatal> {
    let modules: Vec<String> = if args.modules.is_empty() {
        ctx.project
            .discover()
            .map_err(|e| Fatal::plain("check", e.to_string()))?
            .into_iter()
            .map(|c| c.module)
            .collect()
    } else {
        args.modules.iter().map(|m| ctx.project.normalize_module(m)).collect()
    };
    let config_name = &args.config_name.config_name;
    // The checked-in `.py`: its `.diff` is taken while ruff runs.
    let checked_in = |job: &patchgen_core::pipeline::Job| {
        patchgen_core::check::read_text(&job.py_path).ok().filter(|t| !t.is_empty())
    };
    patchgen_core::timings::mark("discovered");
    let (cache, off) = match &cache {
        Ok(c) => {
            (c.as_ref().map(|cache| patchgen_core::pipeline::cached::Use { cache, compare: Compare::AsCheck }), None)
        }
        Err(why) => (None, Some(why.as_str())),
    };
    let results: Vec<(Outcome, f64, Note)> = ctx
        .generate_many_cached(cache, &modules, config_name, None, &checked_in)
        .into_iter()
        .map(|(result, secs, note)| {
            let outcome = match result {
                Ok(Produced::Fresh(g)) => Outcome::Done(g),
                Ok(Produced::Cached(e)) => Outcome::Cached(e),
                // Discovered modules without a `config` are skipped whatever
                // their number, as the reference's discovery skips them; a
                // module the user names is an error.
                Err(Failure::NotAConfig { .. }) if args.modules.is_empty() => Outcome::NotAConfig,
                Err(Failure::OptionalSkipped { source_module }) => Outcome::Skipped(source_module),
                Err(f) => Outcome::Failed(f),
            };
            (outcome, secs, off.map_or(note, |why| Note::Unavailable(why.to_string())))
        })
        .collect();
    // Reading and comparing the checked-in files, config by config in parallel.
    let configs: Vec<CheckRow> = modules
        .par_iter()
        .zip(results)
        .filter_map(|(module, (outcome, secs, note))| row(module, outcome, secs, note, args))
        .collect();
    patchgen_core::timings::mark("compared");
    let final_newlines: Vec<&Path> = configs
        .iter()
        .flat_map(|r| r.files.iter().flatten())
        .filter(|f| f.final_newlines_only)
        .map(|f| f.path.as_path())
        .collect();
    let notes = patchgen_core::check::final_newlines_note(&ctx.project, &final_newlines).into_iter().collect();
    Ok(CheckReport { configs, fix: args.fix, verbose: args.verbose, notes })
}

fn row(module: &str, outcome: Outcome, seconds: f64, cache: Note, args: &CheckArgs) -> Option<CheckRow> {
    let mut row = CheckRow {
        module: module.to_string(),
        status: "ok",
        seconds,
        warnings: Vec::new(),
        files: None,
        error: None,
        py_path: None,
        skipped: None,
        diagnostics: Vec::new(),
        cache,
    };
    match outcome {
        Outcome::NotAConfig => return None,
        Outcome::Skipped(source_module) => {
            row.status = "skipped";
            let f = Failure::OptionalSkipped { source_module: source_module.clone() };
            row.diagnostics.push(f.diagnostic(module));
            row.skipped = Some(source_module);
        }
        Outcome::Failed(f) => {
            row.status = "error";
            row.error = Some(f.to_string());
            row.diagnostics.push(f.diagnostic(module));
        }
        Outcome::Cached(e) => {
            if findings(&mut row, &e.py_path, &e.diagnostics, module, args) {
                // The files on disk are the expected ones: nothing drifted, nothing to fix.
                let ok = |path: &PathBuf| FileCheck {
                    path: path.clone(),
                    status: FileStatus::UpToDate,
                    final_newlines_only: false,
                    explanation: None,
                };
                row.files = Some(vec![file_row(ok(&e.py_path)), file_row(ok(&e.diff_path))]);
            }
        }
        Outcome::Done(g) => {
            if !findings(&mut row, &g.py_path, &g.diagnostics, module, args) {
                return Some(row);
            }
            match check_generated(&g, args.fix) {
                Err(e) => {
                    let msg = format!("cannot compare or write: {e}");
                    row.status = "error";
                    row.error = Some(msg.clone());
                    row.diagnostics.push(codes::WRITE_ERROR.diagnostic(msg).config(module));
                }
                Ok(files) => {
                    if files.iter().any(|f| matches!(f.status, FileStatus::Drift(_))) {
                        row.status = "drift";
                    }
                    for f in &files {
                        if let FileStatus::Drift(_) = f.status {
                            row.diagnostics.push(drift_related(drift_diagnostic(f, module), f, &g));
                        }
                    }
                    row.files = Some(files.into_iter().map(file_row).collect());
                }
            }
        }
    }
    Some(row)
}

/// A generated (or cached) config's path, warnings and notes into `row`;
/// `false` when `--strict` fails it.
fn findings(row: &mut CheckRow, py_path: &Path, diagnostics: &[Diagnostic], module: &str, args: &CheckArgs) -> bool {
    row.py_path = Some(py_path.to_path_buf());
    let warnings: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.severity >= Severity::Warning).collect();
    row.warnings = warnings.iter().map(|d| warning_line(d)).collect();
    row.diagnostics = diagnostics.to_vec();
    if args.strict && !warnings.is_empty() {
        let msg = format!("{} warning(s) under --strict", warnings.len());
        row.status = "error";
        row.error = Some(format!("{msg}:\n{}", row.warnings.join("\n")));
        row.diagnostics.push(codes::STRICT.diagnostic(msg).config(module));
        return false;
    }
    true
}

/// `path:line: message`, as the first JSON schema listed warnings.
fn warning_line(d: &Diagnostic) -> String {
    match &d.location {
        Some(l) => format!("{}: {}", Location::line(l.path.clone(), l.line), d.message),
        None => d.message.clone(),
    }
}

fn drift_diagnostic(f: &FileCheck, module: &str) -> Diagnostic {
    codes::DRIFT
        .diagnostic(format!(
            "`{}` differs from what its config produces",
            f.path.file_name().map_or(f.path.display().to_string(), |n| n.to_string_lossy().into_owned())
        ))
        .at(Location::file(f.path.clone()))
        .help("run `patchgen check --fix` (or `patchgen --check --fix`) and commit the result")
        .config(module)
}

/// A drifted `.py`'s diagnostic, with where the expected text of each
/// drift hunk comes from as related entries.
fn drift_related(d: Diagnostic, f: &FileCheck, g: &patchgen_core::pipeline::Generated) -> Diagnostic {
    if f.path != g.py_path {
        return d;
    }
    let checked_in = patchgen_core::check::read_text(&f.path).unwrap_or_default();
    let base = std::env::current_dir().unwrap_or_default();
    patchgen_core::provenance::drift::hunk_origins(g, &checked_in).into_iter().fold(d, |d, (hunk, origin)| {
        match (origin.path.clone(), origin.line) {
            (Some(path), Some(line)) => d.related(
                Location::line(path, line),
                format!("{hunk}: expected text from {}", patchgen_core::explain::report::describe(&origin, &base)),
            ),
            _ => d,
        }
    })
}

fn file_row(f: FileCheck) -> FileRow {
    let (status, diff) = match f.status {
        FileStatus::UpToDate => ("ok", None),
        FileStatus::Fixed => ("fixed", None),
        FileStatus::Drift(d) => ("drift", Some(d)),
    };
    FileRow { path: f.path, status, diff, explanation: f.explanation, final_newlines_only: f.final_newlines_only }
}

impl CheckReport {
    fn failed(&self) -> usize {
        self.configs.iter().filter(|r| r.status == "error").count()
    }

    fn drifted(&self) -> usize {
        self.configs.iter().filter(|r| r.status == "drift").count()
    }
}

impl Report for CheckReport {
    fn command(&self) -> &'static str {
        "check"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.configs.iter().flat_map(|r| &r.diagnostics).chain(&self.notes).collect()
    }

    /// Per-config notes (`PGI…`: injected methods, skipped optional
    /// configs) only with `-v`, as in text: a pull request is not
    /// annotated with every deliberate pattern.
    fn annotations(&self) -> Vec<&Diagnostic> {
        let per_config = self.configs.iter().flat_map(|r| &r.diagnostics);
        per_config.filter(|d| self.verbose || d.severity > Severity::Info).chain(&self.notes).collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(self)
    }

    fn text(&self, p: &mut Printer) -> io::Result<()> {
        if self.configs.is_empty() {
            return p.out("No patch configs found.\n");
        }
        p.out(&format!("Found {} patch config(s):\n\n", self.configs.len()))?;
        for row in &self.configs {
            p.out(&format!("[{}]\n", row.module))?;
            if self.verbose && row.cache != Note::Off {
                let label = p.style.dim("cache:");
                p.err(&format!("  {label} {}\n", row.cache))?;
            }
            for d in row.diagnostics.iter().filter(|d| {
                d.code.starts_with("PGW") || d.is_located_error() || (self.verbose && d.code.starts_with("PGI0"))
            }) {
                if d.code != codes::OPTIONAL_SKIPPED.code {
                    p.diagnostic(d)?;
                }
            }
            if let Some(source_module) = &row.skipped {
                let skip = p.style.warn("SKIP");
                p.out(&format!("  {skip}  {source_module} (optional source not importable)\n"))?;
                continue;
            }
            if let Some(msg) = &row.error {
                let fail = p.style.bad("FAIL");
                p.out(&format!("  {fail}  {}\n", indent(msg, 8).trim_start()))?;
                continue;
            }
            let mut ok = true;
            for f in row.files.iter().flatten() {
                match f.status {
                    "fixed" => {
                        let fixed = p.style.ok("FIXED");
                        p.out(&format!("  {fixed} {}\n", f.path.display()))?;
                    }
                    "drift" => {
                        ok = false;
                        let drift = p.style.bad("DRIFT");
                        let diff = p.style.diff(f.diff.as_deref().unwrap_or_default());
                        p.out(&format!("  {drift} {}\n{diff}", f.path.display()))?;
                        if let Some(why) = &f.explanation {
                            let note = p.style.dim("note:");
                            p.out(&format!("  {note} {why}\n"))?;
                        }
                    }
                    _ => {}
                }
            }
            if ok && !self.fix {
                let path = row.py_path.as_deref().unwrap_or(Path::new(""));
                let okay = p.style.ok("OK");
                let ms = p.style.dim(&format!("({:.0} ms)", row.seconds * 1000.0));
                p.out(&format!("  {okay}    {} {ms}\n", path.display()))?;
            }
        }
        p.out("\n")?;
        for note in &self.notes {
            p.diagnostic(note)?;
        }
        let failed = self.failed();
        if failed > 0 {
            let mut s = format!("{failed} config(s) failed:\n");
            for r in self.configs.iter().filter(|r| r.status == "error") {
                s += &format!("  {}\n", r.module);
            }
            p.out(&s)?;
        }
        if self.exit_status() == ExitStatus::Success {
            p.out("All generated files are up to date.\n")
        } else if self.drifted() > 0 {
            p.out("Generated files are out of date. Re-run with --fix.\n")
        } else {
            Ok(())
        }
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::failure_if(self.failed() > 0 || self.drifted() > 0)
    }
}

fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines().map(|l| format!("{pad}{l}")).collect::<Vec<_>>().join("\n")
}
