//! `patchgen generate` (the reference's `patchgen <module>` and `--all`):
//! generate configs, write (or, with `--dry-run`, describe) their files,
//! and return a [`GenerateReport`]. Configs of `--all` are generated in
//! parallel and reported in discovery order; a failure never stops the
//! others.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::args::GenerateArgs;
use super::printer::{ExitStatus, Printer, Report, fields};
use super::run::{Fatal, Session};
use crate::config::PatchPlan;
use crate::diagnostics::{Diagnostic, Severity, codes};
use crate::pipeline::{Context, Failure, Generated};
use crate::settings::Overrides;

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
}

#[derive(Debug)]
struct Detail {
    plan: PatchPlan,
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
    let overrides = Overrides { ruff: args.run.ruff.clone(), jobs: args.run.jobs, format: args.format.format };
    Session::run_pipeline("generate", &overrides, Some(args.verbose), |ctx, _| generate(ctx, args))
}

/// Generate what `args` asks for, writing files unless `--dry-run`.
pub fn generate(ctx: &Context, args: &GenerateArgs) -> Result<GenerateReport, Fatal> {
    let mut report = GenerateReport { all: args.all, configs: Vec::new(), args: args.clone(), usage_error: None };
    if args.all {
        let configs = ctx.project.discover().map_err(|e| Fatal::new("generate", e.to_string()))?;
        let modules: Vec<String> = configs.into_iter().map(|c| c.module).collect();
        let results = ctx.generate_many(&modules, &args.config_name.config_name);
        for (module, (result, secs)) in modules.iter().zip(results) {
            match result {
                // Evaluates fine but has no `config` PatchConfig: the reference skips it.
                Err(Failure::NotAConfig { .. }) => continue,
                r => report.configs.push(outcome(module, r, secs, args)),
            }
        }
    } else {
        let module = ctx.project.normalize_module(args.module.as_deref().unwrap_or_default());
        if let Some(dir) = args.output_dir.as_deref().filter(|d| d.is_file()) {
            report.usage_error = Some(format!("-o {}: is a file, not a directory", dir.display()));
            return Ok(report);
        }
        let start = std::time::Instant::now();
        let result = ctx.generate(&module, &args.config_name.config_name, args.output_dir.as_deref());
        report.configs.push(outcome(&module, result, start.elapsed().as_secs_f64(), args));
    }
    Ok(report)
}

fn outcome(module: &str, result: Result<Generated, Failure>, seconds: f64, args: &GenerateArgs) -> ConfigOutcome {
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
    };
    let g = match result {
        Ok(g) => g,
        Err(f) => {
            o.error = Some(f.to_string());
            o.diagnostics.push(f.diagnostic(module));
            o.failure = Some(FailureText::Config(f.to_string()));
            return o;
        }
    };
    o.diagnostics = g.diagnostics.clone();
    o.detail = Some(Detail {
        plan: g.plan.clone(),
        upstream_origin: g.upstream_origin.clone(),
        upstream_lines: g.upstream_lines,
        py_path: g.py_path.clone(),
        diff_path: g.diff_path.clone(),
    });
    let warnings = g.diagnostics.iter().filter(|d| d.severity >= Severity::Warning).count();
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
    if let Err(msg) = write(&g, args.diff, &mut o) {
        o.diagnostics.push(codes::WRITE_ERROR.diagnostic(msg.clone()).config(module));
        o.error = Some(msg.clone());
        o.failure = Some(FailureText::Write(msg));
        o.status = "failed";
        return o;
    }
    o.status = "generated";
    o
}

/// Write the `.py` (and `.diff`), recording each as it is written.
fn write(g: &Generated, diff: bool, o: &mut ConfigOutcome) -> Result<(), String> {
    if g.output_dir.is_file() {
        return Err(format!("{}: output directory is a file\n  help: point -o at a directory", g.output_dir.display()));
    }
    let cannot = |p: &Path, e: io::Error| format!("{}: cannot write: {e}", p.display());
    crate::atomic::write(&g.py_path, &g.py).map_err(|e| cannot(&g.py_path, e))?;
    o.py = Some(g.py_path.clone());
    o.py_lines = Some(crate::pytext::splitlines(&g.py).len());
    if diff {
        crate::atomic::write(&g.diff_path, &g.diff).map_err(|e| cannot(&g.diff_path, e))?;
        o.diff = Some(g.diff_path.clone());
        o.diff_lines = Some(crate::pytext::splitlines(&g.diff).len());
    }
    Ok(())
}

fn print_summary(p: &mut Printer, plan: &PatchPlan) -> io::Result<()> {
    let rule = "=".repeat(70);
    let mut s = format!("\n{rule}\nPATCH CONFIGURATION SUMMARY\n{rule}\n");
    s += &format!("\nSource: {}\n", plan.source_module);
    s += &format!("Target: {}\n", plan.target_file);
    if !plan.description.is_empty() {
        s += &format!("Description: {}\n", plan.description);
    }
    s += &format!("\nPatches ({}):\n", plan.patches.len());
    for patch in &plan.patches {
        s += &format!("  • [{}] {}\n", patch.patch_type.value(), patch.target);
        if let Some(d) = patch.description.as_ref().filter(|d| !d.is_empty()) {
            s += &format!("    └─ {d}\n");
        }
    }
    if !plan.exclude.is_empty() {
        s += &format!("\nExcluded: {}\n", plan.exclude.join(", "));
    }
    if !plan.additional_imports.is_empty() {
        s += &format!("\nAdditional imports: {}\n", plan.additional_imports.len());
    }
    s += &format!("{rule}\n");
    p.out(&s)
}

impl ConfigOutcome {
    /// The diagnostics before the failure (warnings and notes).
    fn findings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| !d.code.starts_with("PGE"))
    }

    /// Plan summary, dry-run description or the ✓ lines; then a write error.
    fn text_files(&self, p: &mut Printer, args: &GenerateArgs) -> io::Result<()> {
        let Some(d) = &self.detail else { return Ok(()) };
        if args.verbose {
            print_summary(p, &d.plan)?;
            p.out(&format!("  Upstream: {}\n", d.upstream_origin.display()))?;
        }
        if self.status == "dry_run" {
            let mut s = format!("\n[DRY RUN] Would generate:\n  Output: {}\n", d.py_path.display());
            if args.diff {
                s += &format!("  Diff:   {}\n", d.diff_path.display());
            }
            s += &format!("  Source lines: ~{}\n  Patches to apply: {}\n", d.upstream_lines, d.plan.patches.len());
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
        for d in o.findings() {
            p.diagnostic(d)?;
        }
        if matches!(o.failure, Some(FailureText::Strict(_))) {
            let msg = p.style.bad("error:");
            return p.err(&format!("{msg} {}: {}\n", o.module, o.error.as_deref().unwrap_or_default()));
        }
        o.text_files(p, &self.args)?;
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
                    p.err(&format!("{fail} {msg}\n"))?;
                    failed.push(&o.module);
                    continue;
                }
                _ => {
                    let ms = p.style.dim(&format!("({:.0} ms)", o.seconds * 1000.0));
                    p.out(&format!("\n{rule}\nGenerating: {} {ms}\n{rule}\n", o.module))?;
                }
            }
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
