//! What `new` did (or would do), and its last phase: the report finished
//! after pruning (the TODOs of what was finally written, the lint of the
//! written configs, the generated files, the MoE needs after pruning) and
//! rendered as text. JSON is the report's serde form.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::companions::{Companions, carried_targets};
use crate::retarget::Retargeted;
use crate::scan::Scan;
use crate::{moe, render, tables, test_rows};

/// A file of the plan.
#[derive(Clone, Debug, Serialize)]
pub struct PlannedFile {
    pub path: PathBuf,
    pub what: String,
    #[serde(skip)]
    pub text: String,
}

/// One backend's config.
#[derive(Clone, Debug, Serialize)]
pub struct BackendPlan {
    pub backend: String,
    pub module: String,
    pub template_config: Option<String>,
    /// Lint errors the template's own config has too (kept reuses).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inherited: Vec<String>,
    #[serde(flatten)]
    pub retargeted: Retargeted,
    #[serde(skip)]
    pub(crate) head: render::ConfigHead,
    #[serde(skip)]
    pub(crate) path: PathBuf,
}

/// Generation of one written config.
#[derive(Clone, Debug, Serialize)]
pub struct GenerationResult {
    pub module: String,
    pub ok: bool,
    pub message: String,
}

/// What `new` did (or would do).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub model: String,
    pub prefix: String,
    pub upstream: String,
    pub category: &'static str,
    pub category_evidence: Vec<String>,
    pub template: Option<String>,
    pub template_reason: String,
    pub backends: Vec<BackendPlan>,
    pub files: Vec<PlannedFile>,
    pub moe_needs: Vec<String>,
    /// The MoE facts behind `moe_needs` (MoE categories only).
    pub moe: Option<moe::MoeNeeds>,
    pub generation: Vec<GenerationResult>,
    pub lint: String,
    pub tables: Vec<tables::Entry>,
    /// Phase 6: the rows written into the project's test tables; phase 7: their commands.
    pub test_rows: Option<test_rows::TestRows>,
    pub next_steps: Vec<String>,
    /// Ported copies with conflicts left to review, each with its config
    /// line (`path:line: target — …`).
    pub review: Vec<String>,
    pub warnings: Vec<String>,
    pub dry_run: bool,
}

/// Finish the report after pruning (`last_lint`: the pruning loop's last
/// lint report).
pub(crate) fn finish(
    report: &mut Report,
    scan: &Scan,
    companions: &Companions,
    last_lint: Option<patchgen_lint::LintReport>,
    cwd: &Path,
    env: &patchgen_core::settings::Env,
) {
    // The TODOs of what was finally written (pruning rounds add, reword
    // and drop them).
    for p in &report.backends {
        for c in &p.retargeted.carried {
            for t in &c.todos {
                report.next_steps.push(format!("{}: {t}", p.module));
            }
        }
    }
    // Ported copies with conflicts: where they are in the written config.
    for p in &report.backends {
        let text = std::fs::read_to_string(&p.path).unwrap_or_default();
        for c in &p.retargeted.carried {
            let Some(copy) = c.copy.as_ref().filter(|copy| copy.conflicts > 0) else { continue };
            let needle = format!("def {}(", copy.name);
            let line = text.lines().position(|l| l.starts_with(&needle)).map_or(0, |i| i + 1);
            report.review.push(format!(
                "{}:{line}: {} — ported from {} with {} conflict(s), each marked `TODO(patchgen new)` with this model's upstream lines",
                scan.rel(&p.path),
                c.target,
                copy.from,
                copy.conflicts
            ));
        }
    }
    // One backend: the pruning loop's last lint is the lint of what was written.
    let single = report.backends.len() == 1 && report.generation.iter().all(|g| g.ok);
    report.lint = match last_lint.filter(|_| single) {
        Some(r) => lint_summary(&r),
        None => lint_written(report, cwd, env),
    };
    for b in &report.backends {
        for ext in ["py", "diff"] {
            let name = format!("patched_modeling_{}_{}.{ext}", scan.model, b.backend);
            let g = scan.model_dir.join("generated").join(name);
            if g.is_file() {
                report.files.push(PlannedFile {
                    path: g,
                    what: format!("generated ({} config)", b.backend),
                    text: String::new(),
                });
            }
        }
    }
    // The experts replacement after pruning.
    if let Some(n) = companions.moe.analyse(scan, carried_targets(&report.backends)) {
        report.moe_needs = n.lines.clone();
        report.moe = Some(n);
    }
}

/// `patchgen lint` over the configs just written: a one-line summary, the
/// findings listed after it.
fn lint_written(report: &Report, cwd: &Path, env: &patchgen_core::settings::Env) -> String {
    let modules: Vec<String> =
        report.backends.iter().zip(&report.generation).filter(|(_, g)| g.ok).map(|(b, _)| b.module.clone()).collect();
    if modules.is_empty() {
        return "not run (nothing generated)".into();
    }
    match crate::prune::lint_modules(modules, cwd, env) {
        Ok(r) => lint_summary(&r),
        Err(e) => format!("not run: {e}"),
    }
}

/// A lint report as one summary line, the findings listed after it.
fn lint_summary(r: &patchgen_lint::LintReport) -> String {
    use patchgen_diagnostics::Severity;
    let errors = r.diagnostics.iter().filter(|d| d.severity == Severity::Error).count() + r.errors.len();
    let mut out =
        format!("{} finding(s), {errors} error(s) ({} rules)", r.diagnostics.len() + r.errors.len(), r.rules.len());
    for d in r.errors.iter().chain(r.diagnostics.iter()) {
        let at = d.location.as_ref().map(|l| format!("{}:{}: ", l.path.display(), l.line)).unwrap_or_default();
        out.push_str(&format!("\n  {at}{} {}", d.code, d.message));
    }
    out
}

/// The report as text.
pub fn render_text(r: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{} ({}) — {}", r.model, r.prefix, r.upstream);
    let _ = writeln!(out, "category: {}", r.category);
    for e in &r.category_evidence {
        let _ = writeln!(out, "  evidence: {e}");
    }
    let _ = writeln!(out, "template: {} ({})", r.template.as_deref().unwrap_or("built-in skeleton"), r.template_reason);
    for b in &r.backends {
        let rt = &b.retargeted;
        let _ = writeln!(
            out,
            "\n{} config {} — {} patches carried, {} dropped",
            b.backend,
            b.module,
            rt.carried.len(),
            rt.dropped.len()
        );
        for c in &rt.carried {
            match &c.copy {
                Some(copy) => {
                    let why = if c.differs.is_some() { "ported" } else { "PG301 fixed" };
                    let _ = writeln!(out, "  copy    {} ← {} ({why})\n          {}", c.target, copy.from, copy.note);
                }
                None => {
                    let _ = writeln!(out, "  reuse   {} ← {}.{}", c.target, c.import_module, c.import_name);
                }
            }
            for n in &c.notes {
                let _ = writeln!(out, "          note: {n}");
            }
            for t in &c.todos {
                let _ = writeln!(out, "          {t}");
            }
        }
        for d in &rt.dropped {
            let _ = writeln!(out, "  dropped {}: {}", d.template_target, d.reason);
        }
        for i in &b.inherited {
            let _ = writeln!(out, "  {i}");
        }
        for o in &rt.upstream_overrides {
            let what = if o.codes.is_empty() {
                "own code".to_string()
            } else {
                format!("upstream verbatim, `# noqa: {}`", o.codes.join(", "))
            };
            let _ = writeln!(out, "  own     {} ({what})\n          {}", o.target, o.todo);
        }
        let _ = writeln!(
            out,
            "  decisions: rotary {}; MLP {}; norm {}",
            rt.decisions.rotary, rt.decisions.mlp, rt.decisions.norm
        );
    }
    if !r.review.is_empty() {
        let _ = writeln!(out, "\nreview:");
        for item in &r.review {
            let _ = writeln!(out, "  {item}");
        }
    }
    for n in &r.moe_needs {
        let _ = writeln!(out, "MoE: {n}");
    }
    let verb = if r.dry_run { "would write" } else { "wrote" };
    let _ = writeln!(out, "\n{verb}:");
    for f in &r.files {
        let _ = writeln!(out, "  {} ({})", f.path.display(), f.what);
    }
    for g in &r.generation {
        let mark = if g.ok { "✓" } else { "✗" };
        let _ = writeln!(out, "{mark} {}: {}", g.module, g.message);
    }
    if !r.lint.is_empty() {
        let _ = writeln!(out, "lint: {}", r.lint);
    }
    if let Some(rows) = &r.test_rows {
        out.push_str(&test_rows::render::text(rows, r.dry_run));
    }
    if !r.tables.is_empty() {
        let _ = writeln!(out, "\nOther test entries to add by hand:");
    }
    for t in &r.tables {
        let _ = writeln!(out, "  {} — {}:\n{}", t.file, t.table, t.text);
    }
    if !r.next_steps.is_empty() {
        let _ = writeln!(out, "\nNext:");
        for s in &r.next_steps {
            let _ = writeln!(out, "  - {s}");
        }
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(rows) = &r.test_rows {
        out.push_str(&test_rows::render::commands(rows));
    }
    out
}
