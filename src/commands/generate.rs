//! `patchgen generate` (the reference's `patchgen <module>` and `--all`):
//! generate configs, write (or, with `--dry-run`, describe) their files,
//! and return a [`GenerateReport`]. Configs of `--all` are generated in
//! parallel and reported in discovery order; a failure never stops the
//! others.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::args::GenerateArgs;
use crate::printer::{ExitStatus, Printer, Report, fields};
use crate::session::{Fatal, Session, open_cache};
use patchgen_core::pipeline::cached::{Compare, Expected, Note, Produced};
use patchgen_core::pipeline::{Context, Failure};
use patchgen_diagnostics::{Diagnostic, Severity, codes};

/// What happened to one config.
#[derive(Debug, Serialize)]
pub struct ConfigOutcome {
    pub module: String,
    /// `generated`, `dry_run` (nothing written) or `failed`.
    pub status: &'static str,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub py: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub py_lines: Option<usize>,
    /// The `.diff` (written with `--diff`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_lines: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Warnings and notes, then the failure if any.
    #[serde(skip)]
    pub diagnostics: Vec<Diagnostic>,
    /// For text: the plan summary and dry-run figures.
    #[serde(skip)]
    detail: Option<Detail>,
    /// For text: the failure is a write error (`error:` + message), a
    /// config failure, or `--strict`.
    #[serde(skip)]
    failure: Option<FailureText>,
    /// What the result cache did (printed with `-v`).
    #[serde(skip)]
    cache: Note,
}

#[derive(Debug)]
struct Detail {
    /// The plan summary (`-v`).
    summary: String,
    patches: usize,
    upstream_origin: PathBuf,
    upstream_lines: usize,
    py_path: PathBuf,
    diff_path: PathBuf,
}

#[derive(Debug)]
enum FailureText {
    /// The config could not be generated (`Failure`'s text).
    Config(String),
    /// `--strict` with warnings.
    Strict(String),
    /// Generated, but a file could not be written.
    Write(String),
}

/// The report of `generate`.
#[derive(Debug, Serialize)]
pub struct GenerateReport {
    /// `--all` (else one named module).
    pub all: bool,
    pub configs: Vec<ConfigOutcome>,
    #[serde(skip)]
    args: GenerateArgs,
    /// `-o` is a file: a usage error (exit 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_error: Option<String>,
}

pub fn run(args: &GenerateArgs) -> ExitStatus {
    let overrides = args.run.overrides(&args.format);
    Session::run_pipeline("generate", &overrides, &args.project, Some(args.verbose), |ctx, settings| {
        generate(ctx, args, open_cache(ctx, settings))
    })
}

/// Generate what `args` asks for, writing files unless `--dry-run`. With a
/// cache, a config whose entry is valid and whose files on disk are already
/// what generation would write (for a dry run: its `.py`) is neither
/// generated nor written again.
pub fn generate(
    ctx: &Context,
    args: &GenerateArgs,
    cache: Result<Option<patchgen_cache::Cache>, String>,
) -> Result<GenerateReport, Fatal> {
    let mut report = GenerateReport { all: args.all, configs: Vec::new(), args: args.clone(), usage_error: None };
    let modules: Vec<String> = if args.all {
        let configs = ctx.project.discover().map_err(|e| Fatal::plain("generate", e.to_string()))?;
        configs.into_iter().map(|c| c.module).collect()
    } else {
        if let Some(dir) = args.output_dir.as_deref().filter(|d| d.is_file()) {
            report.usage_error = Some(format!("-o {}: is a file, not a directory", dir.display()));
            return Ok(report);
        }
        vec![ctx.project.normalize_module(args.module.as_deref().unwrap_or_default())]
    };
    let compare = Compare::Written { diff: args.diff && !args.dry_run };
    let (cache, off) = match &cache {
        Ok(c) => (c.as_ref().map(|cache| patchgen_core::pipeline::cached::Use { cache, compare }), None),
        Err(why) => (None, Some(why.as_str())),
    };
    let output_dir = if args.all { None } else { args.output_dir.as_deref() };
    let results = ctx.generate_many_cached(cache, &modules, &args.config_name.config_name, output_dir, &|_| None);
    for (module, (result, secs, note)) in modules.iter().zip(results) {
        match result {
            // Evaluates fine but has no `config` PatchConfig: the reference skips it.
            Err(Failure::NotAConfig { .. }) if args.all => continue,
            r => {
                let note = off.map_or(note, |why| Note::Unavailable(why.to_string()));
                report.configs.push(outcome(module, r, secs, note, args))
            }
        }
    }
    Ok(report)
}

fn outcome(
    module: &str,
    result: Result<Produced, Failure>,
    seconds: f64,
    cache: Note,
    args: &GenerateArgs,
) -> ConfigOutcome {
    let mut o = ConfigOutcome {
        module: module.to_string(),
        status: "failed",
        seconds,
        py: None,
        py_lines: None,
        diff: None,
        diff_lines: None,
        error: None,
        diagnostics: Vec::new(),
        detail: None,
        failure: None,
        cache,
    };
    let produced = match result {
        Ok(p) => p,
        Err(f) => {
            o.error = Some(f.to_string());
            o.diagnostics.push(f.diagnostic(module));
            o.failure = Some(FailureText::Config(f.to_string()));
            return o;
        }
    };
    let (e, fresh) = match produced {
        Produced::Fresh(g) => (Expected::of(&g), Some(g)),
        Produced::Cached(e) => (*e, None),
    };
    o.diagnostics = e.diagnostics.clone();
    o.detail = Some(Detail {
        summary: e.summary.clone(),
        patches: e.patches,
        upstream_origin: e.upstream_origin.clone(),
        upstream_lines: e.upstream_lines,
        py_path: e.py_path.clone(),
        diff_path: e.diff_path.clone(),
    });
    let warnings = e.diagnostics.iter().filter(|d| d.severity >= Severity::Warning).count();
    if args.strict && warnings > 0 {
        let msg = format!("{warnings} warning(s) under --strict");
        o.diagnostics.push(codes::STRICT.diagnostic(msg.clone()).config(module));
        o.error = Some(msg.clone());
        o.failure = Some(FailureText::Strict(msg));
        return o;
    }
    if args.dry_run {
        o.status = "dry_run";
        return o;
    }
    // A cached config's files are on disk already, byte for byte.
    let written = match &fresh {
        Some(g) => write(g, args.diff),
        None => Ok(()),
    };
    if let Err((py_written, msg)) = written {
        o.diagnostics.push(codes::WRITE_ERROR.diagnostic(msg.clone()).config(module));
        o.error = Some(msg.clone());
        o.failure = Some(FailureText::Write(msg));
        o.status = "failed";
        if py_written {
            o.py = Some(e.py_path.clone());
            o.py_lines = Some(e.py_lines);
        }
        return o;
    }
    o.py = Some(e.py_path.clone());
    o.py_lines = Some(e.py_lines);
    if args.diff {
        o.diff = Some(e.diff_path.clone());
        o.diff_lines = Some(e.diff_lines);
    }
    o.status = "generated";
    o
}

/// Write the `.py` (and `.diff`); on failure, whether the `.py` was written.
fn write(g: &patchgen_core::pipeline::Generated, diff: bool) -> Result<(), (bool, String)> {
    if g.output_dir.is_file() {
        let msg = format!("{}: output directory is a file\n  help: point -o at a directory", g.output_dir.display());
        return Err((false, msg));
    }
    let cannot = |p: &Path, e: io::Error| format!("{}: cannot write: {e}", p.display());
    patchgen_core::atomic::write(&g.py_path, &g.py).map_err(|e| (false, cannot(&g.py_path, e)))?;
    if diff {
        patchgen_core::atomic::write(&g.diff_path, &g.diff).map_err(|e| (true, cannot(&g.diff_path, e)))?;
    }
    Ok(())
}

impl ConfigOutcome {
    /// `-v`: what the result cache did.
    fn text_cache(&self, p: &mut Printer, args: &GenerateArgs) -> io::Result<()> {
        if !args.verbose || self.cache == Note::Off {
            return Ok(());
        }
        let label = p.style.dim("cache:");
        p.err(&format!("{label} {}\n", self.cache))
    }

    /// The diagnostics before the failure (warnings and notes).
    fn findings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| !d.code.starts_with("PGE"))
    }

    /// The failure, with its source excerpt, when it points into a file.
    fn text_failure(&self, p: &mut Printer) -> io::Result<()> {
        for d in self.diagnostics.iter().filter(|d| d.is_located_error()) {
            p.diagnostic(d)?;
        }
        Ok(())
    }

    /// Plan summary, dry-run description or the ✓ lines; then a write error.
    fn text_files(&self, p: &mut Printer, args: &GenerateArgs) -> io::Result<()> {
        let Some(d) = &self.detail else { return Ok(()) };
        if args.verbose {
            p.out(&d.summary)?;
            p.out(&format!("  Upstream: {}\n", d.upstream_origin.display()))?;
        }
        if self.status == "dry_run" {
            let mut s = format!("\n[DRY RUN] Would generate:\n  Output: {}\n", d.py_path.display());
            if args.diff {
                s += &format!("  Diff:   {}\n", d.diff_path.display());
            }
            s += &format!("  Source lines: ~{}\n  Patches to apply: {}\n", d.upstream_lines, d.patches);
            return p.out(&s);
        }
        let tick = p.style.ok("✓");
        if let (Some(py), Some(n)) = (&self.py, self.py_lines) {
            p.out(&format!("{tick} Generated: {}\n  Lines: {n}\n", py.display()))?;
        }
        if let (Some(diff), Some(n)) = (&self.diff, self.diff_lines) {
            p.out(&format!("{tick} Diff: {}\n  Lines: {n}\n", diff.display()))?;
        }
        Ok(())
    }
}

impl GenerateReport {
    fn text_one(&self, p: &mut Printer) -> io::Result<()> {
        let Some(o) = self.configs.first() else { return Ok(()) };
        if self.args.verbose {
            p.out(&format!("Loading patch module: {}\n", o.module))?;
        }
        o.text_cache(p, &self.args)?;
        for d in o.findings() {
            p.diagnostic(d)?;
        }
        if matches!(o.failure, Some(FailureText::Strict(_))) {
            let msg = p.style.bad("error:");
            return p.err(&format!("{msg} {}: {}\n", o.module, o.error.as_deref().unwrap_or_default()));
        }
        o.text_files(p, &self.args)?;
        o.text_failure(p)?;
        match &o.failure {
            Some(FailureText::Config(msg)) | Some(FailureText::Write(msg)) => {
                let label = p.style.bad("error:");
                p.err(&format!("{label} {msg}\n"))
            }
            _ => Ok(()),
        }
    }

    fn text_all(&self, p: &mut Printer) -> io::Result<()> {
        let rule = "=".repeat(70);
        let mut failed = Vec::new();
        for o in &self.configs {
            let fail = p.style.bad("FAIL");
            match &o.failure {
                Some(FailureText::Config(msg)) => {
                    p.out(&format!("\n{rule}\nGenerating: {}\n{rule}\n", o.module))?;
                    o.text_failure(p)?;
                    p.err(&format!("{fail} {msg}\n"))?;
                    failed.push(&o.module);
                    continue;
                }
                _ => {
                    let ms = p.style.dim(&format!("({:.0} ms)", o.seconds * 1000.0));
                    p.out(&format!("\n{rule}\nGenerating: {} {ms}\n{rule}\n", o.module))?;
                }
            }
            o.text_cache(p, &self.args)?;
            for d in o.findings() {
                p.diagnostic(d)?;
            }
            match &o.failure {
                Some(FailureText::Strict(msg)) => {
                    p.err(&format!("{fail} {}: {msg}\n", o.module))?;
                    failed.push(&o.module);
                }
                Some(FailureText::Write(msg)) => {
                    o.text_files(p, &self.args)?;
                    p.err(&format!("{fail} {msg}\n"))?;
                    failed.push(&o.module);
                }
                _ => o.text_files(p, &self.args)?,
            }
        }
        let generated = self.configs.len() - failed.len();
        if generated == 0 && failed.is_empty() {
            return p.err("No patch configs found.\n");
        }
        if !failed.is_empty() {
            let mut s = format!("\nFailed configs ({}):\n", failed.len());
            for f in failed {
                s += &format!("  {f}\n");
            }
            return p.err(&s);
        }
        p.out(&format!("\nAll {generated} configs generated successfully.\n"))
    }
}

impl Report for GenerateReport {
    fn command(&self) -> &'static str {
        "generate"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.configs.iter().flat_map(|c| &c.diagnostics).collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(self)
    }

    fn text(&self, p: &mut Printer) -> io::Result<()> {
        if let Some(msg) = &self.usage_error {
            return p.err(&format!("patchgen: error: {msg}\n"));
        }
        if self.all { self.text_all(p) } else { self.text_one(p) }
    }

    fn exit_status(&self) -> ExitStatus {
        if self.usage_error.is_some() {
            return ExitStatus::Error;
        }
        // `--all` that found nothing to generate fails, as in the reference.
        ExitStatus::failure_if(
            self.configs.iter().any(|c| c.failure.is_some()) || (self.all && self.configs.is_empty()),
        )
    }
}
